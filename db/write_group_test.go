package db_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/jackc/pgx/v5"
)

// Pending items of concurrent checks are created together, several in one
// transaction, and each check still gets exactly its own answer: its own
// item, stored with its full text, its outbox event and one audit line,
// announced once committed; a check whose write cannot be stored fails
// alone and leaves nothing behind; and two checks of the same call share
// one item.
func TestGroupedPendingItems(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	listener, err := pgx.Connect(ctx, f.store.Pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(ctx)
	if _, err := listener.Exec(ctx, "LISTEN "+db.NotifyChannel); err != nil {
		t.Fatal(err)
	}
	f.refusePoisonLines(t) // lines of a "poison" turn cannot be stored
	// First distinct calls, then with checks whose lines are refused, then
	// with calls sent twice at once: a group that holds one of those is
	// written again one check at a time.
	for _, round := range []struct {
		name           string
		refused, twice bool
	}{{"DistinctCalls", false, false}, {"RefusedLines", true, false}, {"CallsSentTwice", false, true}} {
		t.Run(round.name, func(t *testing.T) {
			groupedPending(t, f, listener, round.name, round.refused, round.twice)
		})
	}
}

// argumentShapes are argument texts of every kind a runtime may send.
var argumentShapes = []string{`{"to":"a@example.com","n":%d}`, `{}`, `not JSON, call %d`,
	`{"body":"` + strings.Repeat("x", 5000) + `","n":%d}`, `{"to":"a\u202e@example.com\u200b","n":%d}`}

func groupedPending(t *testing.T, f *blockFixture, listener *pgx.Conn, name string, poisoned, twice bool) {
	ctx := context.Background()
	round := name + "-"
	const n = 60
	type answer struct {
		id  string
		a   db.Approval
		err error
	}
	answers := make([]answer, n)
	// With twice, checks 2k and 2k+1 are the same call when k is a
	// multiple of 5: one of them loses the race to insert it.
	request := func(i int) db.CheckRequest {
		call, turn := i, fmt.Sprint(round, "ok-", i)
		if twice && (i/2)%5 == 0 {
			call, turn = i/2*2, fmt.Sprint(round, "same-", i/2)
		}
		if poisoned && i%7 == 6 {
			turn = fmt.Sprint("poison-", i)
		}
		args := argumentShapes[call%len(argumentShapes)]
		if strings.Contains(args, "%d") {
			args = fmt.Sprintf(args, call)
		}
		req := db.CheckRequest{CallID: fmt.Sprint(round, "c", call), User: f.user.Subject, ConversationID: "conv", TurnID: turn,
			Connector: "mail", Tool: "send_email", Arguments: args}
		// What the runtime says and its diff, or nothing, differ per check.
		if i%3 != 0 {
			req.Runtime = approval.Runtime{Client: fmt.Sprint("client ", i), Host: "host", WorkingDirectory: fmt.Sprint("/w/", i)}
			req.Diff = fmt.Sprintf("--- f\n+++ f\n@@ -1 +1 @@\n-%d\n+%d\n", i, i+1)
		}
		return req
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := f.store.Check(ctx, f.key, request(i), db.CheckOptions{Timeout: time.Minute, DeniedThreshold: 2})
			answers[i].err = err
			if err == nil {
				if res.Outcome.Verdict != approval.Pending || res.Approval == nil {
					answers[i].err = fmt.Errorf("outcome %+v", res.Outcome)
					return
				}
				answers[i].id, answers[i].a = res.Approval.ID, *res.Approval
			}
		})
	}
	wg.Wait()

	created := map[string]bool{}
	for i := range n {
		req, a := request(i), answers[i]
		poison := strings.HasPrefix(req.TurnID, "poison")
		switch {
		case poison && a.err == nil:
			t.Fatalf("check %d was answered with item %s though its audit line was refused", i, a.id)
		case poison:
			continue
		case a.err != nil:
			t.Fatalf("check %d: %v", i, a.err)
		}
		created[a.id] = true
		// The check answers with the item as every reader sees it.
		stored, err := f.store.ApprovalForKey(ctx, a.id, f.key)
		if err != nil {
			t.Fatal(err)
		}
		stored.ExpiresIn, a.a.ExpiresIn = 0, 0
		if !reflect.DeepEqual(stored, a.a) {
			t.Fatalf("check %d answered with\n%+v\nbut stored\n%+v", i, a.a, stored)
		}
		if stored.RuntimeClient != req.Runtime.Client || stored.RuntimeDirectory != req.Runtime.WorkingDirectory ||
			(req.Diff == "") != (stored.Diff == nil) || (stored.Diff != nil && stored.Diff.Files[0].Hunks[0].Lines[0].Text != fmt.Sprint(i)) {
			if !(twice && (i/2)%5 == 0) { // a call sent twice keeps the first check's words
				t.Fatalf("check %d: stored runtime %q %q, diff %+v", i, stored.RuntimeClient, stored.RuntimeDirectory, stored.Diff)
			}
		}
		var turn, call string
		var texts, outbox, lines int
		if err := f.store.Pool.QueryRow(ctx, `SELECT a.turn_id, a.call_id,
				(SELECT count(*) FROM approval_arguments x WHERE x.approval_id = a.id),
				(SELECT count(*) FROM notification_events e WHERE e.approval_id = a.id AND e.kind = $2),
				(SELECT count(*) FROM audit_events v WHERE v.approval_id = a.id::text AND v.action = $3)
			FROM approvals a WHERE a.id = $1::uuid AND a.status = 'pending'`, a.id, db.EventApprovalRequested,
			approval.ActionRequested).Scan(&turn, &call, &texts, &outbox, &lines); err != nil {
			t.Fatalf("check %d's item %s: %v", i, a.id, err)
		}
		if turn != req.TurnID || call != req.CallID || texts != 1 || outbox != 1 || lines != 1 {
			t.Fatalf("check %d's item %s: turn %q call %q, %d full texts, %d outbox events, %d audit lines",
				i, a.id, turn, call, texts, outbox, lines)
		}
	}
	for k := 0; twice && k < n/2; k += 5 {
		first, second := answers[2*k], answers[2*k+1]
		if first.err == nil && second.err == nil && first.id != second.id {
			t.Fatalf("the same call got two items: %s and %s", first.id, second.id)
		}
	}
	var items, refused, transactions int
	if err := f.store.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM approvals WHERE status = 'pending' AND turn_id LIKE $2),
			(SELECT count(*) FROM approvals WHERE turn_id LIKE 'poison%'),
			(SELECT count(DISTINCT xid) FROM audit_events WHERE action = $1 AND turn_id LIKE $2)`, approval.ActionRequested, round+"%").
		Scan(&items, &refused, &transactions); err != nil {
		t.Fatal(err)
	}
	if items != len(created) || refused != 0 {
		t.Fatalf("%d pending items stored, %d answered; %d of refused checks", items, len(created), refused)
	}
	if !poisoned && !twice && transactions >= items {
		t.Fatalf("%d items in %d transactions: none were written together", items, transactions)
	}
	// Every item was announced, after its commit.
	announced := map[string]bool{}
	for len(announced) < len(created) {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		nt, err := listener.WaitForNotification(wctx)
		cancel()
		if err != nil {
			t.Fatalf("%d of %d items announced: %v", len(announced), len(created), err)
		}
		var ch db.Change
		if err := json.Unmarshal([]byte(nt.Payload), &ch); err != nil {
			t.Fatal(err)
		}
		for _, id := range append(ch.ApprovalIDs, ch.ApprovalID) {
			if id != "" && !created[id] {
				t.Fatalf("announced %s, which no check was answered with", id)
			}
			announced[id] = true
		}
		delete(announced, "")
	}
}

// A check whose caller went away while it waited for the group writer is
// not written: no item appears that nobody waits for. The others are.
func TestGroupSkipsChecksWhoseCallerLeft(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	// An open transaction holds the tool's row, so that the first group
	// waits in hold_tool_policy and the next check stays queued.
	req := f.groupRequest
	admin, first := f.firstGroupWaits(t, "stays")
	leaving, leave := context.WithCancel(ctx)
	second := make(chan error, 1)
	go func() {
		_, err := f.store.OpenPendingGroupedUnder(leaving, f.key, req("leaves"), f.tool)
		second <- err
	}()
	waitFor(t, func() bool { return f.store.WritesQueued() == 1 }) // queued behind the first group
	leave()
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Fatalf("the check whose caller left: %v", err)
	}
	if err := admin.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatalf("the check that stayed: %v", err)
	}
	// A third check is written after the skipped one was taken off the queue.
	if _, err := f.store.OpenPendingGroupedUnder(ctx, f.key, req("after"), f.tool); err != nil {
		t.Fatal(err)
	}
	var calls []string
	rows, err := f.store.Pool.Query(ctx, `SELECT call_id FROM approvals ORDER BY call_id`)
	if err != nil {
		t.Fatal(err)
	}
	calls, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(calls, []string{"after", "stays"}) {
		t.Fatalf("items stored for calls %v; want after and stays only", calls)
	}
}

// groupRequest is a pending call of the fixture's tool.
func (f *blockFixture) groupRequest(call string) db.CheckRequest {
	return db.CheckRequest{CallID: call, User: f.user.Subject, ConversationID: "conv", TurnID: "t",
		Connector: "mail", Tool: "send_email", Arguments: `{"n":1}`}
}

// firstGroupWaits holds the tool's row and starts a pending check whose
// group then waits for it in hold_tool_policy, so that checks started
// meanwhile queue into the next group. It returns the transaction holding
// the row and the first check's answer.
func (f *blockFixture) firstGroupWaits(t *testing.T, call string) (pgx.Tx, <-chan error) {
	t.Helper()
	ctx := context.Background()
	admin := f.lockTool(t)
	first := make(chan error, 1)
	go func() {
		_, err := f.store.OpenPendingGroupedUnder(ctx, f.key, f.groupRequest(call), f.tool)
		first <- err
	}()
	waitFor(t, func() bool {
		var n int
		_ = f.store.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&n)
		return n > 0
	})
	return admin, first
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A group that holds a check read under an old policy and one whose text
// cannot be stored, beside a valid one, is written again one check at a
// time: the valid check gets its item, and each of the others its own
// refusal.
func TestGroupRefusalsStayWithTheirCheck(t *testing.T) {
	f := newBlockFixture(t)
	ctx := context.Background()
	stale := f.tool
	f.setMode(t, approval.ModeAllow)
	f.setMode(t, approval.ModeRequireApproval)
	req := f.groupRequest
	admin, first := f.firstGroupWaits(t, "first") // the next three checks queue together
	nul := req("nul")
	nul.ConversationTitle = "a\x00b"
	type answer struct {
		res db.CheckResult
		err error
	}
	answers := make([]chan answer, 3)
	for i, c := range []struct {
		req  db.CheckRequest
		tool db.Tool
	}{{req("valid"), f.tool}, {req("stale"), stale}, {nul, f.tool}} {
		answers[i] = make(chan answer, 1)
		go func() {
			res, err := f.store.OpenPendingGroupedUnder(ctx, f.key, c.req, c.tool)
			answers[i] <- answer{res, err}
		}()
	}
	waitFor(t, func() bool { return f.store.WritesQueued() == 3 }) // queued behind the first group
	if err := admin.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	valid, staleA, nulA := <-answers[0], <-answers[1], <-answers[2]
	if valid.err != nil || valid.res.Approval == nil || valid.res.Approval.CallID != "valid" {
		t.Fatalf("the valid check beside refused ones: %+v %v", valid.res.Approval, valid.err)
	}
	if !errors.Is(staleA.err, db.ErrToolChanged) {
		t.Fatalf("the check read under the old policy: %v", staleA.err)
	}
	if nulA.err == nil {
		t.Fatal("a title holding NUL was stored")
	}
	var calls []string
	rows, err := f.store.Pool.Query(ctx, `SELECT call_id FROM approvals ORDER BY call_id`)
	if err != nil {
		t.Fatal(err)
	}
	if calls, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(calls, []string{"first", "valid"}) {
		t.Fatalf("items stored for calls %v; want first and valid", calls)
	}
}
