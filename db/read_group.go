package db

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5/pgconn"
)

// readGroups reads the first statement of concurrent checks together.
// Most checks are of tools their policy allows, answered by one statement
// (the key and the tool) and nothing written. Each statement alone costs Postgres
// more to set up — bind, plan locks, the executor started on five index
// scans, and a round trip — than it costs to run, and costs this instance
// a write and a read on its connection. So a check waits in a queue, and a
// reader takes everything queued and reads it in one statement
// (keyToolGroupSQL), one row per check. A check never joins a statement
// already sent: each is read by a statement that began after the check
// did, so it sees every policy change committed before it arrived (no
// cache: invariant 14). Under light load a group is one check and costs
// what it did alone; at most maxReaders statements are in flight, so the
// others queue while they run.
type readGroups struct {
	mu      sync.Mutex
	queue   []*readEntry
	readers int  // statements in flight
	max     int  // maxReaders
	facts   bool // reads the turn's facts too (keyToolFactsGroupSQL)
	stats   groupStats
}

// groupStats counts a group writer's or reader's statements that
// succeeded and the checks they carried (a group refused and then written
// or read one check at a time counts as those single checks).
type groupStats struct {
	groups, checks atomic.Int64
}

func (s *groupStats) add(checks int) {
	s.groups.Add(1)
	s.checks.Add(int64(checks))
}

// GroupStats is how many group statements this instance has sent, and how
// many checks they carried: their ratio is the mean group size.
type GroupStats struct {
	ReadGroups, Reads   int64 // first statements of checks (readGroups, with and without the facts)
	WriteGroups, Writes int64 // what checks record (writeGroups)
}

// Since is what was counted after then.
func (s GroupStats) Since(then GroupStats) GroupStats {
	return GroupStats{s.ReadGroups - then.ReadGroups, s.Reads - then.Reads, s.WriteGroups - then.WriteGroups, s.Writes - then.Writes}
}

// Plus is s and o counted together, as for several instances.
func (s GroupStats) Plus(o GroupStats) GroupStats {
	return GroupStats{s.ReadGroups + o.ReadGroups, s.Reads + o.Reads, s.WriteGroups + o.WriteGroups, s.Writes + o.Writes}
}

// GroupStats reads the counts so far.
func (d *DB) GroupStats() GroupStats {
	return GroupStats{ReadGroups: d.reads.stats.groups.Load() + d.factReads.stats.groups.Load(),
		Reads:       d.reads.stats.checks.Load() + d.factReads.stats.checks.Load(),
		WriteGroups: d.groups.stats.groups.Load(), Writes: d.groups.stats.checks.Load()}
}

// maxGroupReads bounds the checks one group statement reads.
const maxGroupReads = 128

// maxReaders bounds the group statements in flight at once: one for every
// two CPUs of this instance, and at least one. More keep more of
// Postgres's cores busy; fewer make larger groups. On two CPUs shared with
// Postgres, one reader answered 13,000–14,000 allowed checks a second,
// two 12,600–13,000 and four 8,900–10,100.
func maxReaders() int { return max(1, runtime.NumCPU()/2) }

// awaited is a check in a group writer's or reader's queue.
type awaited interface {
	caller() (context.Context, chan error)
}

// stillAwaited answers every entry of group whose caller went away with
// its caller's error, and returns the others.
func stillAwaited[E awaited](group []E) []E {
	live := group[:0:0]
	for _, e := range group {
		ctx, done := e.caller()
		if err := ctx.Err(); err != nil {
			done <- err
		} else {
			live = append(live, e)
		}
	}
	return live
}

func (e *readEntry) caller() (context.Context, chan error) { return e.ctx, e.done }

// readEntry is one check's first statement.
type readEntry struct {
	ctx  context.Context // the check's; a check gone before its group is read is skipped
	hash []byte
	req  CheckRequest
	dig  string
	row  keyToolRow
	ok   bool // the key is live (a row came back)
	done chan error
}

// keyToolGroupSQL authenticates the keys of many checks by their hashes and
// reads the tool of each (checkToolSQL) in one statement: $1 … $8 are
// arrays in checkToolSQL's order, one element per check, $3 the key's hash;
// one row for each check whose key is live, numbered by ord, with the
// tool's columns NULL for an unknown or retired tool or a call already
// pending. It reads the key's and the tool's columns without the turn's facts, and
// writes the audit line of each call its policy allows (policyAllowLine).
var keyToolGroupSQL = `WITH c AS (SELECT r.ord, r.owner AS c_owner, r.conv AS c_conv, r.turn AS c_turn, r.call AS c_call,
		k.id AS k_id, k.name AS k_name, k.key_prefix AS k_prefix, k.created_at AS k_created, k.last_used_at AS k_used, k.team AS k_team, t.*
	FROM unnest($1::text[], $2::text[], $3::bytea[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
		WITH ORDINALITY AS r(connector, tool, key_hash, owner, conv, turn, call, digest, ord)
	JOIN api_keys k ON k.key_hash = r.key_hash AND k.revoked_at IS NULL
	LEFT JOIN LATERAL (` + replaceEach(checkToolSQL, "$1", "r.connector", "$2", "r.tool", "$3", "k.id", "$4", "r.owner",
	"$5", "r.conv", "$6", "r.turn", "$7", "r.call", "$8", "r.digest") + `) t ON true), ` +
	policyAllowLine("c.k_id", "c.k_name", "c.k_team", "c.c_owner", "c.c_conv", "c.c_turn", "c.c_call") + `
	SELECT ord, k_id, k_name, k_prefix, k_created, k_used, k_team, ` + toolColumns + ` FROM c`

// keyToolFactsGroupSQL is keyToolGroupSQL that also reads each check's
// turn facts (turnFactsTemplate), NULL unless its tool's policy asks a
// person: the statement of the checks of tools known to ask (askingTools).
// Postgres sets up every part of a statement's plan each time it runs it,
// read or not: the facts' part costs a check its policy allows about as
// much again as the rest, so the checks of other tools are read without
// it (keyToolGroupSQL). Each row has keyToolGroupSQL's columns, then the
// facts. The checks' rows are q: the facts' statement names its own
// approvals r.
var keyToolFactsGroupSQL = `WITH c AS (SELECT q.ord, q.owner AS c_owner, q.conv AS c_conv, q.turn AS c_turn, q.call AS c_call,
		k.id AS k_id, k.name AS k_name, k.key_prefix AS k_prefix, k.created_at AS k_created, k.last_used_at AS k_used, k.team AS k_team, t.*,
		f.rejections, f.conversation_grant, f.always_grant, f.scoped_grants, f.same_call
	FROM unnest($1::text[], $2::text[], $3::bytea[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
		WITH ORDINALITY AS q(connector, tool, key_hash, owner, conv, turn, call, digest, ord)
	JOIN api_keys k ON k.key_hash = q.key_hash AND k.revoked_at IS NULL
	LEFT JOIN LATERAL (` + replaceEach(checkToolSQL, "$1", "q.connector", "$2", "q.tool", "$3", "k.id", "$4", "q.owner",
	"$5", "q.conv", "$6", "q.turn", "$7", "q.call", "$8", "q.digest") + `) t ON true
	LEFT JOIN LATERAL (` + replaceEach(turnFactsTemplate, "{user}", "q.owner", "{conv}", "q.conv", "{turn}", "q.turn", "{digest}", "q.digest",
	"{tool}", "t.id", "{version}", "t.policy_version", "{standing}", "t.standing_approval", "{matchable}", "t.matchable", "{key}", "k.id",
	"{call}", "q.call") + ` WHERE t.mode = 'require_approval' OFFSET 0) f ON true), ` +
	policyAllowLine("c.k_id", "c.k_name", "c.k_team", "c.c_owner", "c.c_conv", "c.c_turn", "c.c_call") + `
	SELECT ord, k_id, k_name, k_prefix, k_created, k_used, k_team, ` + toolColumns + `,
		rejections, conversation_grant, always_grant, scoped_grants, same_call FROM c`

// replaceEach replaces, in one pass, each old of the pairs with its new; it
// panics if an old is missing or a placeholder ($) is left over.
func replaceEach(s string, pairs ...string) string {
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			panic("db: " + pairs[i] + " not in the statement")
		}
	}
	out := strings.NewReplacer(pairs...).Replace(s)
	if strings.Contains(out, "$") {
		panic("db: a placeholder is left in the statement")
	}
	return out
}

// readGrouped reads the row of g's statement (keyToolGroupSQL, or
// keyToolFactsGroupSQL) for one check with whatever else is queued: ok is
// false for a key that is not live.
func (d *DB) readGrouped(ctx context.Context, g *readGroups, hash []byte, req CheckRequest, args approval.Arguments) (keyToolRow, bool, error) {
	e := &readEntry{ctx: ctx, hash: hash, req: req, dig: args.Digest, done: make(chan error, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, e)
	start := g.readers < max(g.max, 1)
	if start {
		g.readers++
	}
	g.mu.Unlock()
	if start {
		// The reader runs apart from this request's context: the others in
		// its group must not fail because this caller went away.
		go d.readQueued(g)
	}
	select {
	case err := <-e.done:
		return e.row, e.ok, err
	case <-ctx.Done():
		return keyToolRow{}, false, ctx.Err()
	}
}

// readQueued reads g's groups until its queue is empty.
func (d *DB) readQueued(g *readGroups) {
	for {
		g.mu.Lock()
		// At most maxGroupReads at once: the rest wait for the next
		// statement, so that a slow moment costs one statement's checks
		// their deadline, not everything queued meanwhile.
		group := g.queue[:min(len(g.queue), maxGroupReads)]
		g.queue = g.queue[len(group):]
		if len(g.queue) == 0 {
			g.queue = nil
		}
		if len(group) == 0 {
			g.readers--
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		live := stillAwaited(group)
		if len(live) == 0 {
			continue
		}
		err := d.readGroup(g, live)
		var pgErr *pgconn.PgError
		if err != nil && len(live) > 1 && errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "22") {
			// A value Postgres refused fails the whole statement: each
			// check is read alone, so that only its own sender's fails.
			for _, e := range stillAwaited(live) {
				e.done <- d.readGroup(g, []*readEntry{e})
			}
			continue
		}
		for _, e := range live {
			e.done <- err
		}
	}
}

// readGroup reads group's rows in one statement of g; an entry's row and
// ok are set only once the whole statement has succeeded.
func (d *DB) readGroup(g *readGroups, group []*readEntry) error {
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	n := len(group)
	hashes := make([][]byte, n)
	cols := make([][]string, 7)
	for i := range cols {
		cols[i] = make([]string, n)
	}
	for i, e := range group {
		hashes[i] = e.hash
		for j, v := range [...]string{e.req.Connector, e.req.Tool, e.req.User, e.req.ConversationID, e.req.TurnID, e.req.CallID, e.dig} {
			cols[j][i] = v
		}
	}
	sql := keyToolGroupSQL
	if g.facts {
		sql = keyToolFactsGroupSQL
	}
	rows, err := d.Pool.Query(ctx, sql, cols[0], cols[1], hashes, cols[2], cols[3], cols[4], cols[5], cols[6])
	if err != nil {
		return err
	}
	defer rows.Close()
	got := make([]*keyToolRow, n)
	var ord int64
	for rows.Next() {
		var r keyToolRow
		dest := r.keyToolDest()
		if g.facts {
			dest = r.dest()
		}
		if err := rows.Scan(append([]any{&ord}, dest...)...); err != nil {
			return err
		}
		if ord < 1 || ord > int64(n) || got[ord-1] != nil {
			return errors.New("db: a group read answered a check it was not asked")
		}
		got[ord-1] = &r
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for i, r := range got {
		group[i].row, group[i].ok = keyToolRow{}, r != nil
		if r != nil {
			group[i].row = *r
		}
	}
	g.stats.add(n)
	return nil
}

// keyToolRow is a row of keyToolGroupSQL or keyToolFactsGroupSQL: the key, the
// tool (NULL columns when there is none) and the turn's facts (NULL when
// not read).
type keyToolRow struct {
	key                         APIKey
	tool                        Tool
	id                          *int64
	connector, name, display    *string
	description, mode, cond     *string
	connDisplay, connKind       *string
	readOnly, destructive, idem *bool
	openWorld, standing, cdel   *bool
	shell                       *string
	matchable                   *bool
	proof, proofCond            *string // passkey step-up (issue 33)
	deciders, decidersCond      *string
	quorum                      *int32
	version                     *int32
	rejections                  *int64
	sameCall                    *bool
	facts                       turnFacts
}

// keyToolDest is where the key's and the tool's columns are scanned, in
// the order of keyToolGroupSQL's row after its ord.
func (r *keyToolRow) keyToolDest() []any {
	return []any{&r.key.ID, &r.key.Name, &r.key.Prefix, &r.key.CreatedAt, &r.key.LastUsedAt, &r.key.Team, &r.id, &r.connector, &r.name,
		&r.display, &r.description, &r.readOnly, &r.destructive, &r.idem, &r.openWorld, &r.mode, &r.standing, &r.cond,
		&r.version, &r.tool.MaxGrantSeconds, &r.tool.RetiredAt, &r.connDisplay, &r.connKind, &r.cdel, &r.shell, &r.matchable,
		&r.proof, &r.proofCond, &r.deciders, &r.tool.DeciderTeam, &r.quorum, &r.decidersCond}
}

// dest is where a row of keyToolFactsGroupSQL is scanned after its ord:
// the key, the tool, then the turn's facts.
func (r *keyToolRow) dest() []any {
	return append(r.keyToolDest(), &r.rejections, &r.facts.ConversationGrant, &r.facts.AlwaysGrant, &r.facts.Scoped, &r.sameCall)
}

// result is what the row says: found is false when there is no tool to
// check, and facts is nil when they were not read.
func (r *keyToolRow) result() (tool Tool, found bool, facts *turnFacts) {
	if r.id == nil {
		return Tool{}, false, nil
	}
	if r.rejections != nil && r.sameCall != nil {
		f := r.facts
		f.Rejections, f.SameCall = int(*r.rejections), *r.sameCall
		facts = &f
	}
	tool = r.tool
	tool.ID, tool.Connector, tool.Name, tool.DisplayName, tool.Description = *r.id, *r.connector, *r.name, *r.display, *r.description
	tool.ReadOnlyHint, tool.DestructiveHint, tool.IdempotentHint, tool.OpenWorldHint = r.readOnly, r.destructive, r.idem, r.openWorld
	tool.Mode, tool.StandingApproval, tool.Condition, tool.PolicyVersion = *r.mode, *r.standing, *r.cond, int(*r.version)
	tool.ConnectorDisplay, tool.ConnectorKind, tool.ConnectorDeleted = *r.connDisplay, *r.connKind, *r.cdel
	tool.ShellArgument, tool.Matchable = *r.shell, *r.matchable
	tool.Proof, tool.ProofCondition = *r.proof, *r.proofCond
	tool.Deciders, tool.Quorum, tool.DecidersCondition = *r.deciders, int(*r.quorum), *r.decidersCond
	return tool, true, facts
}
