package db_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/migrations"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

// activityFixture is two members whose agents (one key) made calls of
// every kind: a mail tool that asks, a search its policy allows, a delete
// an admin blocked, and a CRM read a playbook pre-approved.
type activityFixture struct {
	store      *db.DB
	url        string
	key        db.APIKey
	alice, bob db.User
	admin      db.User
	n          int
	grant      int64
	run        string
	rejected   string
}

func newActivityFixture(t *testing.T) *activityFixture {
	t.Helper()
	ctx := context.Background()
	store, url := testenv.OpenDB(t)
	f := &activityFixture{store: store, url: url}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(store.SyncConnector(ctx, approval.SystemActor, db.ConnectorSync{Name: "mail", DisplayName: "Mail", Kind: "connector",
		Tools: []db.ToolSync{{Name: "send_email", DisplayName: "Send email"}, {Name: "search", DisplayName: "Search"},
			{Name: "delete", DisplayName: "Delete"}}}))
	must(store.SyncConnector(ctx, approval.SystemActor, db.ConnectorSync{Name: "crm", DisplayName: "CRM", Kind: "connector",
		Tools: []db.ToolSync{{Name: "read", DisplayName: "Read"}}}))
	for tool, m := range map[string]approval.Mode{"send_email": approval.ModeRequireApproval, "search": approval.ModeAllow,
		"delete": approval.ModeBlock} {
		_, err := store.SetToolPolicy(ctx, approval.SystemActor, "mail", tool, approval.Policy{Mode: m, StandingApproval: true})
		must(err)
	}
	var err error
	f.alice, err = store.SignIn(ctx, db.User{Issuer: "https://idp.example", Subject: "alice", Email: "alice@example.com", Name: "Alice"})
	must(err)
	f.bob, err = store.SignIn(ctx, db.User{Issuer: "https://idp.example", Subject: "bob", Email: "bob@example.com", Name: "Bob"})
	must(err)
	f.admin = db.User{Subject: "root", Name: "Root", IsAdmin: true}
	_, f.key, err = store.CreateAPIKey(ctx, "laptop agent", nil)
	must(err)
	return f
}

// check runs a call of tool by user's agent.
func (f *activityFixture) check(t *testing.T, user db.User, connector, tool, run string) db.CheckResult {
	t.Helper()
	f.n++
	res, err := f.store.Check(context.Background(), f.key, db.CheckRequest{CallID: fmt.Sprint("call-", f.n), User: user.Subject,
		ConversationID: "conv", TurnID: fmt.Sprint("turn-", f.n), Connector: connector, Tool: tool,
		Arguments: fmt.Sprintf(`{"n":%d}`, f.n), PlaybookRunID: run}, db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// calls makes alice's calls, one of each end, and one policy allow of bob's.
func (f *activityFixture) calls(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if res := f.check(t, f.alice, "mail", "search", ""); res.Outcome.Via != approval.ViaPolicy {
		t.Fatalf("search: %+v", res.Outcome)
	}
	// Asked and rejected with a reason.
	res := f.check(t, f.alice, "mail", "send_email", "")
	if _, err := f.store.Decide(ctx, res.Approval.ID, f.alice, approval.Reject, "wrong recipient"); err != nil {
		t.Fatal(err)
	}
	f.rejected = res.Approval.ID
	// Asked and allowed always; the next call is allowed by that grant.
	res = f.check(t, f.alice, "mail", "send_email", "")
	if _, err := f.store.Decide(ctx, res.Approval.ID, f.alice, approval.AlwaysAllow, ""); err != nil {
		t.Fatal(err)
	}
	if res = f.check(t, f.alice, "mail", "send_email", ""); res.Outcome.Via != approval.ViaAlwaysAllow {
		t.Fatalf("grant: %+v", res.Outcome)
	}
	grants, err := f.store.GrantsFor(ctx, f.alice.Subject)
	if err != nil || len(grants) != 1 {
		t.Fatalf("grants: %v %v", grants, err)
	}
	f.grant = grants[0].ID
	// Denied: blocked by an admin.
	if res = f.check(t, f.alice, "mail", "delete", ""); res.Outcome.Code != approval.CodeBlockedByPolicy {
		t.Fatalf("delete: %+v", res.Outcome)
	}
	// A playbook of alice's, its tool pre-approved, runs it.
	def := approval.Definition{Name: "Weekly report", Steps: []approval.Step{{ID: "s", Title: "S",
		WorkType: approval.WorkType{ID: "w", Version: "1"}, Tools: []approval.Pair{{Connector: "crm", Tool: "read"}}}}}
	pb, err := f.store.UpsertPlaybook(ctx, approval.SystemActor, "pb", f.alice.Subject, def)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.PreApprove(ctx, f.alice, "pb", pb.Fingerprint); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.SetPlaybookState(ctx, approval.SystemActor, "", "pb", true, nil); err != nil {
		t.Fatal(err)
	}
	run, err := f.store.StartRun(ctx, f.key, "pb")
	if err != nil {
		t.Fatal(err)
	}
	f.run = run.ID
	if res = f.check(t, f.alice, "crm", "read", run.ID); res.Outcome.Via != approval.ViaPreapproval {
		t.Fatalf("run: %+v", res.Outcome)
	}
	// Bob's agent's call.
	f.check(t, f.bob, "mail", "search", "")
}

func (f *activityFixture) list(t *testing.T, viewer db.User, flt db.ActivityFilter) db.ActivityPage {
	t.Helper()
	p, err := f.store.ListActivity(context.Background(), viewer, flt)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// words is each call's words, newest first.
func words(p db.ActivityPage, viewer db.User) []string {
	var out []string
	for _, c := range p.Calls {
		out = append(out, c.End(viewer).Words())
	}
	return out
}

// Each kind of call appears once, newest first, saying in words what
// decided it; a member never sees another member's calls, an admin sees
// everyone's.
func TestActivityWords(t *testing.T) {
	f := newActivityFixture(t)
	f.calls(t)
	p := f.list(t, f.alice, db.ActivityFilter{})
	got := words(p, f.alice)
	want := []string{
		"Allowed by playbook Weekly report, run " + strings.Split(f.run, "-")[0],
		"Denied: an admin blocked this tool",
		"Allowed by your standing approval for this tool in any conversation",
		"Approved by Alice, with a standing approval",
		"Rejected by Alice: wrong recipient",
		"Allowed by policy — rule: allow without asking",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("alice's activity:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, c := range p.Calls {
		if c.OwnerSubject != f.alice.Subject || c.Agent != "laptop agent" {
			t.Fatalf("a call of someone else's or without its agent: %+v", c)
		}
		if c.Action == approval.ActionAutoApprovedAlways && (c.GrantID == nil || *c.GrantID != f.grant || !c.Revocable(f.alice) || c.Revocable(f.bob)) {
			t.Fatalf("the grant's row: %+v", c)
		}
		if c.Action == approval.ActionRejected && c.ApprovalID != f.rejected {
			t.Fatalf("the rejection's row links to %q, not its item", c.ApprovalID)
		}
	}
	// Bob sees his one call, never alice's.
	if got := words(f.list(t, f.bob, db.ActivityFilter{}), f.bob); len(got) != 1 || got[0] != "Allowed by policy — rule: allow without asking" {
		t.Fatalf("bob's activity: %q", got)
	}
	// A member's person filter is ignored: it is the admin's.
	if got := f.list(t, f.bob, db.ActivityFilter{Person: f.alice.Subject}); len(got.Calls) != 1 || got.Calls[0].OwnerSubject != f.bob.Subject {
		t.Fatalf("bob chose alice's calls: %+v", got.Calls)
	}
	// An admin sees everyone's calls, named by whose they are, or one person's.
	all := f.list(t, f.admin, db.ActivityFilter{})
	if len(all.Calls) != 7 || all.Calls[0].OwnerName != "Bob" {
		t.Fatalf("admin's activity: %d calls, newest %+v", len(all.Calls), all.Calls[0])
	}
	if w := all.Calls[3].End(f.admin).Words(); w != "Allowed by Alice’s standing approval for this tool in any conversation" {
		t.Fatalf("admin reads alice's grant as %q", w)
	}
	if got := f.list(t, f.admin, db.ActivityFilter{Person: f.bob.Subject}); len(got.Calls) != 1 {
		t.Fatalf("admin's filter by person: %d calls", len(got.Calls))
	}
}

// Filters by agent, tool, outcome and grant, and keyset paging.
func TestActivityFiltersAndPaging(t *testing.T) {
	f := newActivityFixture(t)
	f.calls(t)
	count := func(flt db.ActivityFilter) int { return len(f.list(t, f.alice, flt).Calls) }
	for name, c := range map[string]struct {
		flt  db.ActivityFilter
		want int
	}{
		"agent":          {db.ActivityFilter{Agent: "laptop agent"}, 6},
		"other agent":    {db.ActivityFilter{Agent: "phone agent"}, 0},
		"tool":           {db.ActivityFilter{Tool: "send_email"}, 3},
		"allowed":        {db.ActivityFilter{Outcome: approval.OutcomeAllowed}, 3},
		"approved":       {db.ActivityFilter{Outcome: approval.OutcomeApproved}, 1},
		"rejected":       {db.ActivityFilter{Outcome: approval.OutcomeRejected}, 1},
		"denied":         {db.ActivityFilter{Outcome: approval.OutcomeDenied}, 1},
		"unknown":        {db.ActivityFilter{Outcome: "whatever"}, 0},
		"grant":          {db.ActivityFilter{Grant: f.grant}, 1},
		"grant rejected": {db.ActivityFilter{Grant: f.grant, Outcome: approval.OutcomeRejected}, 0},
		"tool and agent": {db.ActivityFilter{Tool: "search", Agent: "laptop agent"}, 1},
	} {
		if got := count(c.flt); got != c.want {
			t.Errorf("%s: %d calls, want %d", name, got, c.want)
		}
	}
	// The agent filter offers the keys of the viewer's own calls only.
	agents, err := f.store.ActivityAgents(context.Background(), f.alice)
	if err != nil || fmt.Sprint(agents) != "[laptop agent]" {
		t.Fatalf("alice's agents: %v %v", agents, err)
	}
	if _, _, err := f.store.CreateAPIKey(context.Background(), "bob's other agent", nil); err != nil {
		t.Fatal(err)
	}
	if agents, _ := f.store.ActivityAgents(context.Background(), f.alice); len(agents) != 1 {
		t.Fatalf("alice is offered a key that made none of her calls: %v", agents)
	}
	// Bob's grant filter shows nothing of alice's grant.
	if got := len(f.list(t, f.bob, db.ActivityFilter{Grant: f.grant}).Calls); got != 0 {
		t.Fatalf("bob sees %d calls of alice's grant", got)
	}
	// Pages of two, newest first, with no call twice and none left out.
	var seen []int64
	flt := db.ActivityFilter{Limit: 2}
	for {
		p := f.list(t, f.alice, flt)
		for _, c := range p.Calls {
			if len(seen) > 0 && c.ID >= seen[len(seen)-1] {
				t.Fatalf("not newest first: %v then %d", seen, c.ID)
			}
			seen = append(seen, c.ID)
		}
		if !p.HasOlder {
			break
		}
		flt.Before = p.OldestID
	}
	if len(seen) != 6 {
		t.Fatalf("paged through %d calls, want 6", len(seen))
	}
}

// A call allowed because its condition was false is audited too, naming
// the condition, through the same writer as a grant's allow.
func TestActivityConditionAllow(t *testing.T) {
	f := newActivityFixture(t)
	ctx := context.Background()
	if _, err := f.store.SetToolPolicy(ctx, approval.SystemActor, "mail", "send_email",
		approval.Policy{Mode: approval.ModeRequireApproval, StandingApproval: true, Condition: "size(args) > 5"}); err != nil {
		t.Fatal(err)
	}
	f.n++
	res, err := f.store.Check(ctx, f.key, db.CheckRequest{CallID: "c", User: f.alice.Subject, ConversationID: "conv", TurnID: "t",
		Connector: "mail", Tool: "send_email", Arguments: `{"n":1}`}, db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2,
		Condition: func(string, approval.Arguments) approval.ConditionResult { return approval.ConditionFalse }})
	if err != nil || res.Outcome.Via != approval.ViaPolicy {
		t.Fatalf("check: %+v %v", res.Outcome, err)
	}
	got := words(f.list(t, f.alice, db.ActivityFilter{}), f.alice)
	if len(got) != 1 || got[0] != "Allowed by policy — rule: ask only when size(args) > 5; false for this call" {
		t.Fatalf("condition allow: %q", got)
	}
}

// A call a scoped grant ("Always allow calls like this") allowed names
// the grant's scope in words on the Activity page, with its Revoke.
func TestActivityScopedGrant(t *testing.T) {
	f := newScopedFixture(t)
	f.give(t, f.check(t, "claude-code", "Bash", bash("npm test")))
	if res := f.check(t, "claude-code", "Bash", bash("npm test unit")); res.Outcome.Verdict != approval.Allow || !res.Outcome.Scoped {
		t.Fatalf("scoped allow: %+v", res.Outcome)
	}
	p, err := f.store.ListActivity(context.Background(), f.user, db.ActivityFilter{Outcome: approval.OutcomeAllowed})
	if err != nil || len(p.Calls) != 1 {
		t.Fatalf("%v %d calls", err, len(p.Calls))
	}
	c := p.Calls[0]
	if w := c.End(f.user).Words(); w != "Allowed by your standing approval: commands starting with `npm test`, then any words but options (none starting with -)" || !c.Revocable(f.user) {
		t.Fatalf("the scoped grant's row: %q revocable %v", w, c.Revocable(f.user))
	}
}

// Migration 29 gives the lines written before it their owner, from the
// item, the grant or the playbook they name, and a refusal from the other
// lines of its key's conversation.
func TestMigrationBackfillsOwner(t *testing.T) {
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
	if _, err := p.DownTo(ctx, 25); err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 29); err != nil {
		t.Fatal(err)
	}
	rows, err := sqlDB.QueryContext(ctx, `SELECT action, owner_subject FROM audit_events WHERE action = ANY($1) ORDER BY id`,
		approval.ActivityActions(""))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var action, owner string
		if err := rows.Scan(&action, &owner); err != nil {
			t.Fatal(err)
		}
		got = append(got, action+"="+owner)
	}
	// A policy allow names no item, grant or playbook: it keeps no owner.
	// A refusal takes its owner from its key's conversation, whose other
	// lines name alice.
	want := []string{"allowed by policy=", "rejected=alice", "always allowed=alice", "auto-approved by Always allow=alice",
		"blocked by policy=alice", "allowed by pre-approval=alice", "allowed by policy="}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("owners after the migration:\n%s\nwant:\n%s", strings.Join(got, ", "), strings.Join(want, ", "))
	}
	// The owner cannot change once written, not even with the seal.
	if _, err := sqlDB.ExecContext(ctx, `UPDATE audit_events SET owner_subject = 'mallory' WHERE action = 'rejected'`); err == nil {
		t.Fatal("the append-only trigger let the owner change")
	}
}
