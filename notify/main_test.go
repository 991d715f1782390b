package notify_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/notify"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// clock is a pipeline clock the test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fixture is a fresh database with a catalog, a runtime key "nightly
// agent" and a person with a verified email.
type fixture struct {
	store *db.DB
	url   string
	key   db.APIKey
	user  db.User
	base  *url.URL
	clock *clock
	n     int
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	store, u := testenv.OpenDB(t)
	f := &fixture{store: store, url: u, clock: &clock{t: time.Now()}}
	f.base, _ = url.Parse("https://countersign.example")
	f.addTool(t, "send_email", "Send email")
	var err error
	if f.user, err = store.SignIn(ctx, db.User{Issuer: "https://idp.example", Subject: "maya", Email: "maya@example.com",
		EmailVerified: true, Name: "Maya"}); err != nil {
		t.Fatal(err)
	}
	if _, f.key, err = store.CreateAPIKey(ctx, "nightly agent", nil); err != nil {
		t.Fatal(err)
	}
	return f
}

// addTool adds a tool to the "mail" connector that requires approval.
func (f *fixture) addTool(t *testing.T, name, display string) {
	t.Helper()
	ctx := context.Background()
	// A sync lists the connector's full tool list: keep the earlier ones.
	tools := []db.ToolSync{{Name: "send_email", DisplayName: "Send email"}}
	if name != "send_email" {
		tools = append(tools, db.ToolSync{Name: name, DisplayName: display})
	}
	if err := f.store.SyncConnector(ctx, approval.SystemActor, db.ConnectorSync{Name: "mail", DisplayName: "Mail", Kind: "connector",
		Tools: tools}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.SetToolPolicy(ctx, approval.SystemActor, "mail", name,
		approval.Policy{Mode: approval.ModeRequireApproval, StandingApproval: true}); err != nil {
		t.Fatal(err)
	}
}

// check sends a call and returns the result and error as they are.
func (f *fixture) check(tool, args, reason string) (db.CheckResult, error) {
	f.n++
	req := db.CheckRequest{CallID: fmt.Sprint("call-", f.n), User: f.user.Subject, ConversationID: "conv", TurnID: "turn",
		Connector: "mail", Tool: tool, Arguments: args, Reason: reason}
	return f.store.Check(context.Background(), f.key, req, db.CheckOptions{Timeout: 10 * time.Minute, DeniedThreshold: 2})
}

// pending creates a pending item.
func (f *fixture) pending(t *testing.T, tool, args string) db.Approval {
	t.Helper()
	res, err := f.check(tool, args, "")
	if err != nil || res.Approval == nil {
		t.Fatalf("check: %v %+v", err, res.Outcome)
	}
	return *res.Approval
}

// instance is one running pipeline: its own pool and listener, as another
// process would have.
type instance struct {
	P    *notify.Pipeline
	stop func()
}

// start runs a pipeline over the fixture's database with channels made by
// mk from the instance's own pool; it stops when the test ends or on stop.
func (f *fixture) start(t *testing.T, opt notify.Options, mk func(store *db.DB) []notify.Channel) *instance {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	store, err := db.Open(ctx, f.url)
	if err != nil {
		t.Fatal(err)
	}
	hub := db.NewHub(f.url, quiet)
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); hub.Run(ctx) }()
	select {
	case <-hub.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("listener not ready")
	}
	if opt.Now == nil {
		opt.Now = f.clock.Now
	}
	if opt.Sweep == 0 {
		opt.Sweep = time.Hour // so the tests prove that the NOTIFY wakes the pipeline
	}
	p := notify.New(store, hub, quiet, opt, mk(store)...)
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
			<-hubDone
			store.Close()
		})
	}
	t.Cleanup(stop)
	return &instance{P: p, stop: stop}
}

// waitFor polls cond (a database read) until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (f *fixture) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := f.store.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
