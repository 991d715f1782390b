package db_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
)

// A stopped turn in the joining guard's runtime ends the call for both
// guards: the person stopped this very call, so the item it joined
// (pending, or approved and not used yet) is cancelled and can no longer
// be approved or claimed by either guard — one call, one end. Another
// conversation's or turn's cancel, or a key that did not join, ends
// nothing.
func TestSecondGuardStoppedTurnEndsTheJoinedCall(t *testing.T) {
	ctx := context.Background()
	for _, approvedFirst := range []bool{false, true} {
		name := map[bool]string{false: "Pending", true: "ApprovedNotClaimed"}[approvedFirst]
		t.Run(name, func(t *testing.T) {
			f := newJoinFixture(t)
			a := f.pendingItem(t, f.gwKey, f.gw)
			if res := f.check(t, f.hookKey, f.hook); res.Approval == nil || res.Approval.ID != a.ID {
				t.Fatalf("join: %+v", res.Approval)
			}
			if approvedFirst {
				f.approve(t, a.ID)
			}
			hook := f.keyOf(t, f.hookKey)
			for _, c := range [][2]string{{"session-2", f.hook.TurnID}, {f.hook.ConversationID, "prompt-2"}} {
				if n, err := f.store.CancelTurn(ctx, hook, f.user.Subject, c[0], c[1]); err != nil || n != 0 {
					t.Fatalf("cancel of %v ended %d items (%v)", c, n, err)
				}
			}
			other := f.keyOf(t, f.personKey(t, "unrelated", f.user))
			if n, err := f.store.CancelTurn(ctx, other, f.user.Subject, f.hook.ConversationID, f.hook.TurnID); err != nil || n != 0 {
				t.Fatalf("a key that did not join ended %d items (%v)", n, err)
			}
			n, err := f.store.CancelTurn(ctx, hook, f.user.Subject, f.hook.ConversationID, f.hook.TurnID)
			if err != nil || n != 1 {
				t.Fatalf("the joined guard's stopped turn ended %d items (%v), want the joined one", n, err)
			}
			if !approvedFirst {
				if _, err := f.store.Answer(ctx, a.ID, f.user, db.Answer{Decision: approval.Approve}); err == nil {
					t.Fatal("a call stopped in the joined guard's runtime was approved")
				}
			}
			if _, err := f.claim(t, f.gwKey, a, f.gw); approval.KindOf(err) != approval.KindConflict {
				t.Fatalf("the first guard claimed a call stopped in the other runtime: %v", err)
			}
			if _, err := f.claim(t, f.hookKey, a, f.hook); approval.KindOf(err) != approval.KindConflict {
				t.Fatalf("the joined guard claimed its stopped call: %v", err)
			}
			if n := f.count(t, `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND action = 'cancelled' AND actor_id = $2`, a.ID, fmt.Sprint(hook.ID)); n != 1 {
				t.Fatalf("%d cancel lines naming the joined guard's key", n)
			}
		})
	}
}

// Two second guards racing for one approved item (each its own key of the
// same person, checking at the same moment): exactly one joins and runs;
// the other is asked anew. The same guard's check sent twice at once runs
// once.
func TestSecondGuardJoinRace(t *testing.T) {
	for _, sameGuard := range []bool{false, true} {
		name := map[bool]string{false: "TwoGuards", true: "OneGuardTwice"}[sameGuard]
		t.Run(name, func(t *testing.T) {
			f := newJoinFixture(t)
			a := f.approvedAndClaimed(t)
			keys := []string{f.gwKey, f.personKey(t, "another gateway", f.user)}
			reqs := []db.CheckRequest{f.gw, f.gw}
			if sameGuard {
				keys[1] = f.gwKey
			} else {
				reqs[1].ConversationID = "mcp/mail/ffff"
			}
			const rounds = 4
			results := make([]db.CheckResult, 2*rounds)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range results {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					<-start
					res, _, err := f.store.CheckWithAPIKey(context.Background(), keys[i%2], reqs[i%2], joinOpt)
					if err != nil {
						t.Errorf("check %d: %v", i, err)
					}
					results[i] = res
				}(i)
			}
			close(start)
			wg.Wait()
			allowed := 0
			for _, r := range results {
				if r.Outcome.Verdict == approval.Allow {
					if r.Approval == nil || r.Approval.ID != a.ID || r.Outcome.Via != approval.ViaJoined {
						t.Fatalf("allowed otherwise than by the join: %+v", r.Outcome)
					}
					allowed++
				}
			}
			if allowed != 1 {
				t.Fatalf("%d checks ran on one approval's second use, want 1", allowed)
			}
			if n := f.count(t, `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND action = 'claimed'`, a.ID); n != 2 {
				t.Fatalf("%d claim lines, want the first guard's and one joined guard's", n)
			}
		})
	}
}

// The first guard's item waits; it attached the model's retry of the same
// call (a new call id); the second guard asks under the retried id, joins
// the pending item, and once the person approves, claims it under that id —
// once, and never under an id nobody attached.
func TestSecondGuardClaimsUnderTheRetriedCallID(t *testing.T) {
	f := newJoinFixture(t)
	a := f.pendingItem(t, f.hookKey, f.hook)
	retry := f.hook
	retry.CallID, retry.TurnID = "toolu_02", "prompt-2"
	if res := f.check(t, f.hookKey, retry); res.Approval == nil || res.Approval.ID != a.ID {
		t.Fatalf("the hook's retry did not attach: %+v", res.Approval)
	}
	f.gw.CallID = "toolu_02"
	if res := f.check(t, f.gwKey, f.gw); res.Outcome.Verdict != approval.Pending || res.Approval == nil || res.Approval.ID != a.ID {
		t.Fatalf("the gateway under the retried id did not join: %+v %+v", res.Outcome, res.Approval)
	}
	f.approve(t, a.ID)
	stranger := f.gw
	stranger.CallID = "toolu_03"
	if _, err := f.claim(t, f.gwKey, a, stranger); approval.KindOf(err) != approval.KindConflict {
		t.Fatalf("a claim under an id nobody attached: %v", err)
	}
	if got, err := f.claim(t, f.gwKey, a, f.gw); err != nil || got.Status != approval.StatusConsumed {
		t.Fatalf("the joined guard's claim under its own call id: %+v %v", got.Status, err)
	}
	if _, err := f.claim(t, f.gwKey, a, f.gw); approval.KindOf(err) != approval.KindConflict {
		t.Fatalf("a second claim: %v", err)
	}
}

// More that never rides the first guard's approval: the first guard's key
// revoked since, the tool's policy changed since (another policy version),
// a passkey step-up asked of an item a session approved, and a team's key
// of the same person.
func TestSecondGuardJoinRefusedSince(t *testing.T) {
	ctx := context.Background()
	t.Run("FirstKeyRevoked", func(t *testing.T) {
		f := newJoinFixture(t)
		a := f.approvedAndClaimed(t)
		if err := f.store.RevokeAPIKey(ctx, f.keyOf(t, f.hookKey).ID, f.user); err != nil {
			t.Fatal(err)
		}
		asksAnew(t, "an item of a revoked key", f.check(t, f.gwKey, f.gw), a)
	})
	t.Run("PolicyChanged", func(t *testing.T) {
		f := newJoinFixture(t)
		a := f.approvedAndClaimed(t)
		if _, err := f.store.SetToolPolicy(ctx, approval.SystemActor, "mail", "send_email",
			approval.Policy{Mode: approval.ModeRequireApproval}); err != nil {
			t.Fatal(err)
		}
		asksAnew(t, "an item under an earlier policy", f.check(t, f.gwKey, f.gw), a)
	})
	t.Run("PasskeyAskedOfASessionApproval", func(t *testing.T) {
		f := newJoinFixture(t)
		a := f.approvedAndClaimed(t)
		f.gw.Proof = approval.ProofPasskey
		res := f.check(t, f.gwKey, f.gw)
		if res.Outcome.Verdict == approval.Allow || (res.Approval != nil && res.Approval.ID == a.ID) {
			t.Fatalf("a passkey step-up rode a session approval: %+v", res.Outcome)
		}
	})
	t.Run("TeamKeyOfTheSamePerson", func(t *testing.T) {
		f := newJoinFixture(t)
		a := f.approvedAndClaimed(t)
		raw, _, err := f.store.CreateAPIKeyWith(ctx, "service", &f.user, db.APIKeyOptions{Team: "ops"})
		if err != nil {
			t.Fatal(err)
		}
		asksAnew(t, "a team's key", f.check(t, raw, f.gw), a)
	})
}

// Both guards' claims of one joined approval sent many times at once: each
// guard's claim succeeds once, whatever the order — two runs, one per
// guard, never more.
func TestSecondGuardClaimRace(t *testing.T) {
	f := newJoinFixture(t)
	a := f.pendingItem(t, f.gwKey, f.gw)
	if res := f.check(t, f.hookKey, f.hook); res.Approval == nil || res.Approval.ID != a.ID {
		t.Fatalf("join: %+v", res.Approval)
	}
	f.approve(t, a.ID)
	gw, hook := f.keyOf(t, f.gwKey), f.keyOf(t, f.hookKey)
	const rounds = 4
	var mu sync.Mutex
	won := map[int64]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 2*rounds; i++ {
		key, req := gw, f.gw
		if i%2 == 1 {
			key, req = hook, f.hook
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := f.store.Claim(context.Background(), key, a.ID, req.CallID, approval.Digest(req.Arguments))
			switch {
			case err == nil:
				mu.Lock()
				won[key.ID]++
				mu.Unlock()
			case approval.KindOf(err) != approval.KindConflict:
				t.Errorf("claim: %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if won[gw.ID] != 1 || won[hook.ID] != 1 {
		t.Fatalf("claims that succeeded per guard: %v, want one each", won)
	}
}
