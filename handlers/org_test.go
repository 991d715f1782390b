package handlers_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/notify"
)

// orgLoop is the organisation of the dev provider, signed in for real:
// Maya (finance, platform; her agent asks), Finn and Fiona (finance), Sam
// (platform); payments.send needs two of finance when args.amount >
// 10000; a platform service agent's key deploys.
type orgLoop struct {
	*loop
	Finn, Fiona, Sam *testenv.Browser
	TeamKey          string
}

func newOrgLoop(t *testing.T) *orgLoop {
	t.Helper()
	l := &orgLoop{loop: newLoop(t)}
	ctx := context.Background()
	for key, b := range map[string]**testenv.Browser{"finn": &l.Finn, "fiona": &l.Fiona, "sam": &l.Sam} {
		*b = l.NewBrowser()
		(*b).SignIn(key)
	}
	err := l.Client.SyncConnector(ctx, "payments", client.Connector{DisplayName: "Payments", Kind: "connector",
		Tools: []client.ConnectorTool{{Name: "send", DisplayName: "Send payment"}, {Name: "deploy", DisplayName: "Deploy service"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.DB.SetToolPolicy(ctx, approval.SystemActor, "payments", "send", approval.Policy{Mode: approval.ModeRequireApproval,
		StandingApproval: true, Rule: approval.DeciderRule{Deciders: approval.DecidersQuorum, Team: "finance", Quorum: 2},
		DecidersCondition: "args.amount > 10000"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.DB.SetToolPolicy(ctx, approval.SystemActor, "payments", "deploy", approval.Policy{Mode: approval.ModeRequireApproval,
		StandingApproval: true}); err != nil {
		t.Fatal(err)
	}
	if l.TeamKey, _, err = l.DB.CreateAPIKeyWith(ctx, "deploy bot", nil, db.APIKeyOptions{Team: "platform"}); err != nil {
		t.Fatal(err)
	}
	return l
}

// payment is Maya's agent asking to send amount.
func (l *orgLoop) payment(t *testing.T, amount int) string {
	t.Helper()
	return l.pending(t, l.call("payments", "send", fmt.Sprintf(`{"amount": %d, "to": "ACME-%d"}`, amount, l.n.Add(1))))
}

// deploy is the platform service agent asking, without a user.
func (l *orgLoop) deploy(t *testing.T) string {
	t.Helper()
	n := l.n.Add(1)
	status, out := l.API(l.TeamKey, http.MethodPost, "/api/v1/tool-calls", map[string]any{"call_id": fmt.Sprint("deploy-", n),
		"conversation_id": "nightly", "turn_id": "t1", "connector": "payments", "tool": "deploy",
		"arguments": fmt.Sprintf(`{"service": "DEPLOY-MARK-%d"}`, n)})
	if status != http.StatusOK || out["decision"] != "pending" {
		t.Fatalf("team key's check: %d %v", status, out)
	}
	return out["approval"].(map[string]any)["id"].(string)
}

func TestQuorumFlow(t *testing.T) {
	l := newOrgLoop(t)

	t.Run("OKTwoOfFinanceThenClaimOnce", func(t *testing.T) {
		id := l.payment(t, 25000)
		fionaStream := openViewerStream(t, l.Fiona, "/events?with=count")
		fionaStream.waitFor(t, id)
		if status, _, _ := page(t, l.Member, id); status != http.StatusNotFound {
			t.Fatalf("Maya (her own agent, two-person rule) opens it: %d", status)
		}
		if status, _ := decide(l.Member, id, "approve"); status != http.StatusNotFound {
			t.Fatalf("Maya approving alone: %d, want 404", status)
		}
		_, d, _ := page(t, l.Finn, id)
		if got := testid(d, "deciders"); !strings.Contains(got, "two of finance") || !strings.Contains(got, "0 of 2 approved") {
			t.Fatalf("who decides: %q", got)
		}
		if status, body := decide(l.Finn, id, "approve"); status != http.StatusSeeOther {
			t.Fatalf("Finn approves: %d %s", status, body)
		}
		_, d, _ = page(t, l.Finn, id)
		if got := testid(d, "quorum-progress"); got != "1 of 2 approved" {
			t.Fatalf("after Finn: %q", got)
		}
		// Fiona's open inbox hears of it live, in place.
		fionaStream.waitFor(t, "event: progress")
		fionaStream.waitFor(t, `id="quorum-progress-`+id+`" data-testid="quorum-progress" hx-swap-oob="true">1 of 2 approved`)
		if !d.has(`data-testid="you-approved"`) || d.has(`name="decision" value="approve"`) {
			t.Fatal("Finn's card still offers Approve after his approval")
		}
		_, d, _ = page(t, l.Fiona, id)
		if got := testid(d, "quorum-progress"); got != "1 of 2 approved" || !d.has(`data-testid="deciders"(?s:.){0,600}?Finn Finance`) {
			t.Fatalf("Fiona sees %q", testid(d, "deciders"))
		}
		if status, _ := decide(l.Finn, id, "approve"); status != http.StatusConflict {
			t.Fatalf("Finn again: %d, want 409", status)
		}
		if l.status(t, id) != "pending" {
			t.Fatal("one approval of two decided it")
		}
		if status, body := decide(l.Fiona, id, "approve"); status != http.StatusSeeOther {
			t.Fatalf("Fiona approves: %d %s", status, body)
		}
		if l.status(t, id) != "approved" {
			t.Fatalf("after two approvals: %s", l.status(t, id))
		}
		var a struct {
			CallID, Digest string
		}
		if err := l.DB.Pool.QueryRow(context.Background(), `SELECT call_id, arguments_digest FROM approvals WHERE id = $1`, id).Scan(&a.CallID, &a.Digest); err != nil {
			t.Fatal(err)
		}
		status, out := l.API(l.Key, http.MethodPost, "/api/v1/approvals/"+id+"/claim", map[string]any{"call_id": a.CallID, "arguments_digest": a.Digest})
		if status != http.StatusOK || fmt.Sprint(out["decided_by"]) != "[Finn Finance Fiona Finance]" {
			t.Fatalf("claim: %d %v", status, out["decided_by"])
		}
		if status, _ := l.API(l.Key, http.MethodPost, "/api/v1/approvals/"+id+"/claim", map[string]any{"call_id": a.CallID, "arguments_digest": a.Digest}); status != http.StatusConflict {
			t.Fatalf("second claim: %d", status)
		}
		if n := l.auditCount(t, id, approval.ActionApproved); n != 2 {
			t.Fatalf("%d approved lines, want one per approval", n)
		}
	})

	t.Run("OKSmallPaymentOwnerDecides", func(t *testing.T) {
		id := l.payment(t, 50)
		if status, _ := decide(l.Finn, id, "approve"); status != http.StatusNotFound {
			t.Fatalf("Finn on Maya's small payment: %d", status)
		}
		if status, _ := decide(l.Member, id, "approve"); status != http.StatusSeeOther {
			t.Fatalf("Maya on her small payment: %d", status)
		}
	})

	t.Run("OKRejectByEitherEndsIt", func(t *testing.T) {
		for _, order := range [][2]*testenv.Browser{{l.Finn, l.Fiona}, {l.Fiona, l.Finn}} {
			id := l.payment(t, 30000)
			if status, _ := decide(order[0], id, "approve"); status != http.StatusSeeOther {
				t.Fatal(status)
			}
			if status, _ := decide(order[1], id, "reject", "reason", "not this month"); status != http.StatusSeeOther {
				t.Fatal(status)
			}
			if l.status(t, id) != "rejected" {
				t.Fatalf("after a rejection: %s", l.status(t, id))
			}
		}
	})

	t.Run("OKBatchApprovalIsOneVote", func(t *testing.T) {
		id := l.payment(t, 50000)
		resp, body := l.Finn.PostForm("/approvals/batch", url.Values{"id": {id}, "decision": {"approve"}})
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Your approval is in — 1 of 2 approved") {
			t.Fatalf("batch: %d %s", resp.StatusCode, body)
		}
		if l.status(t, id) != "pending" {
			t.Fatalf("one approval in a batch decided a two-person call: %s", l.status(t, id))
		}
	})

	t.Run("ErrTwentyConcurrentApprovalsCountOnce", func(t *testing.T) {
		id := l.payment(t, 40000)
		var wg sync.WaitGroup
		codes := make([]int, 20)
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i], _ = decide(l.Finn, id, "approve")
			}()
		}
		wg.Wait()
		won := 0
		for _, c := range codes {
			switch c {
			case http.StatusSeeOther:
				won++
			case http.StatusConflict:
			default:
				t.Errorf("a concurrent approval answered %d", c)
			}
		}
		if won != 1 || l.status(t, id) != "pending" || l.auditCount(t, id, approval.ActionApproved) != 1 {
			t.Fatalf("%d recorded, status %s, %d lines; want 1, pending, 1", won, l.status(t, id), l.auditCount(t, id, approval.ActionApproved))
		}
	})
}

// stream collects every event of b's stream at path until the test ends.
type stream struct {
	mu   sync.Mutex
	text strings.Builder
	seen chan struct{}
}

func openViewerStream(t *testing.T, b *testenv.Browser, path string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.Env.BaseURL+path, nil)
	resp, err := b.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream %s: %d", path, resp.StatusCode)
	}
	s := &stream{seen: make(chan struct{}, 64)}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			s.mu.Lock()
			s.text.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			select {
			case s.seen <- struct{}{}:
			default:
			}
		}
	}()
	return s
}

func (s *stream) has(sub string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Contains(s.text.String(), sub)
}

// waitFor waits until the stream carried sub.
func (s *stream) waitFor(t *testing.T, sub string) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for !s.has(sub) {
		select {
		case <-s.seen:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("the stream never carried %q", sub)
		}
	}
}

// TestHiddenFromOthers: for every route and stream that shows items, a
// viewer who may not decide an item never learns it exists — a team's
// key's item from a member of another team, a quorum item from the person
// outside its team and from its owner — while those who may decide it see
// it live.
func TestHiddenFromOthers(t *testing.T) {
	l := newOrgLoop(t)
	ctx := context.Background()
	streams := map[*testenv.Browser][]*stream{}
	for _, b := range []*testenv.Browser{l.Member, l.Finn, l.Fiona, l.Sam} {
		streams[b] = []*stream{openViewerStream(t, b, "/events?with=count"), openViewerStream(t, b, "/events?only=count")}
	}
	for _, ss := range streams {
		for _, s := range ss {
			s.waitFor(t, "event: count")
		}
	}
	teamItem := l.deploy(t)
	quorumItem := l.payment(t, 90000)

	// Those who may decide see both live: the marker of the team's item
	// (its argument) reaches Sam's and Maya's inboxes, the payment Finn's.
	streams[l.Sam][0].waitFor(t, teamItem)
	streams[l.Sam][0].waitFor(t, "DEPLOY-MARK")
	streams[l.Member][0].waitFor(t, teamItem)
	streams[l.Finn][0].waitFor(t, quorumItem)
	streams[l.Fiona][0].waitFor(t, quorumItem)
	streams[l.Finn][1].waitFor(t, quorumItem) // the count stream names the ids it counts
	streams[l.Fiona][1].waitFor(t, quorumItem)
	streams[l.Sam][1].waitFor(t, teamItem)
	if status, _, _ := page(t, l.Sam, teamItem); status != http.StatusOK {
		t.Fatalf("Sam (platform) opens the team's item: %d", status)
	}
	if _, body := l.Sam.Get("/"); !strings.Contains(body, teamItem) || !strings.Contains(body, `data-testid="team-call"`) {
		t.Fatal("Sam's inbox does not show the team's call under the teams' heading")
	}

	hidden := []struct {
		who   string
		b     *testenv.Browser
		id    string
		marks []string
	}{
		{"finn/team item", l.Finn, teamItem, []string{teamItem, "DEPLOY-MARK", "Deploy service"}},
		{"fiona/team item", l.Fiona, teamItem, []string{teamItem, "DEPLOY-MARK", "Deploy service"}},
		{"sam/quorum item", l.Sam, quorumItem, []string{quorumItem, "Send payment"}},
		{"maya/own quorum item", l.Member, quorumItem, []string{quorumItem, "Send payment"}},
	}
	subjects := map[*testenv.Browser]string{l.Member: dev.DemoMember.Subject, l.Finn: dev.DemoFinn.Subject,
		l.Fiona: dev.DemoFiona.Subject, l.Sam: dev.DemoSam.Subject}
	for _, h := range hidden {
		leak := func(where, body string) {
			t.Helper()
			for _, m := range h.marks {
				if strings.Contains(body, m) {
					t.Errorf("%s: %s shows %q", h.who, where, m)
				}
			}
		}
		probes := map[string]func() (int, string){
			"inbox":            func() (int, string) { r, b := h.b.Get("/"); return r.StatusCode, b },
			"request page":     func() (int, string) { r, b := h.b.Get("/approvals/" + h.id); return r.StatusCode, b },
			"full value":       func() (int, string) { r, b := h.b.Get("/approvals/" + h.id + "/values/0"); return r.StatusCode, b },
			"settings (count)": func() (int, string) { r, b := h.b.Get("/settings"); return r.StatusCode, b },
			"decision": func() (int, string) {
				r, b := h.b.PostForm("/approvals/"+h.id+"/decision", url.Values{"decision": {"approve"}})
				return r.StatusCode, b
			},
			"batch": func() (int, string) {
				// The answer for a hidden item is the answer for one that
				// does not exist, but for the id that was posted.
				const none = "00000000-0000-4000-8000-000000000000"
				r, b := h.b.PostForm("/approvals/batch", url.Values{"id": {h.id}, "decision": {"approve"}})
				r2, b2 := h.b.PostForm("/approvals/batch", url.Values{"id": {none}, "decision": {"approve"}})
				b = strings.ReplaceAll(stripTokens(b), h.id, none)
				if r.StatusCode != r2.StatusCode || b != stripTokens(b2) {
					t.Errorf("%s: the batch answers differently for a hidden item (%d) than for none (%d):\n%s\n----\n%s", h.who, r.StatusCode, r2.StatusCode, b, stripTokens(b2))
				}
				return r.StatusCode, ""
			},
			"admin overview": func() (int, string) { r, b := h.b.Get("/admin/pending"); return r.StatusCode, b },
		}
		for where, probe := range probes {
			status, body := probe()
			leak(where, body)
			switch where {
			case "request page", "full value", "decision", "admin overview":
				if status != http.StatusNotFound {
					t.Errorf("%s: %s answered %d, want 404", h.who, where, status)
				}
			}
		}
		for _, s := range streams[h.b] {
			s.mu.Lock()
			text := s.text.String()
			s.mu.Unlock()
			leak("event stream", text)
		}
		// Mail, push: the pipeline's recipients are the item's deciders.
		ev := db.NotificationEvent{Kind: db.EventApprovalRequested, ApprovalID: &h.id}
		to, err := notify.Deciders(ctx, l.DB, ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range to {
			if s == subjects[h.b] {
				t.Errorf("%s: notified (%v)", h.who, to)
			}
		}
	}
	if l.status(t, teamItem) != "pending" || l.status(t, quorumItem) != "pending" {
		t.Fatal("a viewer who may not decide changed an item")
	}
}

// stripTokens drops what differs between two renderings of one page: the
// CSP nonce, the CSRF token and a batch's own id.
func stripTokens(s string) string {
	return regexp.MustCompile(`(nonce|value|content|data-batch-id)="[A-Za-z0-9_+/=-]{16,}"`).ReplaceAllString(s, "")
}

// TestPolicyDeciders: the policy form sets who decides, audited, bumping
// the policy version; a bad rule re-renders the form; no CSRF, no change.
func TestPolicyDeciders(t *testing.T) {
	l := newOrgLoop(t)
	ctx := context.Background()
	admin := l.NewBrowser()
	admin.SignIn("admin")
	var id, version int
	if err := l.DB.Pool.QueryRow(ctx, `SELECT id, policy_version FROM tools WHERE connector = 'payments' AND name = 'deploy'`).Scan(&id, &version); err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprint("/admin/policies/", id)
	form := func(deciders, team, quorum, cond string) url.Values {
		return url.Values{"mode": {"require_approval"}, "standing_approval": {"1"}, "version": {fmt.Sprint(version)}, "action": {"confirm"},
			"deciders": {deciders}, "decider_team": {team}, "quorum": {quorum}, "deciders_condition": {cond}}
	}
	t.Run("ErrNoTeam", func(t *testing.T) {
		resp, body := admin.PostForm(path, form("quorum", "", "2", ""))
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, `data-testid="deciders-error"`) {
			t.Fatalf("%d", resp.StatusCode)
		}
	})
	t.Run("ErrBadCondition", func(t *testing.T) {
		if resp, _ := admin.PostForm(path, form("team", "platform", "1", "args.amount >")); resp.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("%d", resp.StatusCode)
		}
	})
	t.Run("ErrNoCSRF", func(t *testing.T) {
		f := form("team", "platform", "1", "")
		req, _ := http.NewRequest(http.MethodPost, l.BaseURL+path, strings.NewReader(f.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if resp, _ := admin.Do(req); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("without CSRF: %d", resp.StatusCode)
		}
	})
	t.Run("OKTwoOfPlatform", func(t *testing.T) {
		if resp, body := admin.PostForm(path, form("quorum", "platform", "2", "args.env == 'prod'")); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		tool, err := l.DB.ToolByID(ctx, int64(id))
		if err != nil {
			t.Fatal(err)
		}
		if r := tool.Rule(); r.Deciders != approval.DecidersQuorum || r.Team != "platform" || r.Quorum != 2 ||
			tool.DecidersCondition != "args.env == 'prod'" || tool.PolicyVersion != version+1 {
			t.Fatalf("saved %+v %q v%d", r, tool.DecidersCondition, tool.PolicyVersion)
		}
		var detail string
		if err := l.DB.Pool.QueryRow(ctx, `SELECT detail::text FROM audit_events WHERE action = 'policy changed' AND tool = 'deploy' ORDER BY id DESC LIMIT 1`).Scan(&detail); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(detail, `"deciders": "quorum"`) || !strings.Contains(detail, `"decider_team": "platform"`) {
			t.Fatalf("audit detail %s", detail)
		}
		_, page := admin.Get(path)
		if !strings.Contains(page, `value="quorum" checked`) {
			t.Fatal("the form does not show the saved rule")
		}
	})
}
