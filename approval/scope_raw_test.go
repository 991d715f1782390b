package approval

import (
	"slices"
	"strings"
	"testing"
)

func npmTestScope(rules ...ShellRule) GrantScope {
	if len(rules) == 0 {
		rules = []ShellRule{{Words: []string{"npm", "test"}}}
	}
	return GrantScope{Shell: &ShellScope{Argument: "command", Rules: rules}}
}

// TestScopeRawTextFirst: a command holding any control, bidi, zero-width
// or non-ASCII space character, anywhere, is never covered and gets no
// proposal at all — bash reads `npm\rtest` as one word, which the parser
// may split.
func TestScopeRawTextFirst(t *testing.T) {
	g := npmTestScope()
	exact := npmTestScope(ShellRule{Words: []string{"npm", "test"}, Exact: true})
	for _, cmd := range []string{
		"npm\rtest", "npm test\rrm x", "npm test\r", "npm\vtest", "npm test\f", "npm test\x00", "npm test\x1b[2J",
		"npm test\x7f", "npm\u00a0test", "npm test\u2028rm x", "npm test\u2029", "npm\u200btest", "npm test \u202erm",
		"npm test\u2066", "npm test\ufeff", "npm\u3000test", "npm test\u0085", "npm test 'a\rb'", "npm test \"a\u200db\"",
		"npm test # \r", "npm test\u180e", "\u00a0npm test", "npm test\u0301",
	} {
		if g.Covers(shellArgs(cmd)) || exact.Covers(shellArgs(cmd)) {
			t.Errorf("%q covered", cmd)
		}
		if p := ProposeScope(shellArgs(cmd), "command"); !p.Empty() {
			t.Errorf("%q: a scope was proposed: %+v", cmd, p)
		}
		if !ShellRawHidden(cmd) {
			t.Errorf("%q: not hidden", cmd)
		}
	}
	for _, cmd := range []string{"npm test", "npm test\tunit", "npm test\nnpm test", "npm test café"} {
		if ShellRawHidden(cmd) {
			t.Errorf("%q: hidden", cmd)
		}
	}
	if !g.Covers(shellArgs("npm test\nnpm test unit")) {
		t.Error("a line feed between covered commands")
	}
}

// TestScopeKeywordsAndRunners: time, coproc and ! before a covered
// command, and every command of the one table (by base name, any case),
// are never covered, and no prefix is proposed through them.
func TestScopeKeywordsAndRunners(t *testing.T) {
	g := npmTestScope()
	for _, cmd := range []string{
		"time npm test", "time -p npm test", "coproc npm test", "! npm test", "! npm test | npm test", "time npm test | npm test",
		"'time' npm test", `\time npm test`, "/usr/bin/time npm test", "caffeinate npm test", "unbuffer npm test",
		"nocorrect npm test", "noglob npm test", "stdbuf -o0 npm test", "doas npm test", "chroot / npm test",
		"/usr/bin/sudo npm test", "SUDO npm test", "./sudo npm test", "exec npm test", "command npm test",
		"builtin npm test", "nohup npm test", "nice npm test", "timeout 5 npm test", "xargs npm test",
		"npm test {,--script-shell=./evil.sh}", "npm test *", "npm test ~", "npm test a=~/x", "npm test ?", "npm test [a]",
		"npm test x{1..3}", "npm() { rm -rf ~; }; npm test", "npm test #c\\\nrm x", "npm test # run the tests", "alias npm=rm; npm test", "trap 'rm x' EXIT; npm test",
	} {
		if g.Covers(shellArgs(cmd)) {
			t.Errorf("%q covered", cmd)
		}
	}
	for _, cmd := range []string{"npm test '*'", `npm test \*`, "npm test '{,-x}'", "npm test a~b", "npm test \"~\""} {
		if !g.Covers(shellArgs(cmd)) {
			t.Errorf("%q not covered: its words are not expanded", cmd)
		}
	}
	// A rule naming a runner itself covers nothing, not even exactly.
	for _, c := range []struct{ rule, cmd string }{
		{"caffeinate sudo", "caffeinate sudo rm -rf /"}, {"xargs rm", "xargs rm"}, {"env npm", "env npm test"},
		{"bash build.sh", "bash build.sh"}, {"/usr/bin/sudo npm", "/usr/bin/sudo npm test"}, {"sudo npm", "sudo npm test"},
		{"uv run", "uv run rm -rf /"}, {"docker exec", "docker exec box sh"}, {"node build.js", "node build.js"},
	} {
		words := strings.Fields(c.rule)
		for _, r := range []ShellRule{{Words: words}, {Words: strings.Fields(c.cmd), Exact: true}, {Words: words, Options: true}} {
			if npmTestScope(r).Covers(shellArgs(c.cmd)) {
				t.Errorf("rule %+v covered %q", r, c.cmd)
			}
		}
	}
	for _, cmd := range []string{"caffeinate sudo npm test", "/usr/bin/sudo npm test", "uv run pytest", "time npm test", "git -c x=y log"} {
		for _, ch := range ProposeScope(shellArgs(cmd), "command").Shell {
			if ch.Prefix != nil {
				t.Errorf("%q: prefix %q proposed", cmd, ch.Prefix)
			}
		}
	}
	if p := ProposeScope(shellArgs("git -c x=y log"), "command"); len(p.Shell) != 1 || p.Shell[0].Exact == nil {
		t.Errorf("git -c x=y log: %+v", p)
	}
}

// TestScopeIncompletePayload: a command line whose nested payload could
// not be read is not covered, whatever its commands are.
func TestScopeIncompletePayload(t *testing.T) {
	s := npmTestScope(ShellRule{Words: []string{"nice", "npm"}}).Shell
	v := ShellView{Parsed: true, Incomplete: true, Commands: []ShellCommand{{Words: []ShellWord{
		{Text: "npm", Literal: true, Value: "npm"}, {Text: "test", Literal: true, Value: "test"}}}}}
	s.Rules = []ShellRule{{Words: []string{"npm", "test"}}}
	if !s.coversView(ShellView{Parsed: true, Commands: v.Commands}) {
		t.Fatal("the complete view is not covered")
	}
	if s.coversView(v) {
		t.Fatal("a view with an unreadable payload is covered")
	}
	if npmTestScope().Covers(shellArgs(`nice bash -c "$(x"`)) {
		t.Fatal("an unreadable payload under a wrapper is covered")
	}
}

// TestRunnersFlags: the flags read the same table by base name.
func TestRunnersFlags(t *testing.T) {
	for _, c := range []struct {
		src  string
		want ShellFlagKind
	}{
		{"/usr/bin/sudo npm test", FlagPrivilege},
		{"caffeinate sudo rm -rf /", FlagPrivilege},
		{"unbuffer rm -rf build", FlagDelete},
		{"shred secret.txt", FlagDelete},
		{"mkfs.ext4 /dev/sdb1", FlagDelete},
		{"echo x > ~root/.bashrc", FlagWriteOutside},
	} {
		if v := ParseShell(c.src, "/work/project"); !slices.Contains(flagKinds(v), c.want) {
			t.Errorf("%q: flags %v, want %s", c.src, flagKinds(v), c.want)
		}
	}
}

// TestScopeShellKeyStaysFixed: when no command of a shell call may be
// covered, the proposal falls back to the exact arguments, and the
// command cannot be freed (a grant on the description alone would allow
// any command).
func TestScopeShellKeyStaysFixed(t *testing.T) {
	p := ProposeScope(shellArgs("sudo rm -rf /"), "command")
	if p.Fixed != "command" || len(p.Keys) != 2 {
		t.Fatalf("%+v", p)
	}
	if _, _, err := ChooseScope(p, []string{"key:description"}); err == nil {
		t.Fatal("the command was freed")
	}
	s, _, err := ChooseScope(p, []string{"key:command"})
	if err != nil || !s.Covers(shellArgs("sudo rm -rf /")) || s.Covers(shellArgs("sudo rm -rf ~")) {
		t.Fatalf("%v %+v", err, s)
	}
}

// TestScopeUnicodeDash: a word starting with another dash or a minus sign
// counts as an option.
func TestScopeUnicodeDash(t *testing.T) {
	for _, cmd := range []string{"npm test \u2013script-shell=x", "npm test \u2014prefix", "npm test \u2212C"} {
		if npmTestScope().Covers(shellArgs(cmd)) {
			t.Errorf("%q covered", cmd)
		}
	}
}
