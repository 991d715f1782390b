package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// loop is a running server with the demo catalog, a runtime key and the
// demo member signed in.
type loop struct {
	*testenv.Env
	Key    string
	Client *client.Client
	Member *testenv.Browser
	n      atomic.Int64
}

func newLoop(t *testing.T, opts ...testenv.Option) *loop {
	t.Helper()
	e := testenv.NewEnv(t, opts...)
	l := &loop{Env: e, Key: e.APIKey()}
	l.Client = client.New(e.BaseURL, l.Key)
	for name, conn := range dev.DemoCatalog {
		if err := l.Client.SyncConnector(context.Background(), name, conn); err != nil {
			t.Fatal(err)
		}
	}
	l.Member = e.NewBrowser()
	l.Member.SignIn("member")
	return l
}

// call builds a call for the demo member with a fresh call id.
func (l *loop) call(connector, tool, args string) map[string]any {
	n := l.n.Add(1)
	return map[string]any{"call_id": fmt.Sprintf("call-%d", n), "user": dev.DemoMember.Subject,
		"conversation_id": "conv-1", "turn_id": "turn-1", "connector": connector, "tool": tool, "arguments": args}
}

// check posts a call and returns the decoded answer.
func (l *loop) check(t *testing.T, call map[string]any) map[string]any {
	t.Helper()
	status, out := l.API(l.Key, http.MethodPost, "/api/v1/tool-calls", call)
	if status != http.StatusOK {
		t.Fatalf("check: %d %v", status, out)
	}
	return out
}

// pending posts a call that must become pending and returns its approval id.
func (l *loop) pending(t *testing.T, call map[string]any) string {
	t.Helper()
	out := l.check(t, call)
	if out["decision"] != "pending" {
		t.Fatalf("want pending, got %v", out)
	}
	return out["approval"].(map[string]any)["id"].(string)
}

// decide posts a decision as browser b.
func decide(b *testenv.Browser, id, decision string, extra ...string) (int, string) {
	form := url.Values{"decision": {decision}}
	for i := 0; i+1 < len(extra); i += 2 {
		form.Set(extra[i], extra[i+1])
	}
	resp, body := b.PostForm("/approvals/"+id+"/decision", form)
	return resp.StatusCode, body
}

func (l *loop) status(t *testing.T, id string) string {
	t.Helper()
	var s string
	if err := l.DB.Pool.QueryRow(context.Background(), `SELECT status FROM approvals WHERE id = $1`, id).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func (l *loop) auditCount(t *testing.T, approvalID, action string) int {
	t.Helper()
	var n int
	if err := l.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND ($2 = '' OR action = $2)`,
		approvalID, action).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func errCode(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
