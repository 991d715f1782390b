package db

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// ActivityFilter narrows the Activity page. Every field is optional.
type ActivityFilter struct {
	Person  string // an admin's choice of one person (their subject); ignored for anyone else
	Agent   string // the API key's name
	Tool    string // the tool's name, whatever its connector
	Outcome string // one of approval.ActivityOutcomes
	Grant   int64  // only the calls this standing grant allowed
	Before  int64  // keyset: lines below this id (older)
	Limit   int
}

// ActivityCall is one call on the Activity page: the audit line that ended
// it, with what names what decided it — the grant, the playbook, the
// reviewer's reason. It carries no argument contents: only what the audit
// line keeps.
type ActivityCall struct {
	ID                int64          `db:"id"`
	At                time.Time      `db:"at"`
	Action            string         `db:"action"`
	ActorKind         string         `db:"actor_kind"`
	ActorName         string         `db:"actor_name"`
	Agent             string         `db:"agent"` // the key whose agent made the call
	Connector         string         `db:"connector"`
	Tool              string         `db:"tool"`
	ToolDisplay       string         `db:"tool_display"`
	ConversationID    string         `db:"conversation_id"`
	ConversationTitle string         `db:"conversation_title"`
	PlaybookID        string         `db:"playbook_id"`
	PlaybookName      string         `db:"playbook_name"`
	RunID             string         `db:"run_id"`
	ApprovalID        string         `db:"approval_id"`
	OwnerSubject      string         `db:"owner_subject"`
	OwnerName         string         `db:"owner_name"`
	Detail            map[string]any `db:"detail"`
	RejectReason      string         `db:"reject_reason"`
	// The standing grant that allowed the call, for a grant's line.
	GrantID           *int64     `db:"grant_id"`
	GrantScopeWords   string     `db:"grant_scope_words"`
	GrantScopeData    []byte     `db:"grant_scope_data"`
	GrantConversation *string    `db:"grant_conversation"`
	GrantExpiresAt    *time.Time `db:"grant_expires_at"`
	GrantRevoked      bool       `db:"grant_revoked"`
	GrantOwner        string     `db:"grant_owner"`
	// QuorumApprovers names, on the line that met a quorum, every approval
	// that counted (as decided_by does), in the order given.
	QuorumApprovers *string `db:"quorum_approvers"`
}

// Outcome is how the call ended (approval.ActivityOutcomes).
func (c ActivityCall) Outcome() string { return approval.ActivityOutcomeOf(c.Action) }

// End is what decided the call, as viewer reads it (approval.CallEnd).
func (c ActivityCall) End(viewer User) approval.CallEnd {
	e := approval.CallEnd{Action: c.Action, GrantScope: approval.CoveringWords(c.GrantScopeData, c.GrantScopeWords), GrantConversation: c.GrantConversation != nil,
		Playbook: c.PlaybookName, RunID: c.RunID, Reviewer: c.ActorName, Reason: c.RejectReason}
	if c.QuorumApprovers != nil && *c.QuorumApprovers != "" {
		e.Reviewer = *c.QuorumApprovers
	}
	if c.OwnerSubject != viewer.Subject {
		e.Owner = c.OwnerName
	}
	e.Rule, _ = c.Detail["rule"].(string)
	e.Condition, _ = c.Detail["condition"].(string)
	if e.Playbook == "" {
		e.Playbook = c.PlaybookID
	}
	return e
}

// Revocable says whether viewer may revoke, from this row, the standing
// grant that allowed the call: only its owner, and only while it stands.
func (c ActivityCall) Revocable(viewer User) bool {
	return c.GrantID != nil && !c.GrantRevoked && c.GrantOwner == viewer.Subject
}

// ActivityPage is one page of calls, newest first.
type ActivityPage struct {
	Calls    []ActivityCall
	HasOlder bool
	OldestID int64
}

// activityScope is the one rule of whose calls a viewer sees on the
// Activity page, and every read of it goes through here: a member sees the
// calls their own agents made (the conversation's owner is the viewer) and
// those of their teams' keys (lines with no owner, by a key of a team the
// viewer is in); an admin sees everyone's (those with no owner too), or one
// person's when person is set. The condition is over audit_events as e,
// its argument numbered n.
// teamKeys says whether the viewer's teams have keys at all: without them
// the member's condition is the owner's alone, which the owner index
// answers.
func activityScope(viewer User, person string, n int, teamKeys bool) (string, any) {
	switch {
	case viewer.IsAdmin && person == "":
		// Calls with no owner too: a team key's, or a refusal recorded
		// before owners were.
		return "true", nil
	case viewer.IsAdmin:
		return "e.owner_subject = $" + strconv.Itoa(n), person
	}
	p := "$" + strconv.Itoa(n)
	if !teamKeys {
		return "e.owner_subject = " + p, viewer.Subject
	}
	// By the key's id, never its name: two teams' keys may share a name,
	// and a new key may take a revoked key's name.
	return "(e.owner_subject = " + p + " OR (e.owner_subject = '' AND EXISTS (SELECT 1 FROM api_keys k JOIN team_members m ON m.team = k.team" +
		" WHERE m.subject = " + p + " AND k.id = " + activityKey + ")))", viewer.Subject
}

// activityKey is the id of the key whose agent made the call of line e: the
// id the line records (migration 00031), else the one it names — its actor,
// or its item's key (audit_event_key) — for a line written without it.
const activityKey = `COALESCE(e.api_key_id, audit_event_key(e))`

// activityAgent is the name of the agent (its key) that made the call of
// line e: the name the line recorded, else its key's name (a decision
// written before lines named the key).
const activityAgent = `COALESCE(NULLIF(CASE WHEN e.actor_kind = '` + approval.ActorAPIKey + `' THEN e.actor_name ELSE e.detail->>'agent_key' END, ''),
	(SELECT k.name FROM api_keys k WHERE k.id = ` + activityKey + `), '')`

// hasTeamKeys reports whether a key belongs to one of a member's teams.
func (d *DB) hasTeamKeys(ctx context.Context, viewer User) (bool, error) {
	if viewer.IsAdmin {
		return false, nil
	}
	var ok bool
	err := d.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM api_keys k JOIN team_members m ON m.team = k.team
		WHERE m.subject = $1)`, viewer.Subject).Scan(&ok)
	return ok, err
}

const activitySelect = `SELECT e.id, e.at, e.action, e.actor_kind, e.actor_name,
	` + activityAgent + ` AS agent,
	e.connector, e.tool, COALESCE(t.display_name, e.tool) AS tool_display, e.conversation_id,
	COALESCE(NULLIF(a.conversation_title, ''), ct.title, '') AS conversation_title, e.playbook_id, COALESCE(p.name, '') AS playbook_name, e.run_id,
	e.approval_id, e.owner_subject, COALESCE(u.shown, e.owner_subject) AS owner_name, e.detail,
	COALESCE(a.reject_reason, '') AS reject_reason, g.id AS grant_id, COALESCE(g.scope_words, '') AS grant_scope_words, g.scope AS grant_scope_data,
	g.conversation_id AS grant_conversation, g.expires_at AS grant_expires_at, g.revoked_at IS NOT NULL AS grant_revoked,
	COALESCE(g.user_subject, '') AS grant_owner,
	CASE WHEN e.detail->>'quorum_met' = 'true' THEN (SELECT string_agg(COALESCE(NULLIF(qu.name, ''), NULLIF(qu.email, ''), qu.subject), ', ' ORDER BY v.at)
		FROM approval_votes v JOIN users qu ON qu.id = v.reviewer_id WHERE v.approval = a.id AND ` + countedApprovalSQL + `) END AS quorum_approvers
	FROM audit_events e
	LEFT JOIN tools t ON t.connector = e.connector AND t.name = e.tool
	LEFT JOIN playbooks p ON e.playbook_id <> '' AND p.id = e.playbook_id
	LEFT JOIN approvals a ON a.id = NULLIF(e.approval_id, '')::uuid
	LEFT JOIN standing_grants g ON e.action = ANY($1) AND g.id = (e.detail->>'grant_id')::bigint
	LEFT JOIN LATERAL (SELECT x.conversation_title AS title FROM approvals x
		WHERE COALESCE(a.conversation_title, '') = '' AND e.conversation_id <> '' AND x.owner_subject = e.owner_subject
		  AND x.conversation_id = e.conversation_id AND x.conversation_title <> '' LIMIT 1) ct ON true
	LEFT JOIN LATERAL (SELECT COALESCE(NULLIF(name, ''), NULLIF(email, ''), subject) AS shown FROM users
		WHERE subject = e.owner_subject ORDER BY last_seen_at DESC LIMIT 1) u ON true`

// ListActivity returns one page of the calls viewer may see (activityScope)
// matching f, newest first, paged by keyset on the audit line's id.
func (d *DB) ListActivity(ctx context.Context, viewer User, f ActivityFilter) (ActivityPage, error) {
	if f.Limit <= 0 || f.Limit > 200 {
		f.Limit = 50
	}
	actions := approval.ActivityActions(f.Outcome)
	if f.Grant != 0 {
		actions = approval.GrantActions
		if f.Outcome != "" && f.Outcome != approval.OutcomeAllowed {
			actions = nil
		}
	}
	if len(actions) == 0 {
		return ActivityPage{}, nil // an outcome no call has
	}
	args := []any{approval.GrantActions, actions}
	// A quorum's approvals before the one that met it are votes, not the
	// call's end: the call still waits, and Activity lists it as waiting.
	conds := []string{"e.action = ANY($2)", `NOT (e.action = '` + approval.ActionApproved + `' AND e.detail->>'quorum' IS NOT NULL
		AND COALESCE(e.detail->>'quorum_met', '') <> 'true')`}
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	teamKeys, err := d.hasTeamKeys(ctx, viewer)
	if err != nil {
		return ActivityPage{}, translate("activity", err)
	}
	scope, who := activityScope(viewer, f.Person, len(args)+1, teamKeys)
	if who != nil {
		args = append(args, who)
	}
	conds = append(conds, scope)
	if f.Agent != "" {
		add(activityAgent+" = ?", f.Agent)
	}
	if f.Tool != "" {
		add("e.tool = ?", f.Tool)
	}
	if f.Grant != 0 {
		add("e.detail->>'grant_id' = ?", strconv.FormatInt(f.Grant, 10))
	}
	if f.Before > 0 {
		add("e.id < ?", f.Before)
	}
	args = append(args, f.Limit+1)
	rows, err := d.Pool.Query(ctx, activitySelect+` WHERE `+strings.Join(conds, " AND ")+
		` ORDER BY e.id DESC LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return ActivityPage{}, translate("list activity", err)
	}
	calls, err := pgx.CollectRows(rows, pgx.RowToStructByName[ActivityCall])
	if err != nil {
		return ActivityPage{}, translate("list activity", err)
	}
	p := ActivityPage{Calls: calls}
	if len(calls) > f.Limit {
		p.Calls, p.HasOlder = calls[:f.Limit], true
	}
	if len(p.Calls) > 0 {
		p.OldestID = p.Calls[len(p.Calls)-1].ID
	}
	return p, nil
}

// ActivityPerson is a person an admin can narrow the Activity page to.
type ActivityPerson struct {
	Subject string `db:"subject"`
	Name    string `db:"name"`
}

// ActivityPeople lists everyone who has signed in, by name, for an
// admin's filter.
func (d *DB) ActivityPeople(ctx context.Context) ([]ActivityPerson, error) {
	rows, err := d.Pool.Query(ctx, `SELECT DISTINCT ON (subject) subject,
		COALESCE(NULLIF(name, ''), NULLIF(email, ''), subject) AS name FROM users ORDER BY subject, last_seen_at DESC`)
	if err != nil {
		return nil, translate("activity people", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[ActivityPerson])
	return list, translate("activity people", err)
}

// ActivityAgents lists the agents (API key names) of the calls viewer may
// see (activityScope), from their most recent calls, for the Activity
// page's agent filter: a member is not shown the names of keys that never
// made a call of theirs.
func (d *DB) ActivityAgents(ctx context.Context, viewer User) ([]string, error) {
	teamKeys, err := d.hasTeamKeys(ctx, viewer)
	if err != nil {
		return nil, translate("activity agents", err)
	}
	scope, who := activityScope(viewer, "", 2, teamKeys)
	args := []any{approval.ActivityActions("")}
	if who != nil {
		args = append(args, who)
	}
	rows, err := d.Pool.Query(ctx, `SELECT DISTINCT agent FROM (SELECT `+activityAgent+` AS agent
		FROM audit_events e WHERE e.action = ANY($1) AND `+scope+` ORDER BY e.id DESC LIMIT 2000) a
		WHERE agent <> '' ORDER BY agent`, args...)
	if err != nil {
		return nil, translate("activity agents", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return list, translate("activity agents", err)
}
