package db_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
)

// The checks of a tool known to ask a person are read together too, each
// with its own turn's facts in the same statement: the checks that arrive
// while a read is in flight are one statement, none reads its facts apart,
// and each is decided on its own facts (two rejections in its turn refuse
// one; the others each open their own item).
func TestAskingChecksReadTogether(t *testing.T) {
	f := newBlockFixture(t)
	f.store.SetMaxFactReaders(1)
	ctx := context.Background()
	raw := f.runtimeKey(t)
	call := func(id, args string) db.CheckRequest {
		return db.CheckRequest{CallID: id, TurnID: "turn", Tool: "send_email", Arguments: args}
	}
	// The first check learns that the tool asks; two rejections of the same
	// arguments in the turn follow.
	for _, id := range []string{"r1", "r2"} {
		res, err := f.keyCheck(ctx, raw, call(id, `{"n":"rejected"}`))
		if err != nil || res.Approval == nil {
			t.Fatalf("%s: %v %+v", id, err, res.Outcome)
		}
		if _, err := f.store.Decide(ctx, res.Approval.ID, f.user, approval.Reject, "no"); err != nil {
			t.Fatal(err)
		}
	}
	if !f.store.ReadsFactsFirst("mail", "send_email") {
		t.Fatal("the tool is not known to ask")
	}
	before, apart := f.store.GroupStats(), f.store.FactsReadApart()
	release := holdReads(t, f)
	first := goCheck(ctx, f, raw, call("c0", `{"n":0}`))
	waitingReads(t, f, 1) // the first is read at once, alone
	var rest []chan checkAnswer
	for n := 1; n <= 4; n++ {
		rest = append(rest, goCheck(ctx, f, raw, call(fmt.Sprint("c", n), fmt.Sprintf(`{"n":%d}`, n))))
	}
	refused := goCheck(ctx, f, raw, call("r3", `{"n":"rejected"}`))
	awaitCount(t, "checks queued for the next read with their facts", f.store.FactReadsQueued, 5)
	release()
	items := map[string]bool{}
	for i, c := range append([]chan checkAnswer{first}, rest...) {
		a := answer(t, c)
		if a.err != nil || a.res.Outcome.Verdict != approval.Pending || a.res.Approval == nil || items[a.res.Approval.ID] {
			t.Fatalf("check %d: %v %+v", i, a.err, a.res.Outcome)
		}
		items[a.res.Approval.ID] = true
	}
	if a := answer(t, refused); a.err != nil || a.res.Outcome.Verdict != approval.Deny || a.res.Outcome.Code != approval.CodeDeniedRepeated {
		t.Fatalf("the call rejected twice in its turn: %v %+v", a.err, a.res.Outcome)
	}
	if d := f.store.GroupStats().Since(before); d.ReadGroups != 2 || d.Reads != 6 {
		t.Fatalf("6 checks read by %d statements carrying %d, want 2 carrying 6", d.ReadGroups, d.Reads)
	}
	if n := f.store.FactsReadApart() - apart; n != 0 {
		t.Fatalf("%d checks read their facts apart, want none", n)
	}
}
