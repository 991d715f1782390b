package db_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/jackc/pgx/v5"
)

// TestPendingDecidersMatchPredicate compares the maintained "who may
// decide" rows (pending_deciders) with the one predicate on 1,000 random
// organisations (100 outside CI) — people, teams (one a key's team), items under every
// approver rule with quorums, backup teams, escalations and delegations —
// and again after each of several rounds of changes: memberships added
// and removed, a team deleted, delegations started, ended and coming due,
// items escalated, decided and created. Each round checks that the rows
// are exactly the pairs countersign_may_decide_self accepts, that the
// inbox's narrowing by them keeps exactly what countersign_may_decide
// accepts for every person of every organisation, and that PendingFor and
// PendingCountFor agree with the predicate for a sample of viewers.
func TestPendingDecidersMatchPredicate(t *testing.T) {
	store, _ := testenv.OpenDB(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 44))
	tmpl := templateItem(t, store)
	began := time.Now()
	// 1,000 organisations in CI (COUNTERSIGN_SOAK=1), where it takes
	// minutes on a busy machine; 100 elsewhere.
	orgs := 100
	if os.Getenv("COUNTERSIGN_SOAK") == "1" {
		orgs = 1000
	}
	w := &world{r: r, people: make([][]string, orgs), teams: make([][]string, orgs)}
	for o := range orgs {
		for i := range 3 + r.IntN(3) {
			w.people[o] = append(w.people[o], fmt.Sprintf("o%du%d", o, i))
		}
		for j := range 2 + r.IntN(2) {
			w.teams[o] = append(w.teams[o], fmt.Sprintf("o%dt%d", o, j))
		}
	}
	b := &pgx.Batch{}
	for o := range orgs {
		for _, p := range w.people[o] {
			b.Queue(`INSERT INTO users (issuer, subject, name) VALUES ('rand', $1, $2)`, p, fmt.Sprintf("o%d", o))
		}
		for _, tm := range w.teams[o] {
			b.Queue(`INSERT INTO teams (name, source) VALUES ($1, 'admin')`, tm)
			for _, p := range w.people[o] {
				if r.IntN(2) == 0 {
					b.Queue(`INSERT INTO team_members (team, subject, source) VALUES ($1, $2, $3)`, tm, p, []string{"admin", "oidc"}[r.IntN(2)])
				}
			}
		}
		for range 3 + r.IntN(4) {
			w.queueItem(b, tmpl, o)
		}
		w.queueDelegation(b, o)
	}
	send(t, store, b)
	t.Logf("set up in %s", time.Since(began).Round(time.Millisecond))
	w.compare(t, store, "start")
	for round := range 3 {
		b := &pgx.Batch{}
		for range orgs / 2 {
			o := r.IntN(orgs)
			switch r.IntN(9) {
			case 0, 1:
				b.Queue(`INSERT INTO team_members (team, subject, source) SELECT $1, $2, 'admin' WHERE EXISTS (SELECT 1 FROM teams WHERE name = $1)
					ON CONFLICT DO NOTHING`, w.team(o), w.person(o))
			case 2:
				b.Queue(`DELETE FROM team_members WHERE team = $1 AND subject = $2`, w.team(o), w.person(o))
			case 3:
				w.queueDelegation(b, o)
			case 4:
				b.Queue(`UPDATE delegations SET ended_at = now(), ended_by = 'rand' WHERE ended_at IS NULL AND person_subject = $1`, w.person(o))
			case 5:
				// A delegation set to start later comes due.
				b.Queue(`UPDATE delegations SET starts_at = now() - interval '1 second' WHERE ended_at IS NULL AND person_subject = $1`, w.person(o))
			case 6:
				b.Queue(`UPDATE approvals SET escalated_at = now() WHERE id = (SELECT id FROM approvals
					WHERE conversation_id = $1 AND status = 'pending' AND escalate_to <> '' AND escalated_at IS NULL LIMIT 1)`, fmt.Sprintf("o%d", o))
			case 7:
				b.Queue(`UPDATE approvals SET status = $2, decided_at = now() WHERE id = (SELECT id FROM approvals
					WHERE conversation_id = $1 AND status = 'pending' ORDER BY random() LIMIT 1)`, fmt.Sprintf("o%d", o),
					[]string{"approved", "rejected", "expired", "cancelled"}[r.IntN(4)])
			case 8:
				w.queueItem(b, tmpl, o)
			}
		}
		if round == 1 {
			b.Queue(`DELETE FROM teams WHERE name = $1`, w.team(r.IntN(orgs)))
		}
		send(t, store, b)
		w.compare(t, store, fmt.Sprintf("round %d", round))
	}
}

// world is the random organisations: org o's people and teams.
type world struct {
	r      *rand.Rand
	people [][]string
	teams  [][]string
	items  int
}

func (w *world) person(o int) string { return w.people[o][w.r.IntN(len(w.people[o]))] }
func (w *world) team(o int) string   { return w.teams[o][w.r.IntN(len(w.teams[o]))] }

// queueItem queues a pending item of org o (its conversation id is o)
// under a random rule, copied from tmpl; its backup team, and whether it
// escalated, are set after the insert (the insert takes them from the
// tool).
func (w *world) queueItem(b *pgx.Batch, tmpl string, o int) {
	w.items++
	owner, ownerTeam := w.person(o), (*string)(nil)
	if w.r.IntN(4) == 0 {
		tm := w.team(o)
		owner, ownerTeam = "", &tm
	}
	deciders := []string{"owner", "team", "owner_or_team", "quorum"}[w.r.IntN(4)]
	var deciderTeam *string
	if deciders != "owner" || w.r.IntN(3) == 0 {
		tm := w.team(o)
		deciderTeam = &tm
	}
	quorum := 1
	if deciders == "quorum" {
		quorum = 1 + w.r.IntN(3)
	}
	escalateTo, escalated := "", false
	if w.r.IntN(2) == 0 {
		escalateTo, escalated = w.team(o), w.r.IntN(2) == 0
	}
	id := fmt.Sprintf("%08x-0000-4000-8000-%012x", w.r.Uint32(), w.items)
	b.Queue(`INSERT INTO approvals (id, owner_subject, owner_team, deciders, decider_team, quorum, api_key_id, conversation_id,
			turn_id, call_id, tool_id, connector, tool, arguments_digest, arguments_size, preview, agent_reason, available_decisions,
			policy_version, expires_at)
		SELECT $8::uuid, $2, $3, $4, $5, $6, api_key_id, $7, turn_id, 'rand-' || $8, tool_id, connector, tool, arguments_digest,
			arguments_size, preview, agent_reason, available_decisions, policy_version, now() + interval '1 hour'
		FROM approvals WHERE id = $1`, tmpl, owner, ownerTeam, deciders, deciderTeam, quorum, fmt.Sprintf("o%d", o), id)
	if escalateTo != "" {
		b.Queue(`UPDATE approvals SET escalate_to = $2, escalated_at = CASE WHEN $3 THEN now() END WHERE id = $1`, id, escalateTo, escalated)
	}
}

// queueDelegation queues a delegation between two people of org o: the
// person's open one ends first; it holds now, or starts later.
func (w *world) queueDelegation(b *pgx.Batch, o int) {
	person, delegate := w.person(o), w.person(o)
	if person == delegate {
		return
	}
	starts := "now() - interval '1 minute'"
	if w.r.IntN(3) == 0 {
		starts = "now() + interval '1 hour'"
	}
	b.Queue(`UPDATE delegations SET ended_at = now(), ended_by = 'rand' WHERE ended_at IS NULL AND person_subject = $1`, person)
	b.Queue(`INSERT INTO delegations (person_id, delegate_id, person_subject, delegate_subject, starts_at, ends_at)
		SELECT p.id, d.id, p.subject, d.subject, `+starts+`, now() + interval '2 hours'
		FROM users p, users d WHERE p.subject = $1 AND d.subject = $2`, person, delegate)
}

// compare fails unless the rows are the predicate's, and the inbox's reads
// agree with it.
func (w *world) compare(t *testing.T, store *db.DB, when string) {
	t.Helper()
	ctx := context.Background()
	began := time.Now()
	defer func() { t.Logf("%s: compared in %s", when, time.Since(began).Round(time.Millisecond)) }()
	// Org o's people are the users named "o<o>", as its items' conversation.
	const pairs = `FROM approvals a JOIN users u ON u.issuer = 'rand' AND u.name = a.conversation_id
		WHERE a.call_id LIKE 'rand-%'`
	var extra, missing, items, wrong, may int
	err := store.Pool.QueryRow(ctx, `WITH want AS (SELECT a.id, u.subject `+pairs+` AND a.status = 'pending'
			AND countersign_may_decide_self(a, u.subject)),
		have AS (SELECT pd.approval_id AS id, pd.subject FROM pending_deciders pd JOIN approvals a ON a.id = pd.approval_id
			WHERE a.call_id LIKE 'rand-%')
		SELECT (SELECT count(*) FROM (SELECT * FROM have EXCEPT SELECT * FROM want) x),
			(SELECT count(*) FROM (SELECT * FROM want EXCEPT SELECT * FROM have) x),
			(SELECT count(*) FROM approvals a WHERE a.call_id LIKE 'rand-%' AND a.status = 'pending')`).Scan(&extra, &missing, &items)
	if err != nil {
		t.Fatal(err)
	}
	err = store.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE m <> (c AND m)), count(*) FILTER (WHERE m)
		FROM (SELECT countersign_may_decide(a, u.subject) AS m,
			a.id IN (SELECT pd.approval_id FROM pending_deciders pd
				WHERE pd.subject = ANY(ARRAY(SELECT countersign_viewer_people(u.subject)))) AS c `+pairs+` AND a.status = 'pending') x`).Scan(&wrong, &may)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d pending items, %d pairs may decide; rows not the predicate's %d, pairs missing %d, reads differing %d",
		when, items, may, extra, missing, wrong)
	if extra != 0 || missing != 0 || wrong != 0 || may == 0 {
		t.Fatalf("%s: the maintained rows differ from the predicate", when)
	}
	for range 20 {
		o := w.r.IntN(len(w.people))
		viewer := w.person(o)
		var want []string
		rows, err := store.Pool.Query(ctx, `SELECT a.id::text FROM approvals a WHERE a.status = 'pending' AND a.expires_at > now()
			AND countersign_may_decide(a, $1) ORDER BY 1`, viewer)
		if err == nil {
			want, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		if err != nil {
			t.Fatal(err)
		}
		list, err := store.PendingFor(ctx, viewer)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, a := range list {
			got = append(got, a.ID)
		}
		slices.Sort(got)
		n, err := store.PendingCountFor(ctx, viewer)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) || n != len(want) {
			t.Fatalf("%s: viewer %s: PendingFor %v, count %d; the predicate %v", when, viewer, got, n, want)
		}
	}
}

// templateItem creates one pending item through a check and returns its
// id: the random items copy its tool, key and preview.
func templateItem(t *testing.T, store *db.DB) string {
	t.Helper()
	ctx := context.Background()
	if err := store.SyncConnector(ctx, approval.SystemActor, db.ConnectorSync{Name: "mail", DisplayName: "Mail", Kind: "connector",
		Tools: []db.ToolSync{{Name: "send", DisplayName: "Send"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SignIn(ctx, db.User{Issuer: "https://idp.example", Subject: "template", Name: "Template"}); err != nil {
		t.Fatal(err)
	}
	raw, _, err := store.CreateAPIKey(ctx, "runtime", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := store.CheckWithAPIKey(ctx, raw, db.CheckRequest{CallID: "c0", User: "template", ConversationID: "conv", TurnID: "t",
		Connector: "mail", Tool: "send", Arguments: `{"to":"a@example.com"}`}, db.CheckOptions{Timeout: time.Hour, DeniedThreshold: 2})
	if err != nil || res.Approval == nil {
		t.Fatal(res.Outcome, err)
	}
	return res.Approval.ID
}

// send sends b and fails t on its first error.
func send(t *testing.T, store *db.DB, b *pgx.Batch) {
	t.Helper()
	if err := store.Pool.SendBatch(context.Background(), b).Close(); err != nil {
		t.Fatal(err)
	}
}
