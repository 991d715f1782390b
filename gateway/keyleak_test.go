package gateway_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/gateway"
)

// leakKey is a runtime key that the fake servers below echo back.
const leakKey = "cs_gatewayleak_3f9a7c1e5b2d4086"

// syncBuffer is a log sink the gateway's goroutines may write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Whatever Countersign (or something in its place) answers, the key never
// reaches the client's result or the gateway's log, and the call does not
// run.
func TestKeyNeverInResultsOrLog(t *testing.T) {
	echo := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			auth := r.Header.Get("Authorization")
			_, _ = w.Write([]byte(`{"error":{"code":"internal","message":"you sent ` + auth + `"}}`))
		}
	}
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	stop := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(stop) }) // runs first
	cases := map[string]string{
		"Unauthorized": httptest.NewServer(echo(http.StatusUnauthorized)).URL,
		"ServerError":  httptest.NewServer(echo(http.StatusInternalServerError)).URL,
		"NotJSON": httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(r.Header.Get("Authorization")))
		})).URL,
		"Down": down.URL,
		"Slow": slow.URL,
	}
	for name, base := range cases {
		t.Run(name, func(t *testing.T) {
			n := &notes{}
			var logs syncBuffer
			h := start(t, n.inMemory(), func(o *gateway.Options) {
				o.Client = client.New(base, leakKey)
				o.Hold = 500 * time.Millisecond
				o.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			})
			r := h.call(t, "write_note", `{"name":"todo","text":"x"}`, nil)
			want := client.CodePolicyUnavailable
			if name == "Down" || name == "Slow" {
				want = gateway.CodeCountersignUnreachable
			}
			wantRefused(t, r, want)
			if got := n.got("write_note"); len(got) != 0 {
				t.Fatalf("upstream got %q", got)
			}
			if strings.Contains(text(r), leakKey) || strings.Contains(logs.String(), leakKey) {
				t.Fatalf("the key is shown:\nresult %q\nlog %s", text(r), logs.String())
			}
		})
	}
}
