package approval

import (
	"path"
	"slices"
	"strings"
	"sync"
)

// ShellFlag is one thing a reviewer must not miss in a command, in words:
// Words are ours and never hold the command's text; Subject is the
// command's own text it is about and Detail adds to it (both untrusted:
// shown escaped, hidden characters marked).
type ShellFlag struct {
	Kind    ShellFlagKind `json:"kind"`
	Words   string        `json:"words"`
	Subject string        `json:"subject,omitempty"`
	Detail  string        `json:"detail,omitempty"`
}

// ShellFlagKind names a kind of flag; flags are listed in this order, the
// most serious first.
type ShellFlagKind string

// Kinds of flags.
const (
	FlagUnreadable   ShellFlagKind = "unreadable"    // a nested command string that could not be read
	FlagDownloadRun  ShellFlagKind = "download_run"  // curl … | sh, bash <(curl …)
	FlagDelete       ShellFlagKind = "delete"        // rm -r, find -delete, git clean -f, mkfs
	FlagForcePush    ShellFlagKind = "force_push"    // git push --force, +refspec
	FlagHistory      ShellFlagKind = "history"       // git reset --hard, rebase, filter-branch, push --delete…
	FlagWriteOutside ShellFlagKind = "write_outside" // > /etc/x, tee ~/.bashrc, cp x ../../y
	FlagPermissions  ShellFlagKind = "permissions"   // chmod -R, chmod 777, chown on /
	FlagPrivilege    ShellFlagKind = "privilege"     // sudo, doas, su, pkexec
	FlagEval         ShellFlagKind = "eval"          // eval
	FlagShellString  ShellFlagKind = "shell_string"  // bash -c '…'
	FlagPipeToShell  ShellFlagKind = "pipe_to_shell" // … | sh
	FlagComputedName ShellFlagKind = "computed_name" // $CMD args, $(…) args
	FlagHidden       ShellFlagKind = "hidden"        // hidden or direction-changing characters in a word
	FlagLookAlike    ShellFlagKind = "look_alike"    // a host with look-alike characters
	FlagNetwork      ShellFlagKind = "network"       // a host the command connects to
)

var flagOrder = []ShellFlagKind{FlagUnreadable, FlagDownloadRun, FlagDelete, FlagForcePush, FlagHistory,
	FlagWriteOutside, FlagPermissions, FlagPrivilege, FlagEval, FlagShellString, FlagPipeToShell, FlagComputedName,
	FlagHidden, FlagLookAlike, FlagNetwork}

// flagger collects flags without repeats.
type flagger struct {
	flags []ShellFlag
	seen  map[ShellFlag]bool
}

func (f *flagger) add(kind ShellFlagKind, words, subject, detail string) {
	fl := ShellFlag{Kind: kind, Words: words, Subject: subject, Detail: detail}
	if f.seen == nil {
		f.seen = map[ShellFlag]bool{}
	}
	if !f.seen[fl] {
		f.seen[fl] = true
		f.flags = append(f.flags, fl)
	}
}

// shellFlags reads what a reviewer must not miss from a walk's commands.
func shellFlags(w *shellWalker) ([]ShellFlag, []HostCheck) {
	f := &flagger{}
	for _, u := range w.unreadable {
		f.add(FlagUnreadable, "Hands a shell a command string that cannot be read before it runs — read it whole", u, "")
	}
	for _, h := range w.hereScripts {
		f.add(FlagShellString, "Runs a script written in a here-document", h, "")
	}
	loc := &locator{workdir: w.workdir}
	var hosts []HostCheck
	seenHost := map[string]bool{}
	for i, c := range w.cmds {
		words, wrapped := unwrap(c.Words)
		// The command's text is built only for a flag: a nested command's
		// words hold the text of every command inside them.
		text := sync.OnceValue(c.Text)
		for _, wd := range c.Words {
			if wd.hidden {
				f.add(FlagHidden, "Holds hidden or direction-changing characters", wd.Text, "")
			}
		}
		for _, name := range wrapped {
			if isPrivileged(name) {
				f.add(FlagPrivilege, "Runs as another user ("+name+")", text(), "")
			}
		}
		for _, r := range c.Redirects {
			loc.redirect(f, r)
		}
		if len(words) == 0 {
			continue
		}
		if !words[0].Literal {
			f.add(FlagComputedName, "Runs a command whose name is only known when it runs", text(), "")
			continue
		}
		name := commandName(words[0])
		commandFlags(f, name, words, text)
		loc.command(f, name, words)
		for _, h := range commandHosts(name, words) {
			if !seenHost[h] {
				seenHost[h] = true
				hosts = append(hosts, CheckHost(h))
			}
		}
		w.downloadRuns(f, i, name, text)
	}
	w.pipeFlags(f)
	for _, h := range hosts {
		if h.LookAlike {
			f.add(FlagLookAlike, "Look-alike characters in a host name: it can imitate another one", h.Host, "its real form is "+h.ASCII)
		}
		f.add(FlagNetwork, "Connects to", h.Host, "")
	}
	slices.SortStableFunc(f.flags, func(a, b ShellFlag) int {
		return slices.Index(flagOrder, a.Kind) - slices.Index(flagOrder, b.Kind)
	})
	return f.flags, hosts
}

// commandFlags flags what one command does by its name and options.
func commandFlags(f *flagger, name string, words []ShellWord, text func() string) {
	switch name {
	case "rm":
		if anyOption(words, "rR", "--recursive") {
			f.add(FlagDelete, "Deletes folders and everything in them", text(), "")
		} else {
			f.add(FlagDelete, "Deletes files", text(), "")
		}
	case "rmdir", "shred", "unlink", "wipefs":
		f.add(FlagDelete, "Deletes files", text(), "")
	case "find":
		for i, w := range words {
			if w.Value == "-delete" {
				f.add(FlagDelete, "Deletes the files find matches", text(), "")
			}
			if (w.Value == "-exec" || w.Value == "-execdir" || w.Value == "-ok") && i+1 < len(words) {
				if n := commandName(words[i+1]); n == "rm" || n == "shred" || n == "unlink" {
					f.add(FlagDelete, "Deletes the files find matches", text(), "")
				}
			}
		}
	case "dd":
		for _, w := range words[1:] {
			if strings.HasPrefix(w.Value, "of=/dev/") && !harmlessDevice(strings.TrimPrefix(w.Value, "of=")) {
				f.add(FlagDelete, "Overwrites a disk or device", text(), "")
			}
		}
	case "git":
		gitFlags(f, words, text)
	case "chmod", "chown", "chgrp":
		permissionFlags(f, name, words, text)
	case "su":
		f.add(FlagPrivilege, "Runs as another user (su)", text(), "")
	case "eval":
		f.add(FlagEval, "Runs a string as a command (eval)", text(), "")
	}
	if strings.HasPrefix(name, "mkfs") {
		f.add(FlagDelete, "Formats a disk, erasing it", text(), "")
	}
	if isShell(name) && shellCArg(words) > 0 {
		f.add(FlagShellString, "Runs a command string in a new shell ("+name+" -c)", text(), "")
	}
}

// gitFlags flags force pushes, history rewrites and deletions by git.
// Chosen: push --force/-f/--force-with-lease/--mirror/+refspec; push
// --delete/-d/:ref; reset --hard; rebase; filter-branch; filter-repo;
// commit --amend; branch -D (or --delete --force); checkout/switch
// --force; clean -f (with -d: folders, -x/-X: ignored files); stash
// drop/clear; reflog expire; update-ref -d.
func gitFlags(f *flagger, words []ShellWord, text func() string) {
	sub, args := gitSubcommand(words)
	switch sub {
	case "push":
		if anyOption(args, "f", "--force", "--force-with-lease", "--mirror") || anyPrefix(args, "+") {
			f.add(FlagForcePush, "Force-pushes: replaces history on the remote", text(), "")
		}
		if anyOption(args, "d", "--delete", "--prune") || anyPrefix(args, ":") {
			f.add(FlagHistory, "Deletes branches or tags on the remote", text(), "")
		}
	case "reset":
		if anyOption(args, "", "--hard") {
			f.add(FlagHistory, "Discards uncommitted changes (git reset --hard)", text(), "")
		}
	case "rebase":
		f.add(FlagHistory, "Rewrites history (git rebase)", text(), "")
	case "filter-branch", "filter-repo":
		f.add(FlagHistory, "Rewrites the whole history (git "+sub+")", text(), "")
	case "commit":
		if anyOption(args, "", "--amend") {
			f.add(FlagHistory, "Rewrites the last commit (git commit --amend)", text(), "")
		}
	case "branch":
		if anyOption(args, "D", "") || (anyOption(args, "d", "--delete") && anyOption(args, "f", "--force")) {
			f.add(FlagHistory, "Deletes a branch even if it is not merged", text(), "")
		}
	case "checkout", "switch":
		if anyOption(args, "f", "--force", "--discard-changes") {
			f.add(FlagHistory, "Discards uncommitted changes (git "+sub+" --force)", text(), "")
		}
	case "clean":
		if anyOption(args, "f", "--force") {
			what := "Deletes untracked files"
			if anyOption(args, "d", "") {
				what += " and folders"
			}
			if anyOption(args, "xX", "") {
				what += ", ignored ones too"
			}
			f.add(FlagDelete, what+" (git clean)", text(), "")
		}
	case "stash":
		if len(args) > 0 && (args[0].Value == "drop" || args[0].Value == "clear") {
			f.add(FlagHistory, "Drops stashed changes", text(), "")
		}
	case "reflog":
		if len(args) > 0 && args[0].Value == "expire" {
			f.add(FlagHistory, "Expires the reflog: lost commits can no longer be recovered", text(), "")
		}
	case "update-ref":
		if anyOption(args, "d", "") {
			f.add(FlagHistory, "Deletes a ref", text(), "")
		}
	}
}

// gitSubcommand skips git's own options (git -C dir -c k=v push …).
func gitSubcommand(words []ShellWord) (string, []ShellWord) {
	for i := 1; i < len(words); i++ {
		v := words[i].Value
		if !words[i].Literal {
			return "", nil
		}
		if !strings.HasPrefix(v, "-") {
			return v, words[i+1:]
		}
		if v == "-C" || v == "-c" || v == "--git-dir" || v == "--work-tree" || v == "--namespace" {
			i++
		}
	}
	return "", nil
}

// permissionFlags flags chmod/chown/chgrp that reach far: recursive, on
// wide paths (/, ~, *, a top-level folder) or opening a file to everyone.
func permissionFlags(f *flagger, name string, words []ShellWord, text func() string) {
	if anyOption(words[1:], "R", "--recursive") {
		f.add(FlagPermissions, "Changes "+permWhat(name)+" recursively", text(), "")
	}
	var pos []ShellWord
	for _, w := range words[1:] {
		if !strings.HasPrefix(w.Value, "-") || !w.Literal {
			pos = append(pos, w)
		}
	}
	for i, w := range pos {
		if i == 0 && name == "chmod" {
			if m := w.Value; strings.Contains(m, "777") || strings.Contains(m, "666") || strings.Contains(m, "o+w") ||
				strings.Contains(m, "a+w") || strings.Contains(m, "+s") || m == "+w" || strings.Contains(m, "a+rwx") {
				f.add(FlagPermissions, "Lets everyone write, or run as the owner", text(), "")
			}
			continue
		}
		if i == 0 {
			continue // the owner or group
		}
		if wideTarget(w) {
			f.add(FlagPermissions, "Changes "+permWhat(name)+" on a wide path", w.Text, "")
		}
	}
}

func permWhat(name string) string {
	if name == "chmod" {
		return "permissions"
	}
	return "owners"
}

// wideTarget is a path that covers much: /, ~, a glob at the top, a
// top-level folder.
func wideTarget(w ShellWord) bool {
	if !w.Literal {
		return true
	}
	v := strings.TrimSuffix(w.Value, "/")
	switch {
	case v == "" || v == "~" || v == "." || v == ".." || strings.HasPrefix(v, "*") || strings.HasSuffix(v, "/*"):
		return true
	case strings.HasPrefix(v, "/"):
		return strings.Count(path.Clean(v), "/") <= 1
	}
	return false
}

// anyOption reports whether an option is among the words: a short option
// letter in a cluster (-rf holds r and f), or a long option (with or
// without =value).
func anyOption(words []ShellWord, short string, long ...string) bool {
	for _, w := range words {
		v := w.Value
		if !w.Literal || !strings.HasPrefix(v, "-") {
			continue
		}
		if strings.HasPrefix(v, "--") {
			for _, l := range long {
				if l != "" && (v == l || strings.HasPrefix(v, l+"=")) {
					return true
				}
			}
			continue
		}
		if strings.ContainsAny(v[1:], short) && short != "" {
			return true
		}
	}
	return false
}

func anyPrefix(words []ShellWord, prefix string) bool {
	for _, w := range words {
		if w.Literal && strings.HasPrefix(w.Value, prefix) && len(w.Value) > len(prefix) {
			return true
		}
	}
	return false
}
