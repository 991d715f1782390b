package handlers_test

import (
	"bufio"
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

var gateAsync = testenv.GateAsync

// waitPending returns the id of the only pending item of the demo member.
func waitPending(t *testing.T, e *testenv.Env, callID string) string {
	t.Helper()
	var id string
	waitFor(t, func() bool {
		return e.DB.Pool.QueryRow(context.Background(), `SELECT id::text FROM approvals WHERE call_id = $1 AND status = 'pending'`, callID).Scan(&id) == nil
	})
	return id
}

func TestGateEndToEnd(t *testing.T) {
	l := newLoop(t)
	base := client.Call{User: dev.DemoMember.Subject, ConversationID: "conv-g", TurnID: "turn-g", Connector: "mail", Tool: "send_email"}

	t.Run("Approve", func(t *testing.T) {
		c := base
		c.CallID, c.Arguments = "g1", `{"to":"a@b.c"}`
		res := gateAsync(l.Client, c)
		decide(l.Member, waitPending(t, l.Env, "g1"), "approve")
		r := <-res
		if !r.Out.Allowed || r.Out.Via != "person" || r.Out.Scope != "once" || r.Err != nil {
			t.Fatal(r)
		}
	})
	t.Run("RejectWithReason", func(t *testing.T) {
		c := base
		c.CallID, c.Arguments = "g2", `{"to":"b@b.c"}`
		res := gateAsync(l.Client, c)
		decide(l.Member, waitPending(t, l.Env, "g2"), "reject", "reason", "Wrong recipient, use the billing alias")
		r := <-res
		if r.Out.Allowed || r.Out.Code != "approval_denied" || !strings.Contains(r.Out.Message, `"Wrong recipient, use the billing alias"`) {
			t.Fatal(r)
		}
	})
	t.Run("CancelledTurn", func(t *testing.T) {
		c := base
		c.CallID, c.Arguments, c.TurnID = "g3", `{"to":"c@b.c"}`, "turn-stop"
		res := gateAsync(l.Client, c)
		waitPending(t, l.Env, "g3")
		if _, err := l.Client.CancelTurn(context.Background(), c.User, c.ConversationID, c.TurnID); err != nil {
			t.Fatal(err)
		}
		if r := <-res; r.Out.Allowed || r.Out.Code != "approval_cancelled" {
			t.Fatal(r)
		}
	})
}

func TestTwoInstances(t *testing.T) {
	a := newLoop(t)
	b := testenv.NewEnvOn(t, a.DBURL, a.IdP)
	memberOnB := b.NewBrowser()
	memberOnB.SignIn("member")

	call := client.Call{CallID: "i1", User: dev.DemoMember.Subject, ConversationID: "c", TurnID: "t",
		Connector: "mail", Tool: "send_email", Arguments: `{"to":"x@y.z"}`}
	start := time.Now()
	res := gateAsync(a.Client, call) // waits on instance A
	id := waitPending(t, a.Env, "i1")
	if s, _ := decide(memberOnB, id, "approve"); s != http.StatusSeeOther { // decided on B
		t.Fatal(s)
	}
	select {
	case r := <-res:
		if !r.Out.Allowed {
			t.Fatal(r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter on A was not released by a decision on B")
	}
	t.Logf("released in %s", time.Since(start))
}

func TestListenerReconnectLosesNothing(t *testing.T) {
	l := newLoop(t)
	call := client.Call{CallID: "k1", User: dev.DemoMember.Subject, ConversationID: "c", TurnID: "t",
		Connector: "mail", Tool: "send_email", Arguments: `{"to":"x@y.z"}`}
	l.Client.PollWait = 50 * time.Second // one long poll spans the outage
	// The notification pipeline holds a subscription of its own: count the
	// runtime's long-poll on top of it.
	before := l.Hub.Subscribers()
	res := gateAsync(l.Client, call)
	id := waitPending(t, l.Env, "k1")
	waitFor(t, func() bool { return l.Hub.Subscribers() > before })

	// Kill the listening connection, and decide while it is down: the
	// notification of the decision goes to nobody, so only the re-read
	// after reconnecting can release the waiter.
	l.Hub.SetRetryAfter(time.Second)
	pid := l.Hub.ListenerPID()
	ctx := context.Background()
	if _, err := l.DB.Pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, int32(pid)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return l.Hub.ListenerPID() != pid || l.Hub.Reconnects() > 0 || listenerGone(l, pid) })
	if s, _ := decide(l.Member, id, "approve"); s != http.StatusSeeOther {
		t.Fatal(s)
	}
	if l.Hub.Reconnects() != 0 {
		t.Fatal("reconnected before the decision; the test proves nothing")
	}
	select {
	case r := <-res:
		if !r.Out.Allowed {
			t.Fatal(r)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("decision made while the listener was down was lost")
	}
	if l.Hub.Reconnects() < 1 || l.Hub.ListenerPID() == pid {
		t.Fatal("listener did not reconnect")
	}
}

// openStream connects the member's event stream at path and returns a
// function that yields the next event (name, data).
func openStream(t *testing.T, l *loop, path string) func() [2]string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, l.BaseURL+path, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	req = req.WithContext(ctx)
	resp, err := l.Member.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatal(resp.StatusCode)
	}
	events := make(chan [2]string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var name string
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			case line == "" && name != "":
				events <- [2]string{name, strings.Join(data, "\n")}
				name, data = "", nil
			}
		}
		close(events)
	}()
	return func() [2]string {
		select {
		case ev := <-events:
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
		}
		return [2]string{}
	}
}

func TestEventStream(t *testing.T) {
	l := newLoop(t)
	next := openStream(t, l, "/events")
	if ev := next(); ev[0] != "sync" || !strings.Contains(ev[1], `id="pending-list" hx-swap-oob="innerHTML"`) {
		t.Fatal("first event", ev)
	}
	id := l.pending(t, l.call("mail", "send_email", `{"to":"<img src=x onerror=alert(1)>"}`))
	ev := next()
	if ev[0] != "new" || !strings.Contains(ev[1], id) || !strings.Contains(ev[1], "&lt;img src=x onerror=alert(1)&gt;") || strings.Contains(ev[1], "<img src=x") {
		t.Fatal("new event", ev)
	}
	// Another user's item is not streamed to this user.
	other := l.call("mail", "send_email", `{"to":"z"}`)
	other["user"] = dev.DemoAdmin.Subject
	l.pending(t, other)
	decide(l.Member, id, "approve")
	ev = next()
	if ev[0] != "gone" || !strings.Contains(ev[1], "outerHTML:#approval-"+id) {
		t.Fatal("gone event", ev)
	}
	if ev = next(); ev[0] != "recent" || !strings.Contains(ev[1], "Approved") {
		t.Fatal("recent event", ev)
	}
}

// A page that already shows the current pending set gets no sync (which
// would replace cards under a person's hands); the next change comes as usual.
func TestEventStreamSkipsSyncWhenCurrent(t *testing.T) {
	l := newLoop(t)
	l.pending(t, l.call("mail", "send_email", `{"to":"a"}`))
	_, page := l.Member.Get("/")
	m := regexp.MustCompile(`sse-connect="(/events\?have=[0-9a-f]+)(?:&amp;with=count)?"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no stream address on the page")
	}
	next := openStream(t, l, m[1])
	id := l.pending(t, l.call("mail", "send_email", `{"to":"b"}`))
	if ev := next(); ev[0] != "new" || !strings.Contains(ev[1], id) {
		t.Fatal("first event", ev[0])
	}
	stale := openStream(t, l, m[1]) // the page's set is no longer current
	if ev := stale(); ev[0] != "sync" || !strings.Contains(ev[1], id) {
		t.Fatal("stale page got", ev[0])
	}
}

func TestEventStreamNeedsSession(t *testing.T) {
	e := testenv.NewEnv(t)
	resp, _ := e.NewBrowser().Get("/events")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatal(resp.StatusCode)
	}
}

func listenerGone(l *loop, pid uint32) bool {
	var n int
	_ = l.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, int32(pid)).Scan(&n)
	return n == 0
}
