package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/countersign/countersign/dev"
)

// Delegation, end to end with real sign-ins: before Maya names Sam he gets
// 404 on her item; during the period he sees it (inbox and request page,
// "Deciding for Maya"), may approve once or reject but give no standing
// consent in her name, and his decision's audit line names both; once the
// period ends (by its time, or ended early) he gets 404 again.
func TestDelegation(t *testing.T) {
	l := newLoop(t)
	sam := l.signInSam(t)
	ctx := context.Background()

	first := l.pending(t, l.call("mail", "send_email", `{"to":"a@example.org"}`))
	if resp, _ := sam.Get("/approvals/" + first); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("before the delegation Sam saw Maya's item: %d", resp.StatusCode)
	}
	if s, _ := decide(sam, first, "approve"); s != http.StatusNotFound {
		t.Fatalf("before the delegation Sam decided: %d", s)
	}

	if resp, _ := l.Member.PostForm("/settings/away", url.Values{"delegate_email": {demoSam.Email}, "until": {awayUntil(3 * time.Hour)}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("start: %d", resp.StatusCode)
	}
	_, inbox := sam.Get("/")
	if !contains(inbox, first) || !contains(inbox, `data-testid="deciding-for"`) || !contains(inbox, "Maya Member") {
		t.Fatalf("Sam's inbox during the delegation:\n%s", inbox)
	}
	resp, page := sam.Get("/approvals/" + first)
	if resp.StatusCode != http.StatusOK || !contains(page, "Deciding for") || contains(page, `value="always"`) || contains(page, `value="approve_conversation"`) {
		t.Fatalf("Sam's request page: %d\n%s", resp.StatusCode, page)
	}
	if _, own := l.Member.Get("/approvals/" + first); contains(own, "Deciding for") || !contains(own, `value="always"`) {
		t.Fatal("Maya's own card changed")
	}
	if s, body := decide(sam, first, "always"); s != http.StatusUnprocessableEntity {
		t.Fatalf("a delegate's standing consent: %d\n%s", s, body)
	}
	if s, body := decide(sam, first, "approve"); s != http.StatusOK && s != http.StatusSeeOther {
		t.Fatalf("Sam's approval: %d\n%s", s, body)
	}
	if st := l.status(t, first); st != "approved" {
		t.Fatalf("status %s", st)
	}
	if n := count(t, l.Env, `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND action = 'approved'
		AND actor_id = 'demo-sam' AND detail->>'on_behalf_of' = 'demo-member' AND detail->>'on_behalf_of_name' = 'Maya Member'`, first); n != 1 {
		t.Fatalf("audit lines naming both: %d", n)
	}
	if n := count(t, l.Env, `SELECT count(*) FROM standing_grants`); n != 0 {
		t.Fatalf("standing grants after the delegate's decisions: %d", n)
	}

	// The period ends by its time: the predicate compares now() with it.
	second := l.pending(t, l.call("mail", "send_email", `{"to":"b@example.org"}`))
	if resp, _ := sam.Get("/approvals/" + second); resp.StatusCode != http.StatusOK {
		t.Fatalf("during the period: %d", resp.StatusCode)
	}
	if _, err := l.DB.Pool.Exec(ctx, `UPDATE delegations SET ends_at = now() + interval '1 second' WHERE ended_at IS NULL`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond)
	if resp, _ := sam.Get("/approvals/" + second); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("after the period Sam saw Maya's item: %d", resp.StatusCode)
	}
	if s, _ := decide(sam, second, "reject"); s != http.StatusNotFound {
		t.Fatalf("after the period Sam decided: %d", s)
	}
	if _, inbox := sam.Get("/"); contains(inbox, second) {
		t.Fatal("after the period the item is in Sam's inbox")
	}
	if resp, _ := sam.Get("/approvals/" + first); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("after the period Sam still sees the item he decided: %d", resp.StatusCode)
	}

	// Ended early on Settings: the same.
	if resp, _ := l.Member.PostForm("/settings/away", url.Values{"delegate_email": {demoSam.Email}, "until": {awayUntil(3 * time.Hour)}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("start again: %d", resp.StatusCode)
	}
	if resp, _ := sam.Get("/approvals/" + second); resp.StatusCode != http.StatusOK {
		t.Fatalf("during the second period: %d", resp.StatusCode)
	}
	maya := l.User(dev.DemoMember.Subject)
	d, _, _ := l.DB.DelegationOf(ctx, maya.ID)
	if resp, _ := l.Member.PostForm("/settings/away/"+itoa(d.ID)+"/end", url.Values{}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("end: %d", resp.StatusCode)
	}
	if resp, _ := sam.Get("/approvals/" + second); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("after ending early Sam saw Maya's item: %d", resp.StatusCode)
	}
}

// No chains: Tess, Sam's delegate, inherits nothing of what Sam decides
// for Maya.
func TestDelegationNoChain(t *testing.T) {
	l := newLoop(t)
	sam := l.signInSam(t)
	tess := dev.DemoUser{Key: "tess", Subject: "demo-tess", Email: "tess@example.com", Name: "Tess Third", Role: "member"}
	l.IdP.AddUser(tess)
	tb := l.NewBrowser()
	tb.SignIn(tess.Key)
	if resp, _ := l.Member.PostForm("/settings/away", url.Values{"delegate_email": {demoSam.Email}, "until": {awayUntil(time.Hour)}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("Maya → Sam: %d", resp.StatusCode)
	}
	if resp, _ := sam.PostForm("/settings/away", url.Values{"delegate_email": {tess.Email}, "until": {awayUntil(time.Hour)}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("Sam → Tess: %d", resp.StatusCode)
	}
	item := l.pending(t, l.call("mail", "send_email", `{"to":"a@example.org"}`))
	if resp, _ := sam.Get("/approvals/" + item); resp.StatusCode != http.StatusOK {
		t.Fatalf("Sam: %d", resp.StatusCode)
	}
	if resp, _ := tb.Get("/approvals/" + item); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("Tess inherited Sam's delegation: %d", resp.StatusCode)
	}
	if s, _ := decide(tb, item, "approve"); s != http.StatusNotFound {
		t.Fatalf("Tess decided: %d", s)
	}
}

// A delegate never counts beside the person they stand in for: Sam decides
// a finance quorum item in Maya's place, under her subject, so that his
// vote and hers are one (approval_votes is one row per subject). Votes are
// recorded under countersign_deciding_for's subject.
func TestDelegationQuorumOneVoteForThePair(t *testing.T) {
	l := newLoop(t)
	l.signInSam(t)
	ctx := context.Background()
	if resp, _ := l.Member.PostForm("/settings/away", url.Values{"delegate_email": {demoSam.Email}, "until": {awayUntil(time.Hour)}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("start: %d", resp.StatusCode)
	}
	call := l.call("mail", "send_email", `{"to":"a@example.org"}`)
	call["user"] = "demo-fiona" // Fiona's agent asks; two of finance must approve
	item := l.pending(t, call)
	for _, s := range []string{`INSERT INTO teams (name, source) VALUES ('finance', 'admin') ON CONFLICT DO NOTHING`,
		`INSERT INTO team_members (team, subject, source) VALUES ('finance', 'demo-member', 'admin'), ('finance', 'demo-finn', 'admin') ON CONFLICT DO NOTHING`,
		`UPDATE approvals SET deciders = 'quorum', decider_team = 'finance', quorum = 2 WHERE id = '` + item + `'`} {
		if _, err := l.DB.Pool.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	vote := func(viewer string) error {
		_, err := l.DB.Pool.Exec(ctx, `INSERT INTO approval_votes (approval, subject, decision)
			SELECT a.id, countersign_deciding_for(a, $2), 'approve' FROM approvals a WHERE a.id = $1
			AND countersign_may_decide(a, $2)`, item, viewer)
		return err
	}
	if err := vote("demo-member"); err != nil {
		t.Fatal(err)
	}
	if err := vote("demo-sam"); err == nil {
		t.Fatal("Sam's vote for Maya counted beside hers")
	}
	if err := vote("demo-finn"); err != nil {
		t.Fatal(err)
	}
	if n := count(t, l.Env, `SELECT count(*) FROM approval_votes WHERE approval = $1`, item); n != 2 {
		t.Fatalf("votes: %d, want Maya's (or Sam's for her) and Finn's", n)
	}
	var who string
	if err := l.DB.Pool.QueryRow(ctx, `SELECT countersign_deciding_for(a, 'demo-sam') FROM approvals a WHERE a.id = $1`, item).Scan(&who); err != nil || who != "demo-member" {
		t.Fatalf("Sam decides for %q %v", who, err)
	}
}
