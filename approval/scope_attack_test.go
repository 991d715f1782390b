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

// TestScopeCompilerOptionsRunCode: compilers, linkers and the like have
// options that run or load code of the caller's choosing (gcc -wrapper,
// clang -fplugin, ld -plugin, nmap --script, mysql --execute 'system …'):
// a grant for one of their commands is never widened to "and any options",
// and "and any options" stored for one covers no option.
func TestScopeCompilerOptionsRunCode(t *testing.T) {
	for _, c := range []struct{ rule, cmd string }{
		{"gcc main.c", "gcc main.c -wrapper evil,x"}, {"cc main.c", "cc main.c -fplugin=./evil.so"},
		{"clang main.c", "clang main.c -fplugin=./evil.so"}, {"g++ main.cc", "g++ main.cc -B ./evil"},
		{"clang++ main.cc", "clang++ main.cc -Xclang -load"}, {"ld main.o", "ld main.o -plugin ./evil.so"},
		{"nmap localhost", "nmap localhost --script=./evil.nse"}, {"mysql shop", "mysql shop -e 'system evil'"},
	} {
		words := strings.Fields(c.rule)
		if OptionsMayWiden(words[0]) {
			t.Errorf("%s: options may widen", words[0])
		}
		if npmTestScope(ShellRule{Words: words, Options: true}).Covers(shellArgs(c.cmd)) {
			t.Errorf("%q covered with any options", c.cmd)
		}
		for _, ch := range ProposeScope(shellArgs(c.rule+" x"), "command").Shell {
			if ch.Options {
				t.Errorf("%q: options offered", c.rule)
			}
		}
	}
}
