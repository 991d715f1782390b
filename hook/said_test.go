package hook_test

import (
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/hook"
)

// The digest covers what runs: Bash's description is the model's word on
// the call, sent as its reason. The same command with reworded text joins
// the same item.
func TestDescriptionIsTheReason(t *testing.T) {
	s := newServer(t)
	for dialect, in := range map[string][2]string{
		hook.ClaudeCode: {claudeInput("toolu_d1", "Bash", `{"command":"rm -rf build/","description":"Clean the build"}`),
			claudeInput("toolu_d2", "Bash", `{"description":"Remove build output, retry","command":"rm -rf build/"}`)},
		hook.Codex: {codexPreToolUse("call_d1", "Bash", `{"command":"rm -rf dist/","description":"Clean the build"}`),
			codexPreToolUse("call_d2", "Bash", `{"command":"rm -rf dist/","description":"Retry"}`)},
	} {
		t.Run(dialect, func(t *testing.T) {
			cfg := s.config(dialect, shortWait)
			first, retry := runHook(cfg, in[0]), runHook(cfg, in[1])
			if first.code != 0 || retry.code != 0 {
				t.Fatalf("%+v %+v", first, retry)
			}
			cmd := map[string]string{hook.ClaudeCode: `{"command":"rm -rf build/"}`, hook.Codex: `{"command":"rm -rf dist/"}`}[dialect]
			if n := s.count(t, `SELECT count(*) FROM approvals WHERE tool = 'Bash' AND arguments_digest = $1
				AND agent_reason = 'Clean the build' AND status = 'pending'`, approval.Digest(cmd)); n != 1 {
				t.Fatalf("%d items for %s with the first description as reason, want 1", n, cmd)
			}
			if n := s.count(t, `SELECT count(*) FROM approvals WHERE tool = 'Bash' AND arguments_digest = $1`, approval.Digest(cmd)); n != 1 {
				t.Fatalf("the reworded retry opened %d items, want 1 in all", n)
			}
		})
	}
	// Not a string, or not a tool that has the field: it stays an argument.
	t.Run("OtherwiseAnArgument", func(t *testing.T) {
		cfg := s.config(hook.ClaudeCode, shortWait)
		runHook(cfg, claudeInput("toolu_d3", "Bash", `{"command":"ls","description":{"x":1}}`))
		runHook(cfg, claudeInput("toolu_d4", "Write", `{"file_path":"/p/a","content":"x","description":"y"}`))
		for _, args := range []string{`{"command":"ls","description":{"x":1}}`, `{"content":"x","description":"y","file_path":"/p/a"}`} {
			if n := s.count(t, `SELECT count(*) FROM approvals WHERE arguments_digest = $1 AND agent_reason = ''`, approval.Digest(args)); n != 1 {
				t.Fatalf("no item digesting %s whole", args)
			}
		}
	})
}

// Numbers reach Countersign as the agent wrote them: two different
// numbers never share an item.
func TestNumbersAsWritten(t *testing.T) {
	s := newServer(t)
	cfg := s.config(hook.ClaudeCode, shortWait)
	for i, args := range []string{`{"amount":12345678901234567891}`, `{"amount":12345678901234567000}`,
		`{"amount":1e400}`, `{"amount":-0}`, `{"amount":0}`, `{"amount":1.0}`, `{"amount":1}`} {
		// The answer does not matter here (nobody decides: a deny with the
		// item's link, or, on a loaded machine, the hook's own deadline);
		// the item the check opened, and its digest, do.
		runHook(cfg, claudeInput("toolu_n"+string(rune('a'+i)), "mcp__bank__transfer", args))
		if n := s.count(t, `SELECT count(*) FROM approvals WHERE tool = 'transfer' AND arguments_digest = $1`, approval.Digest(args)); n != 1 {
			t.Fatalf("%s: %d items with its digest, want 1", args, n)
		}
	}
	if n := s.count(t, `SELECT count(DISTINCT arguments_digest) FROM approvals WHERE tool = 'transfer'`); n != 7 {
		t.Fatalf("%d distinct digests, want 7", n)
	}
}
