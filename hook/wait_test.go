package hook_test

import (
	"testing"
	"time"

	"github.com/countersign/countersign/hook"
)

// The hook waits for the person until --wait minus min(5 s, --wait/5),
// then answers with the item's link — before --wait, the hard end that
// must stay under the agent's own timeout (docs/agents.md).
func TestWaitEndsBeforeTheDeadline(t *testing.T) {
	s := newServer(t)
	const wait = 2 * time.Second
	start := time.Now()
	r := runHook(s.config(hook.ClaudeCode, wait), claudeInput("toolu_w", "Bash", `{"command":"make deploy"}`))
	took := time.Since(start)
	r.want(t, 0, claudeAnswer("deny", waitingMessage(s, "Bash", s.pendingID(t, "toolu_w"))))
	if took < wait-wait/5-100*time.Millisecond || took >= wait {
		t.Fatalf("answered after %v; want about %v, and before %v", took, wait-wait/5, wait)
	}
}
