package approval

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestScopeAgainstBash is the scoped grants' differential test against
// the real bash: seeded lines (control characters, keywords, wrappers,
// builtins that run things, quoting, globs, options and chains) are judged
// by the matcher under a set of grants; every line a grant covers is run
// by bash, as agents run it (bash -c LINE, and bash reading it from a
// script file), with a PATH holding only shims that log their argv. The
// only programs that may run are the granted ones, each with argv starting
// with the granted words (exactly them, for an exact rule) and no option
// word the grant did not allow. COUNTERSIGN_BASH_DIFF_LINES sets how many
// lines (default 3000); COUNTERSIGN_BASH_DIFF_SEED the seed.
func TestScopeAgainstBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	lines := 3000
	if v := os.Getenv("COUNTERSIGN_BASH_DIFF_LINES"); v != "" {
		if lines, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	seed := int64(39)
	if v := os.Getenv("COUNTERSIGN_BASH_DIFF_SEED"); v != "" {
		if seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	env := newBashBench(t, bash)
	gen := &lineGen{r: rand.New(rand.NewSource(seed))}
	var covered, ran, execs, escapes int
	for i := 0; i < lines+len(adversarialLines); i++ {
		line := ""
		if i < len(adversarialLines) {
			line = adversarialLines[i]
		} else {
			line = gen.line()
		}
		args := shellArgs(line)
		for gi, g := range diffGrants {
			if !g.Covers(args) {
				continue
			}
			covered++
			if ShellRawHidden(line) {
				escapes++
				t.Errorf("grant %d covers %q, which holds a hidden character", gi, line)
				continue
			}
			modes := []bool{false}
			if i%4 == 0 {
				modes = append(modes, true)
			}
			for _, asScript := range modes {
				got, err := env.run(line, asScript)
				if err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				ran++
				execs += len(got)
				for _, argv := range got {
					if why := env.allowed(g, argv); why != "" {
						escapes++
						if escapes <= 20 {
							t.Errorf("grant %d (%s) covers %q (script file: %v), and bash ran %q: %s", gi, g.Words(), line, asScript, argv, why)
						}
					}
				}
			}
			break // one grant covering it is enough to judge the line
		}
	}
	t.Logf("seed %d: %d lines, %d covered, %d bash runs, %d programs run, %d escapes", seed, lines, covered, ran, execs, escapes)
	if covered < lines/20 {
		t.Errorf("only %d of %d lines covered: the generator no longer exercises the matcher", covered, lines)
	}
}

// adversarialLines are judged first, every run: lines written by hand
// from an attack pass on the rules.
var adversarialLines = []string{
	"npm test x\\", "npm te\\\nst", "npm test \"\\-x\"", "npm test ''", "npm test \"\"-x", "npm test -",
	"npm test x;-x", "npm\\ test", "npm test\\ x", "npm test x=\\$(id)", "make build x=\\$(evil)", "npm test !x",
	"npm test %1", "npm test =evil", "npm test x#y", "npm test #x", "npm test |& npm test", "grep foo |& npm test &",
	"npm test && npm test || npm test &", "grep foo -e evil -f /etc/passwd", "ls src -la --color=always",
	"git status\ngit status", "git status;git status", "git  status", "'git' \"status\"", "g\\it st\"\"atus",
	"./run.sh build", "./run.sh build -x", "./run.sh   build x", "run.sh build", "./run.sh build\t-x",
	"npm test -- x", "npm test x -- -x", "npm test $'-x'", "npm test \\\n-x", "npm test x\\\n-x",
	"npm test x \\\n --script-shell=evil.sh", "npm test '\n-x'", "npm test \"a\nb\"", "make build all -j4",
	"make build CC=evil", "make build 'CC=evil'", "make build \\CC=evil", "grep foo -- -x", "ls src -- -rf",
	"ls src *", "ls src '*'", "ls src ./-rf", "grep foo \u2013x",
	// Heredocs, process substitution, $'…', arithmetic, chains, line
	// continuations, aliases, exec, functions, IFS and other assignments,
	// groups, subshells, look-alikes.
	"npm test <<EOF\n$(evil)\nEOF", "npm test <<'EOF'\n$(evil)\nEOF", "npm test <<<$(evil)", "npm test <(evil)",
	"npm test > >(evil)", "npm test $'\\x2dx'", "$'npm' test", "npm test $\"-x\"", "npm test $((1))", "npm test $[1]",
	"((a[$(evil)])); npm test", "npm test; evil", "npm test & evil", "npm test |& evil", "npm test && evil", "npm test || evil",
	"npm \\\ntest", "np\\\nm test", "npm test\\\n;evil", "npm test x\\\n\\\n-x", "npm test \"a\\\n-b\"",
	"shopt -s expand_aliases; alias npm=evil\nnpm test", "exec npm test", "npm() { evil; }\nnpm test", "IFS=-; npm test",
	"IFS=e npm test", "PATH=. npm test", "npm_config_script_shell=./evil.sh npm test", "GIT_EXTERNAL_DIFF=evil git status",
	"{ npm test; }", "(npm test)", "(evil) && npm test", "npm test -- --script-shell=evil.sh", "git status --",
	"npm t\u0435st", "npm test \u2010x", "npm test > evil.sh", "npm test ${x:-$(evil)}", "npm test ${x:--x}", "eval npm test",
	". ./evil.sh; npm test", "hash -p ./evil.sh npm\nnpm test", "enable -n test; npm test", "set -- -x; npm test \"$1\"",
	"npm test '$(evil)'", "npm test \\`evil\\`", "npm test \\ ", "npm test {x}", "npm test @evil", "git status\t",
}

// diffGrants are the grants every generated line is judged under.
var diffGrants = []GrantScope{
	npmTestScope(),
	npmTestScope(ShellRule{Words: []string{"git", "log"}}),
	npmTestScope(ShellRule{Words: []string{"make", "build"}}),
	npmTestScope(ShellRule{Words: []string{"grep", "foo"}, Options: true}),
	npmTestScope(ShellRule{Words: []string{"ls", "src"}, Options: true}),
	npmTestScope(ShellRule{Words: []string{"git", "status"}, Exact: true}),
	npmTestScope(ShellRule{Words: []string{"ls", "-la"}, Exact: true}),
	npmTestScope(ShellRule{Words: []string{"./run.sh", "build"}}),
	npmTestScope(ShellRule{Words: []string{"npm", "test"}}, ShellRule{Words: []string{"git", "status"}, Exact: true},
		ShellRule{Words: []string{"grep", "foo"}, Options: true}),
}

// bashBench is a folder of shims that log their argv, a working folder
// with files whose names look like options, and bash.
type bashBench struct {
	bash, shims, work, logs, home string
}

// shimNames are the programs on the bench's PATH: the granted ones, the
// wrappers and runners the generator writes, and names only a misread
// line would run.
var shimNames = []string{"npm", "git", "make", "grep", "ls", "rm", "evil", "id", "sudo", "env", "xargs", "nice", "nohup",
	"timeout", "caffeinate", "unbuffer", "nocorrect", "noglob", "time", "stdbuf", "doas", "chroot", "sh", "bash", "node",
	"python3", "uv", "docker", "curl", "cat", "test", "[", "printf", "echo", "command", "coproc", "npm\rtest", "test\r",
	"npm\u00a0test", "npm\u200btest", "exec", "builtin", "eval", "source", "true", "false", "sleep"}

func newBashBench(t *testing.T, bash string) *bashBench {
	root := t.TempDir()
	b := &bashBench{bash: bash, shims: filepath.Join(root, "bin"), work: filepath.Join(root, "work"),
		logs: filepath.Join(root, "logs"), home: filepath.Join(root, "home")}
	for _, d := range []string{b.shims, b.work, b.logs, b.home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The shim logs the path it was run as and its arguments, NUL-separated,
	// into a file of its own (PATH holds nothing else, so it uses builtins only).
	shim := "#!" + bash + "\nf=\"$CS_LOG/$$.$RANDOM$RANDOM\"\nprintf '%s\\0' \"$0\" \"$@\" > \"$f\"\n"
	for _, n := range shimNames {
		if err := os.WriteFile(filepath.Join(b.shims, n), []byte(shim), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"run.sh", "evil.sh"} {
		if err := os.WriteFile(filepath.Join(b.work, n), []byte(shim), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Files a glob or a brace could turn into options or programs.
	for _, n := range []string{"-rf", "--script-shell=evil.sh", "-x", "src", "foo"} {
		if err := os.WriteFile(filepath.Join(b.work, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// run runs a line under bash and returns the argv of every shim it ran:
// the program's path (relative ones joined to the working folder) first.
func (b *bashBench) run(line string, asScript bool) ([][]string, error) {
	entries, err := os.ReadDir(b.logs)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		_ = os.Remove(filepath.Join(b.logs, e.Name()))
	}
	args := []string{"-c", line}
	if asScript {
		script := filepath.Join(b.home, "script.sh")
		if err := os.WriteFile(script, []byte(line), 0o644); err != nil {
			return nil, err
		}
		args = []string{script}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.bash, args...)
	cmd.Dir = b.work
	cmd.Env = []string{"PATH=" + b.shims, "CS_LOG=" + b.logs, "HOME=" + b.home, "LC_ALL=C"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// Every program bash starts inherits fd 3, the write end of a pipe:
	// its read end ends only when all of them have ended — one run in the
	// background with its output piped away (`grep x |& y &`) included —
	// so that nothing a line runs is missed or counted for the next line.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd.ExtraFiles = []*os.File{w}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return nil, err
	}
	_ = cmd.Wait() // a failing command is not the question; what ran is
	if err := r.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return nil, err
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return nil, fmt.Errorf("a program it started did not end: %w", err)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("bash did not finish: %s", out.String())
	}
	entries, err = os.ReadDir(b.logs)
	if err != nil {
		return nil, err
	}
	var got [][]string
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(b.logs, e.Name()))
		if err != nil {
			return nil, err
		}
		argv := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
		if !filepath.IsAbs(argv[0]) {
			argv[0] = filepath.Join(b.work, argv[0])
		}
		got = append(got, argv)
	}
	return got, nil
}

// allowed says why a program run is not one the grant allows ("" when it
// is): its path must be the granted command's (looked up on PATH, or
// relative to the working folder), its arguments start with the granted
// words — be exactly them for an exact rule — and, unless the rule allows
// options, none of the others be an option (nor a make setting).
func (b *bashBench) allowed(g GrantScope, argv []string) string {
	why := "no rule of the grant runs " + argv[0]
	for _, r := range g.Shell.Rules {
		prog := filepath.Join(b.shims, r.Words[0])
		if strings.Contains(r.Words[0], "/") {
			prog = filepath.Join(b.work, r.Words[0])
		}
		if argv[0] != prog {
			continue
		}
		args := argv[1:]
		switch {
		case len(args) < len(r.Words)-1 || !slices.Equal(args[:len(r.Words)-1], r.Words[1:]):
			why = "its arguments do not start with the granted words"
		case r.Exact && len(args) != len(r.Words)-1:
			why = "more words than the exact command"
		default:
			rest := args[len(r.Words)-1:]
			if i := slices.IndexFunc(rest, func(w string) bool {
				return (!r.Options && strings.HasPrefix(w, "-")) || settingWord(r.Words[0], w)
			}); i >= 0 {
				why = "an option the grant did not allow: " + strconv.Quote(rest[i])
				continue
			}
			return ""
		}
	}
	return why
}

// lineGen writes command lines from the pieces that have fooled matchers:
// the granted words in every quoting, extra words (options in disguise,
// globs, braces, tildes, settings, expansions), keywords, wrappers,
// builtins that run things, hidden characters, and chains of them.
type lineGen struct{ r *rand.Rand }

func (g *lineGen) pick(list []string) string { return list[g.r.Intn(len(list))] }

var (
	grantedWords = [][]string{{"npm", "test"}, {"git", "log"}, {"make", "build"}, {"grep", "foo"}, {"ls", "src"},
		{"git", "status"}, {"ls", "-la"}, {"./run.sh", "build"}, {"npm", "testx"}, {"npm"}, {"git"}, {"evil"}}
	plainExtras = []string{"unit", "x", "src", "foo", "a b", "HEAD~1", "@{u}", "café", "x=1", "''", "\"\"", "a\\ b",
		"%H", "0", "+x"}
	optionExtras = []string{"-x", "--watch", "--script-shell=./evil.sh", "--prefix", "../other", "-C", "..", "--", "-",
		"-c", "core.pager=evil", "--exec-path=.", "--upload-pack=evil", "-f", "--eval=x", "-rf", "-la", "--color"}
	disguises = []string{"'-x'", "\"--watch\"", "\\-x", "-'-x'", "''-x", "\"\"--script-shell=evil.sh", "$'-x'",
		"-\\-x", "'--'prefix", "\"-\"C"}
	expansions = []string{"*", "-*", "{,-x}", "{,--script-shell=evil.sh}", "x{1..2}", "?", "[-]x", "~", "~+", "a=~/x",
		"--p=~/y", "$X", "${X}", "$(evil)", "`evil`", "\"$X\"", "$((1))", "<(evil)", "SHELL=./evil.sh", "CC=evil",
		"!(x)", "@(x)", "#c", "x#c", "\\#c", "{a}", "[a]"}
	leaders = []string{"time ", "time -p ", "coproc ", "! ", "exec ", "command ", "builtin ", "eval ", "sudo ", "env ",
		"env X=1 ", "xargs ", "nice ", "nice -n 5 ", "nohup ", "timeout 5 ", "caffeinate ", "caffeinate sudo ", "unbuffer ",
		"nocorrect ", "noglob ", "'time' ", "\\time ", "/usr/bin/time ", "stdbuf -o0 ", "doas ", "chroot / ", "X=1 ",
		"{ ", "( ", "\\command ", "'exec' ", "sh -c ", "bash -c ", "uv run ", "docker exec box ", "node ", "then "}
	runnersBefore = []string{"trap 'evil' EXIT", "trap evil DEBUG", "alias npm=evil", "shopt -s expand_aliases",
		"hash -p ./evil.sh npm", "hash -p ./evil.sh git", "source ./evil.sh", ". ./evil.sh", "eval evil",
		"printf -v 'a[$(evil)]' x", "test -v 'a[$(evil)]'", "[ -v 'a[$(evil)]' ]", "read 'a[$(evil)]' <<< x",
		"unset 'a[$(evil)]'", "mapfile -C evil -c 1 <<< x", "enable -n test", "set -o posix", "export PATH=.",
		"cd ..", "let 'a[$(evil)]'", "declare -i a='b[$(evil)]'", "npm() { evil; }", "function git { evil; }",
		"git() { evil; }", "PATH=. ", "readonly X=1", "exec 3>&1", "wait", "jobs -x evil", "fc -s"}
	hiddenChars = []string{"\r", "\v", "\f", "\x1b", "\u00a0", "\u200b", "\u202e", "\u2028", "\u3000", "\x7f", "\u0085"}
	joiners     = []string{"; ", " && ", " || ", " | ", " & ", "\n", ";", "|", " |& ", "\\\n"}
)

// quote writes a word in one of the ways bash reads as the same word.
func (g *lineGen) quote(w string) string {
	switch g.r.Intn(8) {
	case 0:
		return "'" + w + "'"
	case 1:
		return "\"" + w + "\""
	case 2:
		if len(w) > 1 {
			return w[:1] + "'" + w[1:] + "'"
		}
	case 3:
		if len(w) > 0 {
			return "\\" + w
		}
	}
	return w
}

// command writes one simple command, most often a granted one.
func (g *lineGen) command() string {
	if g.r.Intn(8) == 0 {
		return g.pick(runnersBefore)
	}
	var b strings.Builder
	if g.r.Intn(4) == 0 {
		b.WriteString(g.pick(leaders))
	}
	words := grantedWords[g.r.Intn(len(grantedWords))]
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		if g.r.Intn(3) == 0 {
			w = g.quote(w)
		}
		b.WriteString(w)
	}
	for n := g.r.Intn(4); n > 0; n-- {
		b.WriteByte(' ')
		switch k := g.r.Intn(10); {
		case k < 4:
			b.WriteString(g.quote(g.pick(plainExtras)))
		case k < 6:
			b.WriteString(g.pick(optionExtras))
		case k < 8:
			b.WriteString(g.pick(disguises))
		default:
			b.WriteString(g.pick(expansions))
		}
	}
	return b.String()
}

// line writes a chain of one to three commands: half the time a near
// miss — granted commands with plain words and one risky piece (a
// leader, a risky word, a hidden character, a runner before it) — else
// anything, now and then with a hidden character somewhere, a closing
// brace or parenthesis, or a comment.
func (g *lineGen) line() string {
	if g.r.Intn(2) == 0 {
		return g.nearMiss()
	}
	var b strings.Builder
	for n := 1 + g.r.Intn(3); n > 0; n-- {
		b.WriteString(g.command())
		if n > 1 {
			b.WriteString(g.pick(joiners))
		}
	}
	s := b.String()
	switch g.r.Intn(12) {
	case 0:
		at := g.r.Intn(len(s) + 1)
		s = s[:at] + g.pick(hiddenChars) + s[at:]
	case 1:
		s += g.pick(hiddenChars)
	case 2:
		s += "; }"
	case 3:
		s += ")"
	case 4:
		s += " # " + g.pick(optionExtras)
	}
	return s
}

// nearMiss writes granted commands with plain words, and at most one
// risky piece.
func (g *lineGen) nearMiss() string {
	n := 1 + g.r.Intn(3)
	risky := g.r.Intn(n + 1) // the command that gets the risky piece; n: none
	var b strings.Builder
	for i := 0; i < n; i++ {
		words := grantedWords[g.r.Intn(6)]
		if i == risky && g.r.Intn(4) == 0 {
			b.WriteString(g.pick(runnersBefore))
			b.WriteString(g.pick(joiners))
		}
		if i == risky && g.r.Intn(3) == 0 {
			b.WriteString(g.pick(leaders))
		}
		for j, w := range words {
			if j > 0 {
				b.WriteByte(' ')
			}
			if g.r.Intn(4) == 0 {
				w = g.quote(w)
			}
			b.WriteString(w)
		}
		for k := g.r.Intn(3); k > 0; k-- {
			b.WriteByte(' ')
			b.WriteString(g.quote(g.pick(plainExtras)))
		}
		if i == risky {
			b.WriteByte(' ')
			switch g.r.Intn(4) {
			case 0:
				b.WriteString(g.pick(optionExtras))
			case 1:
				b.WriteString(g.pick(disguises))
			case 2:
				b.WriteString(g.pick(expansions))
			default:
				b.WriteString(g.pick(hiddenChars) + g.pick(plainExtras))
			}
		}
		if i < n-1 {
			b.WriteString(g.pick(joiners))
		}
	}
	return b.String()
}
