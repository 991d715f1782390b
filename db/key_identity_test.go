package db_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/migrations"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

// teamCall is a team key's call of payments.deploy, decided by decider:
// rejected with reason (approved when reason is "").
func (f *orgFixture) teamCall(t *testing.T, key db.APIKey, title string, decider db.User, reason string) db.Approval {
	t.Helper()
	f.n++
	res, err := f.store.Check(context.Background(), key, db.CheckRequest{CallID: fmt.Sprint("call-", f.n),
		ConversationID: "conv-" + title, ConversationTitle: title, TurnID: "turn", Connector: "payments", Tool: "deploy",
		Arguments: fmt.Sprintf(`{"n": %d}`, f.n)}, orgCheck)
	if err != nil || res.Approval == nil {
		t.Fatalf("team key's call: %+v %v", res.Outcome, err)
	}
	d := approval.Approve
	if reason != "" {
		d = approval.Reject
	}
	if _, err := f.store.Decide(context.Background(), res.Approval.ID, decider, d, reason); err != nil {
		t.Fatal(err)
	}
	return *res.Approval
}

// activityText is everything a viewer's Activity page holds that names a
// call: its item, agent, conversation title and reason.
func activityText(t *testing.T, store *db.DB, viewer db.User, flt db.ActivityFilter) string {
	t.Helper()
	p, err := store.ListActivity(context.Background(), viewer, flt)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range p.Calls {
		fmt.Fprintf(&b, "[%s %s %s %q %q]", c.ApprovalID, c.Action, c.Agent, c.ConversationTitle, c.RejectReason)
	}
	return b.String()
}

// Two teams' service keys may share a name (names are unique per owner):
// a platform member's Activity shows the platform key's calls and never
// the finance key's — not its items, titles or reviewer's reasons — since
// Activity joins a line to its key by the key's id.
func TestActivityTeamKeysSameName(t *testing.T) {
	ctx := context.Background()
	f := newOrgFixture(t)
	_, finance, err := f.store.CreateAPIKeyWith(ctx, "ci-bot", nil, db.APIKeyOptions{Team: "finance"})
	if err != nil {
		t.Fatal(err)
	}
	_, platform, err := f.store.CreateAPIKeyWith(ctx, "ci-bot", nil, db.APIKeyOptions{Team: "platform"})
	if err != nil {
		t.Fatalf("a second team's key of the same name: %v", err)
	}
	secret := f.teamCall(t, finance, "Q3 payroll run", f.finn, "finance-only reason")
	mine := f.teamCall(t, platform, "nightly deploy", f.sam, "")

	got := activityText(t, f.store, f.sam, db.ActivityFilter{})
	if strings.Contains(got, secret.ID) || strings.Contains(got, "payroll") || strings.Contains(got, "finance-only") {
		t.Fatalf("Sam (platform) sees the finance key's call: %s", got)
	}
	if !strings.Contains(got, mine.ID) || !strings.Contains(got, "nightly deploy") {
		t.Fatalf("Sam does not see his team key's call: %s", got)
	}
	// The agent filter by the shared name narrows within his scope only.
	if got := activityText(t, f.store, f.sam, db.ActivityFilter{Agent: "ci-bot"}); strings.Contains(got, secret.ID) || !strings.Contains(got, mine.ID) {
		t.Fatalf("Sam's agent filter: %s", got)
	}
	// Finn (finance) sees the finance key's and not the platform key's.
	if got := activityText(t, f.store, f.finn, db.ActivityFilter{}); !strings.Contains(got, secret.ID) || strings.Contains(got, mine.ID) {
		t.Fatalf("Finn's Activity: %s", got)
	}
	// Every line of both items records its key's id.
	for id, key := range map[string]int64{secret.ID: finance.ID, mine.ID: platform.ID} {
		if n := f.count(t, `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND api_key_id IS DISTINCT FROM $2`, id, key); n != 0 {
			t.Errorf("%d lines of item %s lack key %d", n, id, key)
		}
	}
}

// A revoked key's name given to a new key of another team does not bring
// the old key's calls to the new key's team; the same owner may reuse a
// revoked key's name, but not a standing key's.
func TestActivityRevokedKeyNameReused(t *testing.T) {
	ctx := context.Background()
	f := newOrgFixture(t)
	_, old, err := f.store.CreateAPIKeyWith(ctx, "release-bot", nil, db.APIKeyOptions{Team: "finance"})
	if err != nil {
		t.Fatal(err)
	}
	secret := f.teamCall(t, old, "Year-end close", f.finn, "finance-only reason")
	_, _, err = f.store.CreateAPIKeyWith(ctx, "release-bot", nil, db.APIKeyOptions{Team: "finance"})
	if e := approval.AsError(err); e == nil || e.Kind != approval.KindUnprocessable || !strings.Contains(e.Message, `"release-bot" already stands for team "finance"`) {
		t.Fatalf("a second standing finance key named release-bot: %v", err)
	}
	if err := f.store.RevokeAPIKey(ctx, old.ID, f.maya); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.store.CreateAPIKeyWith(ctx, "release-bot", nil, db.APIKeyOptions{Team: "finance"}); err != nil {
		t.Fatalf("finance reusing its revoked key's name: %v", err)
	}
	_, reused, err := f.store.CreateAPIKeyWith(ctx, "release-bot", nil, db.APIKeyOptions{Team: "platform"})
	if err != nil {
		t.Fatal(err)
	}
	mine := f.teamCall(t, reused, "nightly deploy", f.sam, "")
	got := activityText(t, f.store, f.sam, db.ActivityFilter{})
	if strings.Contains(got, secret.ID) || strings.Contains(got, "Year-end") || strings.Contains(got, "finance-only") {
		t.Fatalf("the reused name brought the revoked key's calls to Sam: %s", got)
	}
	if !strings.Contains(got, mine.ID) {
		t.Fatalf("Sam does not see the new key's call: %s", got)
	}
	if got := activityText(t, f.store, f.sam, db.ActivityFilter{Agent: "release-bot"}); strings.Contains(got, secret.ID) {
		t.Fatalf("Sam's agent filter: %s", got)
	}
	// A person's keys: the command line's names are one owner's.
	if _, _, err := f.store.CreateAPIKey(ctx, "maya's agent", nil); approval.KindOf(err) != approval.KindUnprocessable {
		t.Fatalf("a second command-line key named maya's agent: %v", err)
	}
	if _, _, err := f.store.CreateAPIKey(ctx, "maya's agent", &f.maya); err != nil {
		t.Fatalf("Maya's own key of a name the command line uses: %v", err)
	}
}

// Migration 31 gives every line written before it its key's id, from its
// actor or its item (also a person's decision, whose line names no key);
// gives keys of one owner sharing a name a visible suffix, with an audit
// line each; and the key id, once there, cannot change.
func TestMigrationBackfillsKeyID(t *testing.T) {
	ctx := context.Background()
	f := newActivityFixture(t)
	f.calls(t)
	cfg, err := pgx.ParseConfig(f.url)
	if err != nil {
		t.Fatal(err)
	}
	sqlDB := stdlib.OpenDB(*cfg)
	defer sqlDB.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, 30); err != nil {
		t.Fatal(err)
	}
	// Before: two standing command-line keys of one name, a revoked one,
	// and two teams' keys of one name.
	var dup, revoked, teamA, teamB int64
	for _, q := range []struct {
		id   *int64
		name string
		team any
		rev  bool
	}{{&dup, "laptop agent", nil, false}, {&revoked, "laptop agent", nil, true}, {&teamA, "ci-bot", "finance", false}, {&teamB, "ci-bot", "platform", false}} {
		if err := sqlDB.QueryRowContext(ctx, `INSERT INTO api_keys (name, key_hash, key_prefix, team, revoked_at)
			VALUES ($1, convert_to(gen_random_uuid()::text, 'UTF8'), 'cs_x', $2, CASE WHEN $3 THEN now() END) RETURNING id`, q.name, q.team, q.rev).Scan(q.id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.UpTo(ctx, 31); err != nil {
		t.Fatal(err)
	}
	var missing int
	if err := sqlDB.QueryRowContext(ctx, `SELECT count(*) FROM audit_events WHERE action = ANY($1) AND api_key_id IS DISTINCT FROM $2`,
		approval.ActivityActions(""), f.key.ID).Scan(&missing); err != nil {
		t.Fatal(err)
	}
	if missing != 0 {
		t.Fatalf("%d call lines lack their key's id after the migration", missing)
	}
	names := map[int64]string{}
	rows, err := sqlDB.QueryContext(ctx, `SELECT id, name FROM api_keys`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var n string
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		names[id] = n
	}
	rows.Close()
	want := map[int64]string{f.key.ID: "laptop agent", dup: fmt.Sprintf("laptop agent (#%d)", dup), revoked: "laptop agent",
		teamA: "ci-bot", teamB: "ci-bot"}
	for id, n := range want {
		if names[id] != n {
			t.Errorf("key %d named %q after the migration, want %q", id, names[id], n)
		}
	}
	var renamed int
	if err := sqlDB.QueryRowContext(ctx, `SELECT count(*) FROM audit_events WHERE action = $1 AND api_key_id = $2
		AND detail->>'old_name' = 'laptop agent' AND detail->>'key_name' = $3`,
		approval.ActionAPIKeyRenamed, dup, want[dup]).Scan(&renamed); err != nil || renamed != 1 {
		t.Fatalf("rename lines: %d %v", renamed, err)
	}
	// The key id cannot change once written, nor be set to another key's
	// on a line without one, nor carry another change with it.
	for _, q := range []string{
		`UPDATE audit_events SET api_key_id = api_key_id + 1000 WHERE api_key_id IS NOT NULL`,
		`UPDATE audit_events SET api_key_id = NULL WHERE api_key_id IS NOT NULL`,
		`UPDATE audit_events SET api_key_id = 1 WHERE api_key_id IS NULL`,
		`UPDATE audit_events SET api_key_id = audit_event_key(audit_events), actor_name = 'mallory' WHERE action = 'rejected'`,
	} {
		if _, err := sqlDB.ExecContext(ctx, q); err == nil {
			t.Errorf("the append-only trigger let this pass: %s", q)
		}
	}
}

// A decision written before lines named their key (no agent_key, no key
// id) is still found by Activity's agent filter: its key is read from its
// item.
func TestActivityAgentFilterReadsItemKey(t *testing.T) {
	ctx := context.Background()
	f := newActivityFixture(t)
	f.calls(t)
	if _, err := f.store.Pool.Exec(ctx, `ALTER TABLE audit_events DISABLE TRIGGER audit_events_unsealed`); err != nil {
		t.Fatal(err)
	}
	var id int64
	err := f.store.Pool.QueryRow(ctx, `INSERT INTO audit_events (actor_kind, actor_id, actor_name, action, connector, tool,
		conversation_id, approval_id, owner_subject, xid) VALUES ('user', 'alice', 'Alice', 'expired', 'mail', 'send_email', 'conv', $1, 'alice',
		pg_current_xact_id()) RETURNING id`, f.rejected).Scan(&id)
	if _, err := f.store.Pool.Exec(ctx, `ALTER TABLE audit_events ENABLE TRIGGER audit_events_unsealed`); err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	p := f.list(t, f.alice, db.ActivityFilter{Agent: f.key.Name, Outcome: approval.OutcomeUnanswered})
	if len(p.Calls) != 1 || p.Calls[0].ID != id || p.Calls[0].Agent != f.key.Name {
		t.Fatalf("the agent filter on a line without its key: %+v", p.Calls)
	}
	agents, err := f.store.ActivityAgents(ctx, f.alice)
	if err != nil || len(agents) != 1 || agents[0] != f.key.Name {
		t.Fatalf("agents: %v %v", agents, err)
	}
}

// A tool that makes its key anew at each start (countersign dev, bench)
// replaces the standing key of that name: the old one is revoked, audited.
func TestAPIKeyReplaceSameName(t *testing.T) {
	ctx := context.Background()
	f := newOrgFixture(t)
	_, first, err := f.store.CreateAPIKeyWith(ctx, "demo agent", nil, db.APIKeyOptions{Replace: true})
	if err != nil {
		t.Fatal(err)
	}
	_, second, err := f.store.CreateAPIKeyWith(ctx, "demo agent", nil, db.APIKeyOptions{Replace: true})
	if err != nil {
		t.Fatalf("the second start: %v", err)
	}
	if n := f.count(t, `SELECT count(*) FROM api_keys WHERE id = $1 AND revoked_at IS NOT NULL`, first.ID); n != 1 {
		t.Fatal("the first key stands")
	}
	if n := f.count(t, `SELECT count(*) FROM api_keys WHERE id = $1 AND revoked_at IS NULL`, second.ID); n != 1 {
		t.Fatal("the second key does not stand")
	}
	if n := f.count(t, `SELECT count(*) FROM audit_events WHERE action = $1 AND (detail->>'key_id')::bigint = $2`,
		approval.ActionAPIKeyRevoked, first.ID); n != 1 {
		t.Fatalf("%d revoke lines", n)
	}
	// Another owner's key of that name is left alone.
	_, team, err := f.store.CreateAPIKeyWith(ctx, "demo agent", nil, db.APIKeyOptions{Team: "finance", Replace: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := f.count(t, `SELECT count(*) FROM api_keys WHERE id = ANY($1) AND revoked_at IS NULL`, []int64{second.ID, team.ID}); n != 2 {
		t.Fatalf("%d of the two owners' keys stand", n)
	}
}
