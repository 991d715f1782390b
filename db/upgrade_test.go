package db_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/jackc/pgx/v5"
)

// TestUpgradeFromPreviousRelease: an installation of the previous release
// (schema 20) with live data — items pending, approved and not yet
// claimed, consumed, rejected and expired; a conversation grant and an
// "Always allow"; a playbook's pre-approval; audit lines sealed under a
// signed checkpoint — is upgraded to this one. The chain and its
// checkpoint verify after the upgrade; the pending item is decided and
// claimed and the approved one claimed, as before; ended items stay ended;
// both grants still allow their calls; the pre-approval still lets the
// playbook's run call its tool; and
// the chain verifies again with what the new release wrote.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	u := emptyDatabase(t)
	ctx := context.Background()
	if _, err := db.MigrateWith(ctx, u, db.MigrateOptions{UpTo: previousRelease}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	const raw = "cs_upgrade_previous_release_key"
	hash := sha256.Sum256([]byte(raw))
	args := func(n string) string { return `{"to":"` + n + `@example.com"}` }
	exec := func(sql string, params ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, params...); err != nil {
			t.Fatalf("%v\n%s", err, sql)
		}
	}
	// What the previous release stored, as it stored it.
	exec(`INSERT INTO users (id, issuer, subject, email, name) VALUES (1, 'https://idp.example', 'alice', 'alice@example.com', 'Alice'),
		(2, 'https://idp.example', 'bob', 'bob@example.com', 'Bob')`)
	exec(`INSERT INTO api_keys (id, name, key_hash, key_prefix) VALUES (1, 'runtime', $1, 'cs_upgr')`, hash[:])
	exec(`INSERT INTO connectors (name, display_name, kind) VALUES ('mail', 'Mail', 'connector')`)
	exec(`INSERT INTO tools (id, connector, name, display_name, mode, standing_approval) VALUES (1, 'mail', 'send_email', 'Send email', 'require_approval', true)`)
	type item struct{ id, status, call string }
	items := []item{
		{"00000000-0000-0000-0000-0000000000a1", "pending", "p"},
		{"00000000-0000-0000-0000-0000000000a2", "approved", "a"},
		{"00000000-0000-0000-0000-0000000000a3", "consumed", "c"},
		{"00000000-0000-0000-0000-0000000000a4", "rejected", "r"},
		{"00000000-0000-0000-0000-0000000000a5", "expired", "e"},
	}
	for _, it := range items {
		decided := it.status != "pending"
		exec(`INSERT INTO approvals (id, owner_subject, api_key_id, conversation_id, turn_id, call_id, tool_id, connector, tool,
			arguments_digest, arguments_size, preview, available_decisions, policy_version, status, scope, reviewer_id,
			created_at, expires_at, decided_at, consumed_at)
			VALUES ($1, 'alice', 1, 'conv', 'turn', $2, 1, 'mail', 'send_email', $3, length($4), '{}', '{approve,reject}', 1, $5,
				CASE WHEN $5 IN ('approved', 'consumed') THEN 'once' END, CASE WHEN $6 AND $5 <> 'expired' THEN 1 END,
				now() - interval '1 minute', now() + CASE WHEN $5 = 'expired' THEN interval '-1 second' ELSE interval '1 hour' END,
				CASE WHEN $6 THEN now() END, CASE WHEN $5 = 'consumed' THEN now() END)`,
			it.id, it.call, approval.Digest(args(it.call)), args(it.call), it.status, decided)
		exec(`INSERT INTO audit_events (actor_kind, actor_id, actor_name, action, connector, tool, conversation_id, turn_id, approval_id)
			VALUES ('api_key', '1', 'runtime', 'approval requested', 'mail', 'send_email', 'conv', 'turn', $1)`, it.id)
		if decided {
			exec(`INSERT INTO audit_events (actor_kind, actor_id, actor_name, action, connector, tool, conversation_id, turn_id, approval_id)
				VALUES ('user', 'alice', 'Alice', $2, 'mail', 'send_email', 'conv', 'turn', $1)`, it.id, it.status)
		}
	}
	exec(`INSERT INTO standing_grants (id, user_subject, tool_id, conversation_id, policy_version) VALUES
		(1, 'alice', 1, 'conv-granted', 1), (2, 'bob', 1, NULL, 1)`)
	def := approval.Definition{Name: "Nightly", Steps: []approval.Step{{ID: "send", Title: "Send", WorkType: approval.WorkType{ID: "mail", Version: "1"},
		Tools: []approval.Pair{{Connector: "mail", Tool: "send_email"}}}}}
	fp, err := def.Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	exec(`INSERT INTO playbooks (id, owner_subject, name, definition, fingerprint, enabled) VALUES ('nightly', 'alice', 'Nightly', $1, $2, true)`, def, fp)
	exec(`INSERT INTO playbook_preapprovals (playbook_id, tool_id, fingerprint, policy_version, owner_subject) VALUES ('nightly', 1, $1, 1, 'alice')`, fp)
	exec(`INSERT INTO audit_events (actor_kind, actor_id, actor_name, action, playbook_id, connector, tool)
		VALUES ('user', 'alice', 'Alice', 'pre-approval granted', 'nightly', 'mail', 'send_email'),
		       ('api_key', '1', 'runtime', 'blocked by policy', '', 'mail', 'send_email')`)

	// Sealed and signed as the previous release's sealer did, with its
	// schema's statements: the seals on the events' rows.
	signer, pub, _ := testenv.AuditSigner(t)
	testenv.SealAsBefore(t, conn)
	var cp db.Checkpoint
	if err := conn.QueryRow(ctx, `SELECT seq, hash, date_trunc('microseconds', now()) FROM audit_events WHERE seq IS NOT NULL ORDER BY seq DESC LIMIT 1`).
		Scan(&cp.Seq, &cp.Hash, &cp.SignedAt); err != nil {
		t.Fatal(err)
	}
	cp = signer.Sign(cp)
	exec(`INSERT INTO audit_checkpoints (seq, hash, signed_at, key_id, signature) VALUES ($1, $2, $3, $4, $5)`,
		cp.Seq, cp.Hash, cp.SignedAt, cp.KeyID, cp.Signature)

	if _, err := db.Migrate(ctx, u); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	store, err := db.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	verify := func(when string) {
		t.Helper()
		rep, err := store.VerifyAuditSigned(ctx, pub)
		if err != nil || !rep.Intact || rep.Checkpoints == 0 {
			t.Fatalf("audit verify %s: %v %+v", when, err, rep)
		}
	}
	verify("right after the upgrade")

	key, err := store.AuthenticateAPIKey(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	alice := db.User{ID: 1, Issuer: "https://idp.example", Subject: "alice", Email: "alice@example.com", Name: "Alice"}
	// The pending item is decided and claimed as before.
	if a, err := store.Decide(ctx, items[0].id, alice, approval.Approve, ""); err != nil || a.Status != "approved" {
		t.Fatalf("decide the pending item: %v %+v", err, a.Status)
	}
	for _, it := range items[:2] {
		if a, err := store.Claim(ctx, key, it.id, it.call, approval.Digest(args(it.call))); err != nil || a.Status != "consumed" {
			t.Fatalf("claim the %s item: %v %s", it.status, err, a.Status)
		}
	}
	// Ended items stay ended.
	for _, it := range items[2:] {
		if _, err := store.Decide(ctx, it.id, alice, approval.Approve, ""); err == nil {
			t.Errorf("the %s item was decided again", it.status)
		}
		if _, err := store.Claim(ctx, key, it.id, it.call, approval.Digest(args(it.call))); err == nil {
			t.Errorf("the %s item was claimed", it.status)
		}
	}
	check := func(user, conv, call string) db.CheckResult {
		t.Helper()
		res, err := store.Check(ctx, key, db.CheckRequest{CallID: call, User: user, ConversationID: conv, TurnID: "t2",
			Connector: "mail", Tool: "send_email", Arguments: args(call)}, db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := check("alice", "conv-granted", "g1"); res.Outcome.Verdict != approval.Allow || res.Outcome.Via != approval.ViaConversationGrant {
		t.Fatalf("alice's conversation grant: %+v", res.Outcome)
	}
	if res := check("bob", "elsewhere", "g2"); res.Outcome.Verdict != approval.Allow || res.Outcome.Via != approval.ViaAlwaysAllow {
		t.Fatalf("bob's Always allow: %+v", res.Outcome)
	}
	if res := check("alice", "conv-new", "n1"); res.Outcome.Verdict != approval.Pending || res.Approval == nil {
		t.Fatalf("a new call of a person who signed in before the upgrade: %+v", res.Outcome)
	}
	// The pre-approval still lets the playbook's unattended run call the tool.
	run, err := store.StartRun(ctx, key, "nightly")
	if err != nil || len(run.Preapproved) != 1 {
		t.Fatalf("a run of the pre-approved playbook: %v %+v", err, run)
	}
	res, err := store.Check(ctx, key, db.CheckRequest{CallID: "r1", User: "alice", ConversationID: "run", TurnID: "t", PlaybookRunID: run.ID,
		Connector: "mail", Tool: "send_email", Arguments: args("r1")}, db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2})
	if err != nil || res.Outcome.Verdict != approval.Allow {
		t.Fatalf("the run's call: %v %+v", err, res.Outcome)
	}

	// The new release's lines chain onto the old ones, under a new checkpoint.
	if err := store.SealAll(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := (&db.Sealer{DB: store, Signer: signer}).SealOnce(ctx, true); err != nil {
		t.Fatal(err)
	}
	verify("after the new release wrote")
	var owners int
	if err := store.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE approval_id <> '' AND owner_subject = 'alice'`).Scan(&owners); err != nil || owners < 9 {
		t.Fatalf("the old lines' owners: %d %v", owners, err)
	}
}
