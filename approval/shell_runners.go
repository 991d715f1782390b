package approval

import (
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// runnerKind says how a command that runs other commands hands them on.
type runnerKind uint8

// Kinds of commands that run other commands.
const (
	// runWrapper runs the command written after its own options (sudo,
	// env, xargs, nice, caffeinate…): the flags read the command it runs.
	runWrapper runnerKind = iota + 1
	// runBuiltin is a shell keyword or builtin that runs a command, a
	// string or a callback (time, coproc, !, eval, trap…), or evaluates a
	// variable name's subscript — `a[$(cmd)]` — which runs commands
	// (printf -v, test -v, read, unset, declare…), or changes how later
	// words are read (alias, shopt, set, hash).
	runBuiltin
	// runShell reads and runs a script: its -c string or here-document is
	// read in turn.
	runShell
	// runInterpreter runs code from its arguments, a file or its input.
	runInterpreter
)

// runner is one command that runs other commands.
type runner struct {
	kind runnerKind
	// opts lists a wrapper's options that take a value (so that the
	// value is not read as the command it runs).
	opts string
	// privileged: it runs the command as another user.
	privileged bool
}

// runners is the one table of commands that run other commands. The
// flags (what the card warns about), the proposal (what "Always allow
// calls like this" offers) and the matcher (what a scoped grant covers)
// all read it, by the command's base name in lower case (/usr/bin/sudo and
// SUDO are sudo): no scope ever covers one of them, exact or not, and no
// prefix is proposed through one.
var runners = map[string]runner{
	// Wrappers, with their options that take a value.
	"sudo": {runWrapper, "-u -g -h -p -C -D -r -t -U -T", true}, "doas": {runWrapper, "-u -C", true},
	"pkexec": {runWrapper, "--user", true}, "runuser": {runWrapper, "-u -g -G", true}, "su": {runBuiltin, "", true},
	"env": {runWrapper, "-u -C -S --unset --chdir", false}, "nice": {runWrapper, "-n --adjustment", false},
	"nohup": {runWrapper, "", false}, "timeout": {runWrapper, "-s -k --signal --kill-after", false},
	"stdbuf": {runWrapper, "-i -o -e", false}, "ionice": {runWrapper, "-c -n -p", false},
	"xargs":     {runWrapper, "-I -i -n -P -L -l -s -d -E -e -a --max-args --max-procs --delimiter --arg-file --replace", false},
	"nocorrect": {runWrapper, "", false}, "noglob": {runWrapper, "", false}, "chroot": {runWrapper, "", false},
	"unbuffer": {runWrapper, "", false}, "caffeinate": {runWrapper, "-t -w", false}, "watch": {runWrapper, "-n -d", false},
	"setsid": {runWrapper, "", false}, "unshare": {runWrapper, "", false}, "nsenter": {runWrapper, "-t", false},
	"strace": {runWrapper, "-e -o -p -s -u", false}, "ltrace": {runWrapper, "-e -o -p -s -u", false},
	"taskset": {runWrapper, "", false}, "chrt": {runWrapper, "", false}, "numactl": {runWrapper, "", false},
	"flock": {runWrapper, "-w -E", false}, "fakeroot": {runWrapper, "", false}, "faketime": {runWrapper, "", false},
	"firejail": {runWrapper, "", false}, "proxychains": {runWrapper, "-f", false}, "proxychains4": {runWrapper, "-f", false},
	"torsocks": {runWrapper, "", false}, "systemd-run": {runWrapper, "", false}, "script": {runWrapper, "", false},
	"parallel": {runWrapper, "", false}, "busybox": {runWrapper, "", false}, "sg": {runWrapper, "", false},
	"catchsegv": {runWrapper, "", false}, "valgrind": {runWrapper, "", false}, "xvfb-run": {runWrapper, "", false},
	"dbus-run-session": {runWrapper, "", false}, "ssh-agent": {runWrapper, "", false}, "npx": {runWrapper, "-p --package -c --call", false},
	"bunx": {runWrapper, "", false}, "pnpx": {runWrapper, "", false},
	"command": {runWrapper, "", false}, "builtin": {runWrapper, "", false}, "exec": {runWrapper, "-a", false},
	"time": {runWrapper, "-f -o", false},
	// Shell keywords and builtins.
	"coproc": {runBuiltin, "", false}, "!": {runBuiltin, "", false}, "eval": {runBuiltin, "", false},
	"source": {runBuiltin, "", false}, ".": {runBuiltin, "", false}, "trap": {runBuiltin, "", false},
	"alias": {runBuiltin, "", false}, "unalias": {runBuiltin, "", false}, "hash": {runBuiltin, "", false},
	"enable": {runBuiltin, "", false}, "fc": {runBuiltin, "", false}, "bind": {runBuiltin, "", false},
	"complete": {runBuiltin, "", false}, "compgen": {runBuiltin, "", false}, "mapfile": {runBuiltin, "", false},
	"readarray": {runBuiltin, "", false}, "jobs": {runBuiltin, "", false}, "let": {runBuiltin, "", false},
	"declare": {runBuiltin, "", false}, "typeset": {runBuiltin, "", false}, "local": {runBuiltin, "", false},
	"export": {runBuiltin, "", false}, "readonly": {runBuiltin, "", false}, "unset": {runBuiltin, "", false},
	"read": {runBuiltin, "", false}, "printf": {runBuiltin, "", false}, "test": {runBuiltin, "", false},
	"[": {runBuiltin, "", false}, "[[": {runBuiltin, "", false}, "((": {runBuiltin, "", false},
	"wait": {runBuiltin, "", false}, "shopt": {runBuiltin, "", false}, "set": {runBuiltin, "", false},
	"history": {runBuiltin, "", false}, "function": {runBuiltin, "", false}, "select": {runBuiltin, "", false},
	// Shells.
	"sh": {runShell, "", false}, "bash": {runShell, "", false}, "zsh": {runShell, "", false}, "dash": {runShell, "", false},
	"ksh": {runShell, "", false}, "mksh": {runShell, "", false}, "ash": {runShell, "", false}, "fish": {runShell, "", false},
	"csh": {runShell, "", false}, "tcsh": {runShell, "", false}, "yash": {runShell, "", false}, "rbash": {runShell, "", false},
	// Interpreters.
	"python": {runInterpreter, "", false}, "python3": {runInterpreter, "", false}, "python2": {runInterpreter, "", false},
	"perl": {runInterpreter, "", false}, "ruby": {runInterpreter, "", false}, "node": {runInterpreter, "", false},
	"php": {runInterpreter, "", false}, "pwsh": {runInterpreter, "", false}, "powershell": {runInterpreter, "", false},
	"lua": {runInterpreter, "", false}, "deno": {runInterpreter, "", false}, "bun": {runInterpreter, "", false},
	"osascript": {runInterpreter, "", false}, "tclsh": {runInterpreter, "", false}, "expect": {runInterpreter, "", false},
	"awk": {runInterpreter, "", false}, "gawk": {runInterpreter, "", false}, "mawk": {runInterpreter, "", false},
	"nawk": {runInterpreter, "", false}, "gdb": {runInterpreter, "", false},
	// Terminal multiplexers: tmux reads a `;` word as the end of one of its
	// commands and runs the next (run-shell, new-window CMD); screen runs
	// the command written after it.
	"tmux": {runInterpreter, "", false}, "screen": {runInterpreter, "", false},
}

// subRunners are commands whose subcommand runs the command written after
// it (uv run pytest, docker exec c sh): a prefix that ends at the
// subcommand would cover any command, so none is proposed or honoured.
var subRunners = map[string]string{
	"uv": "run tool", "uvx": "", "poetry": "run", "pipenv": "run", "pdm": "run", "hatch": "run", "rye": "run",
	"conda": "run", "mamba": "run", "bundle": "exec", "npm": "exec x", "pnpm": "exec dlx", "yarn": "exec dlx",
	"bun": "x", "docker": "run exec", "podman": "run exec", "kubectl": "exec debug", "go": "run tool",
	"cargo": "run", "dotnet": "exec run", "mise": "exec x", "asdf": "exec", "rbenv": "exec", "pyenv": "exec",
	"nix": "run shell develop", "nix-shell": "", "direnv": "exec", "devbox": "run", "op": "run",
	"doppler": "run", "aws-vault": "exec", "heroku": "run", "gh": "extension", "git": "submodule",
}

// lookupRunner is the table's entry for a command word's name.
func lookupRunner(name string) (runner, bool) {
	r, ok := runners[runnerKey(name)]
	return r, ok
}

func runnerKey(name string) string { return strings.ToLower(path.Base(name)) }

// runsOthers reports whether the command named name (a literal command
// word) runs other commands: no scope covers it.
func runsOthers(name string) bool {
	_, ok := lookupRunner(name)
	return ok
}

// subRunner reports whether the second word makes the first a command
// that runs what follows (uv run, docker exec).
func subRunner(first, second string) bool {
	subs, ok := subRunners[runnerKey(first)]
	if !ok {
		return false
	}
	return subs == "" || slices.Contains(strings.Fields(subs), second)
}

// wrapperOptions is a wrapper's options that take a value, and whether the
// command is a wrapper at all.
func wrapperOptions(name string) (string, bool) {
	r, ok := lookupRunner(name)
	if !ok || r.kind != runWrapper {
		return "", false
	}
	return r.opts, true
}

func isPrivileged(name string) bool {
	r, ok := lookupRunner(name)
	return ok && r.privileged
}

func isShell(name string) bool {
	r, ok := lookupRunner(name)
	return ok && r.kind == runShell
}

func isInterpreter(name string) bool {
	r, ok := lookupRunner(name)
	return ok && r.kind == runInterpreter
}

// ShellRawHidden reports whether a command line holds, anywhere in its
// raw text, a character that shells and parsers may read differently or
// that a person cannot see: any control character but tab and line feed
// (CR, VT, FF, NUL, ESC…), a bidi or zero-width (format) character, a
// space other than the ASCII one, an unassigned or private-use character,
// or bytes that are not UTF-8. A scoped grant never covers such a line,
// and none is proposed for it: this is judged on the text before any
// parsing (bash reads `npm\rtest` as one word; a parser may split it).
func ShellRawHidden(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '\t' || r == '\n':
			continue
		case r == utf8.RuneError && size == 1:
			return true
		case r < 0x20 || r == 0x7F:
			return true
		case r < 0x7F:
			continue
		case unicode.IsSpace(r), unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs, unicode.Mn, unicode.Me):
			return true
		case !unicode.IsGraphic(r):
			return true
		}
		if _, hidden := HiddenRune(r, MultiLine); hidden {
			return true
		}
	}
	return false
}
