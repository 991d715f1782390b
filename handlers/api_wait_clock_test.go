package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/jackc/pgx/v5"
)

// newSkewedLoop starts a server whose database clock disagrees with the
// process's clock by offset (a Postgres interval; "-2 hours" puts the
// database two hours behind the app). The server's connections resolve
// now() to a shadow that applies the offset and counts each call in the
// sequence clock_reads, so a test can see how often the database's clock
// was asked.
func newSkewedLoop(t *testing.T, offset string) *loop {
	t.Helper()
	ctx := context.Background()
	u := testenv.NewDatabase(t)
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SEQUENCE public.clock_reads`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE FUNCTION public.now() RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
		BEGIN
			PERFORM nextval('public.clock_reads');
			RETURN pg_catalog.now() + `+pgQuote(offset)+`::interval;
		END $$`); err != nil {
		t.Fatal(err)
	}
	// With pg_catalog named last, public.now() shadows pg_catalog.now().
	p, _ := url.Parse(u)
	q := p.Query()
	q.Set("search_path", "public,pg_catalog")
	p.RawQuery = q.Encode()
	e := testenv.NewEnvOn(t, p.String(), nil)
	l := &loop{Env: e, Key: e.APIKey()}
	l.Client = client.New(e.BaseURL, l.Key)
	if err := l.Client.SyncConnector(ctx, "mail", dev.DemoCatalog["mail"]); err != nil {
		t.Fatal(err)
	}
	var dbNow time.Time
	if err := l.DB.Pool.QueryRow(ctx, `SELECT now()`).Scan(&dbNow); err != nil {
		t.Fatal(err)
	}
	if skew := time.Since(dbNow); skew.Abs() < time.Hour {
		t.Fatalf("the database's clock is not skewed (%s); the test proves nothing", skew)
	}
	return l
}

func pgQuote(s string) string { return "'" + s + "'" }

// clockReads is how often the server asked the database's clock so far.
func (l *loop) clockReads(t *testing.T) int64 {
	t.Helper()
	var n int64
	if err := l.DB.Pool.QueryRow(context.Background(), `SELECT last_value FROM public.clock_reads`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitOn long-polls an item; a wait that never ends fails the test instead
// of hanging it.
func (l *loop) waitOn(t *testing.T, id, wait string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, l.BaseURL+"/api/v1/approvals/"+id+"?wait="+wait, nil)
	req.Header.Set("Authorization", "Bearer "+l.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("the wait did not end: %v", err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("wait: %d %v %v", resp.StatusCode, out, err)
	}
	return out
}

func TestWaitUsesTheDatabaseClock(t *testing.T) {
	t.Run("AppClockAhead", func(t *testing.T) {
		// An hour left by the database's clock, already past by the app's:
		// the waiter must neither expire the item nor spin on it.
		l := newSkewedLoop(t, "-2 hours")
		id := l.pending(t, l.call("mail", "send_email", `{"to":"skew@example.com"}`))
		if _, err := l.DB.Pool.Exec(context.Background(), `UPDATE approvals SET expires_at = now() + interval '1 hour' WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
		before := l.clockReads(t)
		out := l.waitOn(t, id, "2s")
		reads := l.clockReads(t) - before
		if out["status"] != "pending" || l.status(t, id) != "pending" {
			t.Fatalf("an item with an hour left ended as %v (%s)", out["status"], l.status(t, id))
		}
		t.Logf("clock reads during the wait: %d", reads)
		// A read at the start, one per wake-up: a handful, not a loop.
		if reads > 10 {
			t.Fatalf("the wait asked the database's clock %d times", reads)
		}
	})
	t.Run("AppClockBehind", func(t *testing.T) {
		// Due in a moment by the database's clock, two hours away by the
		// app's: the waiter must wake at the database's deadline.
		l := newSkewedLoop(t, "2 hours")
		id := l.pending(t, l.call("mail", "send_email", `{"to":"skew@example.com"}`))
		if _, err := l.DB.Pool.Exec(context.Background(), `UPDATE approvals SET expires_at = now() + interval '300 milliseconds' WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
		out := l.waitOn(t, id, "10s")
		if out["status"] != "expired" || out["code"] != "approval_timeout" {
			t.Fatalf("an item due by the database's clock ended the wait as %v %v", out["status"], out["code"])
		}
	})
}
