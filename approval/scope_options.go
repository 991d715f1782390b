package approval

import (
	"strings"
)

// OptionsRunCode is the table of commands whose options are known to run
// other code, read another configuration or act somewhere else (npm
// --script-shell runs a shell of the caller's choosing; git -c sets
// core.pager or an alias; make -f reads another makefile): a scoped grant
// for one of them is never widened to "and any options". Each entry lists
// the options that do it, for the documentation (docs/security.md) and
// the card; the list is what is known, not a limit — every option of these
// commands asks. Commands that run other commands (the runners table) are
// never covered at all.
var OptionsRunCode = map[string]string{
	"npm":     "--script-shell --prefix -C --workspace -w --userconfig --globalconfig --node-options --call -c",
	"yarn":    "--cwd --use-yarnrc --rc-filename --script-shell",
	"pnpm":    "-C --dir --filter --workspace-root --script-shell --config.*",
	"git":     "-c -C --exec-path --upload-pack --receive-pack -u --config-env --git-dir --work-tree --template --ext-diff",
	"make":    "-f --file --makefile -C --directory --eval -E -I --include-dir",
	"gmake":   "-f --file -C --directory --eval -E -I",
	"bmake":   "-f -C -I",
	"go":      "-exec -toolexec -modfile -overlay -C -ldflags -gcflags",
	"cargo":   "--config -Z --manifest-path -C",
	"rustc":   "-C -Z --extern",
	"docker":  "-H --host --config -v --volume --privileged --entrypoint",
	"podman":  "--url --connection -v --volume --privileged --entrypoint",
	"kubectl": "--kubeconfig --context --server --as",
	"helm":    "--post-renderer --kubeconfig",
	"tar":     "--to-command --use-compress-program -I --checkpoint-action --rsh-command --info-script -F --new-volume-script",
	"sed":     "-e --expression -f --file -i",
	"rg":      "--pre --pre-glob",
	"sort":    "--compress-program",
	"zip":     "-TT --unzip-command -T",
	"man":     "-P --pager -H --html",
	"less":    "--lesskey-file -k",
	"tcpdump": "-z -w",
	"pytest":  "-p -c --rootdir --confcutdir",
	"tox":     "-c --conf",
	"mvn":     "-f -D -s --settings",
	"gradle":  "-I --init-script -b -c -p",
	"bazel":   "--bazelrc",
	"cmake":   "-P -D -C",
	"ninja":   "-C -f",
	"just":    "--shell -f --justfile -d --working-directory",
	"rake":    "-f -r -I -e",
	"pip":     "-i --index-url --extra-index-url -r --requirement -c",
	"pip3":    "-i --index-url --extra-index-url -r --requirement -c",
	"vim":     "-c --cmd -S", "nvim": "-c --cmd -S", "emacs": "--eval -l",
	"eslint":   "-c --config --rulesdir --plugin --resolve-plugins-relative-to",
	"prettier": "--plugin --config",
	"jest":     "-c --config --setupFiles", "vitest": "-c --config", "mocha": "-r --require --config",
	"webpack": "-c --config", "vite": "-c --config",
	"psql": "-f -c", "sqlite3": "-cmd -init",
	"openssl":   "-engine",
	"terraform": "-chdir",
	"composer":  "-d --working-dir",
	"bundle":    "--gemfile",
	"gcc":       "-wrapper -fplugin -B -specs --specs", "cc": "-wrapper -fplugin -B -specs --specs",
	"g++": "-wrapper -fplugin -B -specs --specs", "c++": "-wrapper -fplugin -B -specs --specs",
	"clang": "-fplugin -Xclang -B --config", "clang++": "-fplugin -Xclang -B --config",
	"ld": "-plugin --plugin", "nmap": "--script", "mysql": "-e --execute --init-command",
}

// settingsArgs are commands that read a NAME=value word as a setting
// (make CC=… SHELL=…, rake VAR=…): such a word after a prefix is not
// covered, like an option.
var settingsArgs = map[string]bool{"make": true, "gmake": true, "bmake": true, "rake": true, "scons": true}

// OptionsMayWiden reports whether a prefix grant for this command may be
// widened to "and any options": not for a command in OptionsRunCode, nor
// for one that runs other commands.
func OptionsMayWiden(name string) bool {
	k := runnerKey(name)
	_, known := OptionsRunCode[k]
	return !known && !runsOthers(name) && !exactOnly[k]
}

// settingWord reports whether w, after a prefix of the command name, is a
// setting the command reads like an option (make SHELL=…).
func settingWord(name, w string) bool {
	return settingsArgs[runnerKey(name)] && strings.Contains(w, "=")
}

// OptionsWarning is what the card says about "and any options".
const OptionsWarning = "Option words (starting with -) can change what a command runs, reads or writes: allow them only if you know every option this command has."
