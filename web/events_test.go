package web_test

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// pendingFor creates a call for subject that waits for a person and returns
// its approval id.
func pendingFor(t *testing.T, e *testenv.Env, key, subject, callID string) string {
	t.Helper()
	status, out := e.API(key, http.MethodPost, "/api/v1/tool-calls", map[string]any{
		"call_id": callID, "user": subject, "conversation_id": "conv-1", "turn_id": "turn-1",
		"connector": "mail", "tool": "send_email", "arguments": `{"to":"finance@acme.example"}`})
	a, _ := out["approval"].(map[string]any)
	id, _ := a["id"].(string)
	if status != http.StatusOK || out["decision"] != "pending" || id == "" {
		t.Fatalf("check: %d %v", status, out)
	}
	return id
}

// openEvents opens /events as b and reads up to the first event.
func openEvents(t *testing.T, b *testenv.Browser) *bufio.Reader {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.Env.BaseURL+"/events", nil)
	resp, err := b.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("events: %d %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
	r := bufio.NewReaderSize(resp.Body, 1<<16)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before its first event: %v", err)
		}
		if line == "\n" {
			return r
		}
	}
}

// requireEndsWithout reads the stream to its end; it fails if id is
// delivered or if the stream does not end (the client's timeout).
func requireEndsWithout(t *testing.T, r *bufio.Reader, id string) {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if strings.Contains(line, id) {
			t.Fatalf("item %s delivered after the session ended: %q", id, line)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "EOF") {
				t.Fatalf("stream did not end: %v", err)
			}
			return
		}
	}
}

func TestEventStreamEndsWithSession(t *testing.T) {
	e := testenv.NewEnv(t)
	key := e.APIKey()
	cl := client.New(e.BaseURL, key)
	for name, conn := range dev.DemoCatalog {
		if err := cl.SyncConnector(context.Background(), name, conn); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("OKStillSignedIn", func(t *testing.T) {
		// The control: the same steps without the sign-out deliver the item.
		b := browser(t, e)
		b.SignIn("member")
		r := openEvents(t, b)
		id := pendingFor(t, e, key, dev.DemoMember.Subject, "call-control")
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("item not delivered: %v", err)
			}
			if strings.Contains(line, id) {
				return
			}
		}
	})
	t.Run("ErrAfterSignOut", func(t *testing.T) {
		b := browser(t, e)
		b.SignIn("member")
		token := b.CSRF()
		r := openEvents(t, b)
		if resp, _ := b.PostForm("/auth/logout", url.Values{"csrf_token": {token}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("logout: %d", resp.StatusCode)
		}
		requireEndsWithout(t, r, pendingFor(t, e, key, dev.DemoMember.Subject, "call-after-sign-out"))
	})
	t.Run("ErrAfterExpiry", func(t *testing.T) {
		b := browser(t, e)
		b.SignIn("admin")
		r := openEvents(t, b)
		if _, err := e.DB.Pool.Exec(context.Background(), `UPDATE sessions SET expiry = now() - interval '1 second'`); err != nil {
			t.Fatal(err)
		}
		requireEndsWithout(t, r, pendingFor(t, e, key, dev.DemoAdmin.Subject, "call-after-expiry"))
	})
}
