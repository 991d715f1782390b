package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/countersign/countersign/client"
)

// The client sends the key and the call only to the address it was given:
// a redirect — to another port of the same host or to another host — is
// an error naming where it pointed, the place it pointed to never hears
// from the client, and its "allow" is never obeyed. That holds even for an
// http.Client of the runtime's own that would follow redirects.
func TestRedirectIsNotFollowed(t *testing.T) {
	var reached atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"call_id":"c1","decision":"allow","via":"policy"}`))
	}))
	t.Cleanup(elsewhere.Close)
	for _, target := range []string{elsewhere.URL, strings.Replace(elsewhere.URL, "127.0.0.1", "localhost", 1)} {
		for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound} {
			redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target+r.URL.Path, status)
			}))
			t.Cleanup(redirect.Close)
			for _, hc := range []*http.Client{nil, {CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}} {
				c := client.New(redirect.URL, "cs_redirect_test_0a1b2c3d4e5f")
				if hc != nil {
					c.HTTP = hc
				}
				out, err := c.Gate(context.Background(), client.Call{CallID: "c1", User: "u", ConversationID: "cv", TurnID: "t",
					Connector: "github", Tool: "create_issue", Arguments: `{}`})
				var re *client.RedirectError
				if out.Allowed || out.Code != client.CodePolicyUnavailable || !errors.As(err, &re) ||
					re.Status != status || re.Location != target+"/api/v1/tool-calls" {
					t.Fatalf("%d to %s: outcome %+v, error %v", status, target, out, err)
				}
			}
		}
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("the redirect was followed %d times", n)
	}
}
