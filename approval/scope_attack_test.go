package approval

import (
	"strings"
	"testing"
)

// TestScopeTerminalMultiplexersRunOthers: tmux reads `;` (a word of its
// own, quoted or escaped so that bash passes it on) as the end of one tmux
// command and runs the next (run-shell, new-window CMD), and screen runs
// the command written after it: a grant for one of their commands covers
// nothing, exactly or as a prefix, and no prefix is proposed through them.
func TestScopeTerminalMultiplexersRunOthers(t *testing.T) {
	for _, c := range []struct{ rule, cmd string }{
		{"tmux ls", `tmux ls \; run-shell evil`}, {"tmux ls", "tmux ls ';' new-window evil"},
		{"tmux list-sessions", "tmux list-sessions"}, {"screen htop", "screen htop"}, {"screen -ls", "screen -ls"},
		{"/usr/bin/tmux ls", `/usr/bin/tmux ls \; run-shell evil`},
	} {
		words := strings.Fields(c.rule)
		for _, r := range []ShellRule{{Words: words}, {Words: strings.Fields(c.cmd), Exact: true}, {Words: words, Options: true}} {
			if npmTestScope(r).Covers(shellArgs(c.cmd)) {
				t.Errorf("rule %+v covers %q", r, c.cmd)
			}
		}
		for _, ch := range ProposeScope(shellArgs(c.cmd), "command").Shell {
			if len(ch.Prefix) > 0 || len(ch.Exact) > 0 {
				t.Errorf("%q: proposed %+v", c.cmd, ch)
			}
		}
	}
}
