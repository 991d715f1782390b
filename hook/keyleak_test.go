package hook_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/hook"
)

// leakKey is a runtime key that the fake servers below echo back.
const leakKey = "cs_hookleak_8b1d2e6f0a4c7935"

// Every way the hook can fail ends in exit 2 with one line on stderr, and
// neither stdout nor stderr holds the key — even when the server (or
// something in its place) echoes it back. Both agents hand the hook's
// output to the model.
func TestKeyNeverInOutput(t *testing.T) {
	echo := func(status int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"error":{"code":"x","message":"you sent ` + r.Header.Get("Authorization") + `"}}`))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	stop := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(stop) }) // runs first
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	good := claudeInput("toolu_leak", "Bash", `{"command":"ls"}`)
	cases := []struct {
		name, base, input, why string
		dialect                string
	}{
		{"ServerDown", down.URL, good, "could not ask Countersign", hook.ClaudeCode},
		{"Unauthorized", echo(http.StatusUnauthorized), good, "refused the API key", hook.ClaudeCode},
		{"ServerError", echo(http.StatusInternalServerError), good, "Countersign answered 500", hook.ClaudeCode},
		{"BadGateway", echo(http.StatusBadGateway), good, "Countersign answered 502", hook.ClaudeCode},
		{"Timeout", slow.URL, good, "did not answer in time", hook.ClaudeCode},
		{"BadInput", echo(http.StatusOK), `{"tool_name":`, "not a JSON object", hook.ClaudeCode},
		{"CodexServerError", echo(http.StatusInternalServerError), codexPreToolUse("call_1", "Bash", `{"command":"ls"}`), "Countersign answered 500", hook.Codex},
		{"CodexUnauthorized", echo(http.StatusUnauthorized), codexPreToolUse("call_2", "Bash", `{"command":"ls"}`), "refused the API key", hook.Codex},
		{"CodexTimeout", slow.URL, codexPreToolUse("call_3", "Bash", `{"command":"ls"}`), "did not answer in time", hook.Codex},
		{"CodexBadInput", echo(http.StatusOK), `{"hook_event_name":"PreToolUse","tool_input":[1]}`, "no session_id", hook.Codex},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := hook.Config{Client: client.New(c.base, leakKey), User: "maya", Dialect: c.dialect, Wait: 500 * time.Millisecond}
			r := runHook(cfg, c.input)
			r.wantFailed(t, c.why)
			if strings.Contains(r.stdout+r.stderr, leakKey) || strings.Contains(r.stdout+r.stderr, "8b1d2e6f") {
				t.Fatalf("the key is shown: stdout %q stderr %q", r.stdout, r.stderr)
			}
		})
	}
}
