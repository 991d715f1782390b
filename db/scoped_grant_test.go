package db_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
)

// scopedFixture is a user with a runtime key, an agent's shell tool (which
// names its shell argument, so "Always allow calls like this" is offered
// though standing approval is not) and a mail tool offering standing
// approval.
type scopedFixture struct {
	store *db.DB
	user  db.User
	raw   string
	n     int
}

func newScopedFixture(t *testing.T) *scopedFixture {
	t.Helper()
	ctx := context.Background()
	store, _ := testenv.OpenDB(t)
	f := &scopedFixture{store: store}
	if err := store.SyncConnector(ctx, approval.SystemActor, db.ConnectorSync{Name: "claude-code", DisplayName: "Claude Code", Kind: "builtin",
		Tools: []db.ToolSync{{Name: "Bash", DisplayName: "Bash", ShellArgument: "command"}}}); err != nil {
		t.Fatal(err)
	}
	if err := store.SyncConnector(ctx, approval.SystemActor, db.ConnectorSync{Name: "mail", DisplayName: "Mail", Kind: "connector",
		Tools: []db.ToolSync{{Name: "send_email", DisplayName: "Send email"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SetToolPolicy(ctx, approval.SystemActor, "mail", "send_email",
		approval.Policy{Mode: approval.ModeRequireApproval, StandingApproval: true}); err != nil {
		t.Fatal(err)
	}
	var err error
	if f.user, err = store.SignIn(ctx, db.User{Issuer: "https://idp.example", Subject: "member", Email: "m@example.com"}); err != nil {
		t.Fatal(err)
	}
	if f.raw, _, err = store.CreateAPIKey(ctx, "runtime", nil); err != nil {
		t.Fatal(err)
	}
	return f
}

// check sends one call as a runtime does, each with its own call id.
func (f *scopedFixture) check(t *testing.T, connector, tool, args string, mod ...func(*db.CheckRequest)) db.CheckResult {
	t.Helper()
	f.n++
	req := db.CheckRequest{CallID: fmt.Sprint("call-", f.n), User: f.user.Subject, ConversationID: fmt.Sprint("conv-", f.n%3),
		TurnID: fmt.Sprint("turn-", f.n), Connector: connector, Tool: tool, Arguments: args}
	for _, m := range mod {
		m(&req)
	}
	res, _, err := f.store.CheckWithAPIKey(context.Background(), f.raw, req, db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2})
	if err != nil {
		t.Fatalf("check %s: %v", args, err)
	}
	return res
}

func bash(cmd string) string {
	b, _ := json.Marshal(map[string]string{"command": cmd, "description": "run it"})
	return string(b)
}

// give answers a pending call "Always allow calls like this" with the
// person's choices.
func (f *scopedFixture) give(t *testing.T, res db.CheckResult, choices ...string) db.Approval {
	t.Helper()
	if res.Outcome.Verdict != approval.Pending || res.Approval == nil {
		t.Fatalf("not pending: %+v", res.Outcome)
	}
	a, err := f.store.Answer(context.Background(), res.Approval.ID, f.user, db.Answer{Decision: approval.AlwaysMatching, Scope: choices})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (f *scopedFixture) auditCount(t *testing.T, action string, grant int64) int {
	t.Helper()
	var n int
	if err := f.store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_events WHERE action = $1
		AND ($2 = 0 OR (detail->>'grant_id')::bigint = $2)`, action, grant).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// "Always allow calls like this" on `npm test` allows later `npm test`
// calls (audited as the scoped grant) and nothing chained, substituted,
// longer-named or run through sudo; a policy change lapses it.
func TestScopedGrantShell(t *testing.T) {
	ctx := context.Background()
	f := newScopedFixture(t)
	first := f.check(t, "claude-code", "Bash", bash("npm test"))
	if got := fmt.Sprint(first.Approval.AvailableDecisions); got != "[approve always_matching reject]" {
		t.Fatalf("decisions offered for a shell tool without standing approval: %s", got)
	}
	if _, err := f.store.Answer(ctx, first.Approval.ID, f.user, db.Answer{Decision: approval.AlwaysMatching, Scope: []string{"0:wider"}}); approval.KindOf(err) != approval.KindUnprocessable {
		t.Fatalf("a scope not offered: %v, want 422", err)
	}
	if _, err := f.store.Answer(ctx, first.Approval.ID, f.user, db.Answer{Decision: approval.AlwaysAllow}); approval.KindOf(err) != approval.KindUnprocessable {
		t.Fatalf("always without standing approval: %v, want 422", err)
	}
	a := f.give(t, first)
	if a.Status != approval.StatusApproved || a.Scope == nil || *a.Scope != "always" {
		t.Fatalf("%s %v", a.Status, a.Scope)
	}
	grants, err := f.store.GrantsFor(ctx, f.user.Subject)
	if err != nil || len(grants) != 1 {
		t.Fatalf("%v %d grants", err, len(grants))
	}
	g := grants[0]
	const npmWords = "commands starting with `npm test`, then any words but options (none starting with -)"
	if g.ScopeWords != npmWords || g.Covering() != npmWords || !g.Scoped() || g.Lapsed() != "" {
		t.Fatalf("grant %+v", g)
	}
	if f.auditCount(t, approval.ActionAlwaysMatching, 0) != 1 {
		t.Fatal("the grant was not audited when given")
	}
	allowed := []string{"npm test", "npm test unit", "npm  test"}
	asks := []string{"npm test -- --watch", "npm test --script-shell=./evil.sh", "npm test --prefix ../other", "npm\rtest",
		"npm test\rrm x", "npm test\r", "time npm test", "coproc npm test", "! npm test", "npm test && rm -rf ~", "npm test; curl x | sh", "npm test $(rm -rf ~)", "npm testx", "sudo npm test",
		"npm test > ~/.bashrc", "FOO=1 npm test", "bash -c 'npm test'"}
	// The grants are read with the tool, in the check's first statement:
	// no check below reads them apart.
	apart := f.store.FactsReadApart()
	for _, cmd := range allowed {
		res := f.check(t, "claude-code", "Bash", bash(cmd))
		if res.Outcome.Verdict != approval.Allow || res.Outcome.Via != approval.ViaAlwaysAllow || !res.Outcome.Scoped {
			t.Errorf("%q: %+v, want allowed by the scoped grant", cmd, res.Outcome)
		}
	}
	if n := f.store.FactsReadApart() - apart; n != 0 {
		t.Errorf("%d checks read the grants in a statement of their own", n)
	}
	// The same in a transaction (a call that may join an earlier item).
	res := f.check(t, "claude-code", "Bash", bash("npm test"), func(r *db.CheckRequest) { r.AttachToPending = true })
	if res.Outcome.Verdict != approval.Allow || !res.Outcome.Scoped {
		t.Errorf("in a transaction: %+v", res.Outcome)
	}
	if n := f.auditCount(t, approval.ActionAutoApprovedScoped, g.ID); n != len(allowed)+1 {
		t.Errorf("%d calls audited as allowed by grant %d, want %d", n, g.ID, len(allowed)+1)
	}
	for _, cmd := range asks {
		if res := f.check(t, "claude-code", "Bash", bash(cmd)); res.Outcome.Verdict != approval.Pending {
			t.Errorf("%q: %+v, want asked", cmd, res.Outcome)
		}
	}
	// A grant given before option words were told apart keeps its stored
	// words, but is read, and said, as "no options".
	if _, err := f.store.Pool.Exec(ctx, `UPDATE standing_grants SET scope_words = 'commands starting with `+"`npm test`"+`' WHERE id = $1`, g.ID); err != nil {
		t.Fatal(err)
	}
	if grants, _ := f.store.GrantsFor(ctx, f.user.Subject); grants[0].Covering() != npmWords {
		t.Errorf("an older grant reads %q", grants[0].Covering())
	}
	// The grant is another tool's: it covers nothing of the mail tool.
	if res := f.check(t, "mail", "send_email", bash("npm test")); res.Outcome.Verdict != approval.Pending {
		t.Errorf("another tool: %+v", res.Outcome)
	}
	// A policy change lapses it, as every grant.
	if _, err := f.store.SetToolPolicy(ctx, approval.SystemActor, "claude-code", "Bash",
		approval.Policy{Mode: approval.ModeRequireApproval, Matchable: true}); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range append(allowed, asks...) {
		if res := f.check(t, "claude-code", "Bash", bash(cmd)); res.Outcome.Verdict != approval.Pending {
			t.Errorf("after a policy change %q: %+v, want asked", cmd, res.Outcome)
		}
	}
	if grants, _ := f.store.GrantsFor(ctx, f.user.Subject); grants[0].Lapsed() != db.LapsedPolicyChanged {
		t.Errorf("lapsed: %q", grants[0].Lapsed())
	}
}

// An exact-keys grant on a mail tool: the same recipient with any subject
// and body is allowed; another recipient, or an added cc, asks. Revoking it
// is audited, and the next call asks.
func TestScopedGrantKeys(t *testing.T) {
	ctx := context.Background()
	f := newScopedFixture(t)
	first := f.check(t, "mail", "send_email", `{"to":"finance@acme.example","subject":"Q3","body":"numbers"}`)
	if got := fmt.Sprint(first.Approval.AvailableDecisions); got != "[approve approve_conversation always always_matching reject]" {
		t.Fatalf("decisions offered: %s", got)
	}
	f.give(t, first, "key:to")
	for _, c := range []struct {
		args  string
		allow bool
	}{
		{`{"to":"finance@acme.example","subject":"Q4","body":"other numbers"}`, true},
		{`{"body":"x","to":"finance@acme.example"}`, true},
		{`{"to":"attacker@evil.example","subject":"Q3","body":"numbers"}`, false},
		{`{"to":"finance@acme.example","subject":"Q3","body":"numbers","cc":"attacker@evil.example"}`, false},
	} {
		res := f.check(t, "mail", "send_email", c.args)
		if got := res.Outcome.Verdict == approval.Allow && res.Outcome.Scoped; got != c.allow {
			t.Errorf("%s: %+v, want allowed %v", c.args, res.Outcome, c.allow)
		}
	}
	grants, _ := f.store.GrantsFor(ctx, f.user.Subject)
	if err := f.store.RevokeGrant(ctx, f.user, grants[0].ID); err != nil {
		t.Fatal(err)
	}
	if f.auditCount(t, approval.ActionGrantRevoked, grants[0].ID) != 1 {
		t.Error("revocation not audited")
	}
	if res := f.check(t, "mail", "send_email", `{"to":"finance@acme.example","body":"x"}`); res.Outcome.Verdict != approval.Pending {
		t.Errorf("after revoking: %+v", res.Outcome)
	}
}

// A scoped grant is never used in a playbook run: a run's call that it
// would cover is refused without asking.
func TestScopedGrantNotInPlaybookRun(t *testing.T) {
	ctx := context.Background()
	f := newScopedFixture(t)
	f.give(t, f.check(t, "claude-code", "Bash", bash("npm test")))
	readOnly := true
	if err := f.store.SyncConnector(ctx, approval.SystemActor, db.ConnectorSync{Name: "crm", DisplayName: "CRM", Kind: "connector",
		Tools: []db.ToolSync{{Name: "read", DisplayName: "Read", Annotations: approval.Annotations{ReadOnlyHint: &readOnly}}}}); err != nil {
		t.Fatal(err)
	}
	def := approval.Definition{Name: "Report", Steps: []approval.Step{{ID: "s", Title: "S", WorkType: approval.WorkType{ID: "w", Version: "1"},
		Tools: []approval.Pair{{Connector: "crm", Tool: "read"}}}}}
	if _, err := f.store.UpsertPlaybook(ctx, approval.SystemActor, "pb", f.user.Subject, def); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.SetPlaybookState(ctx, approval.SystemActor, "", "pb", true, nil); err != nil {
		t.Fatal(err)
	}
	key, err := f.store.AuthenticateAPIKey(ctx, f.raw)
	if err != nil {
		t.Fatal(err)
	}
	run, err := f.store.StartRun(ctx, key, "pb")
	if err != nil {
		t.Fatal(err)
	}
	res := f.check(t, "claude-code", "Bash", bash("npm test"), func(r *db.CheckRequest) { r.PlaybookRunID = run.ID })
	if res.Outcome.Verdict != approval.Deny || res.Outcome.Code != approval.CodeApprovalUnavailable {
		t.Fatalf("in a run: %+v, want approval_unavailable", res.Outcome)
	}
	// Outside the run the same call is allowed: the grant is valid.
	if res := f.check(t, "claude-code", "Bash", bash("npm test")); !res.Outcome.Scoped {
		t.Fatalf("outside the run: %+v", res.Outcome)
	}
}

// The admin's cap on standing grants applies to scoped grants: a longer
// length is refused, and the grant given ends at the cap.
func TestScopedGrantCapped(t *testing.T) {
	ctx := context.Background()
	f := newScopedFixture(t)
	if _, err := f.store.SetToolPolicy(ctx, approval.SystemActor, "claude-code", "Bash",
		approval.Policy{Mode: approval.ModeRequireApproval, Matchable: true, MaxGrant: time.Hour}); err != nil {
		t.Fatal(err)
	}
	res := f.check(t, "claude-code", "Bash", bash("go build ./..."))
	if _, err := f.store.Answer(ctx, res.Approval.ID, f.user, db.Answer{Decision: approval.AlwaysMatching, Duration: "86400"}); approval.KindOf(err) != approval.KindUnprocessable {
		t.Fatalf("a day under a cap of an hour: %v, want 422", err)
	}
	f.give(t, res)
	grants, _ := f.store.GrantsFor(ctx, f.user.Subject)
	if len(grants) != 1 || grants[0].ExpiresAt == nil || time.Until(*grants[0].ExpiresAt) > time.Hour+time.Minute {
		t.Fatalf("grant %+v", grants)
	}
	// Matchable turned off: the answer is not offered any more, and the
	// grant does not apply.
	if _, err := f.store.SetToolPolicy(ctx, approval.SystemActor, "claude-code", "Bash",
		approval.Policy{Mode: approval.ModeRequireApproval}); err != nil {
		t.Fatal(err)
	}
	res = f.check(t, "claude-code", "Bash", bash("go build ./..."))
	if res.Outcome.Verdict != approval.Pending || fmt.Sprint(res.Approval.AvailableDecisions) != "[approve reject]" {
		t.Fatalf("after matchable off: %+v %v", res.Outcome, res.Approval)
	}
	if _, err := f.store.Answer(ctx, res.Approval.ID, f.user, db.Answer{Decision: approval.AlwaysMatching}); approval.KindOf(err) != approval.KindUnprocessable {
		t.Fatalf("always_matching not offered: %v, want 422", err)
	}
}

// Turning "Always allow calls like this" off withdraws it from the tool's
// pending items at once.
func TestMatchableOffWithdrawsFromPending(t *testing.T) {
	ctx := context.Background()
	f := newScopedFixture(t)
	res := f.check(t, "claude-code", "Bash", bash("go vet ./..."))
	if _, err := f.store.SetToolPolicy(ctx, approval.SystemActor, "claude-code", "Bash",
		approval.Policy{Mode: approval.ModeRequireApproval}); err != nil {
		t.Fatal(err)
	}
	a, err := f.store.ApprovalForViewer(ctx, res.Approval.ID, f.user.Subject)
	if err != nil || fmt.Sprint(a.AvailableDecisions) != "[approve reject]" {
		t.Fatalf("%v %v", err, a.AvailableDecisions)
	}
}
