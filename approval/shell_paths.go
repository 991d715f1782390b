package approval

import (
	"net/url"
	"path"
	"strings"
)

// locator decides which written paths lie outside the working directory,
// following the command's `cd`s: once a command changes to a folder
// outside it (or to one only known when it runs), relative paths written
// after it are outside too.
type locator struct {
	workdir string // "" when the runtime did not say
	cdOut   string // the cd that left the working directory, as written
}

// redirect flags a redirection that writes outside the working directory.
func (l *locator) redirect(f *flagger, r ShellRedirect) {
	op := strings.TrimLeft(r.Op, "0123456789")
	switch op {
	case ">", ">>", ">|", "&>", "&>>", "<>", ">&", "&>|":
	default:
		return
	}
	if op == ">&" && (r.Target.Value == "-" || strings.Trim(r.Target.Value, "0123456789") == "") {
		return // duplicates a file descriptor: 2>&1
	}
	l.write(f, r.Target, r.Op+" "+r.Target.Text)
}

// command follows a cd and flags the files tee, cp, mv, install, ln and dd
// write to.
func (l *locator) command(f *flagger, name string, words []ShellWord) {
	args := words[1:]
	switch name {
	case "cd", "pushd":
		var to []ShellWord
		for _, w := range args {
			if !w.Literal || !strings.HasPrefix(w.Value, "-") || w.Value == "-" {
				to = append(to, w)
			}
		}
		if len(to) == 0 {
			l.cdOut = joinTexts(words) // home
		} else if out, _ := l.outside(to[0]); out {
			l.cdOut = joinTexts(words)
		}
	case "tee":
		for _, w := range args {
			if !w.Literal || !strings.HasPrefix(w.Value, "-") {
				l.write(f, w, joinTexts(words))
			}
		}
	case "cp", "mv", "install", "ln", "rsync", "scp":
		var pos []ShellWord
		for i := 0; i < len(args); i++ {
			w := args[i]
			if w.Literal && (w.Value == "-t" || w.Value == "--target-directory") && i+1 < len(args) {
				l.write(f, args[i+1], joinTexts(words))
				return
			}
			if w.Literal && strings.HasPrefix(w.Value, "--target-directory=") {
				l.write(f, trimWord(w, "--target-directory="), joinTexts(words))
				return
			}
			if !w.Literal || !strings.HasPrefix(w.Value, "-") {
				pos = append(pos, w)
			}
		}
		if len(pos) >= 2 {
			dest := pos[len(pos)-1]
			if (name == "rsync" || name == "scp") && remotePath(dest.Value) != "" {
				return // written on another machine: named under network
			}
			l.write(f, dest, joinTexts(words))
		}
	case "dd":
		for _, w := range args {
			if w.Literal && strings.HasPrefix(w.Value, "of=") {
				l.write(f, trimWord(w, "of="), joinTexts(words))
			}
		}
	}
}

// write flags a written path that lies outside the working directory or
// is only known when the command runs; what is the command or redirection
// that writes it, as written.
func (l *locator) write(f *flagger, target ShellWord, what string) {
	if !target.Literal {
		f.add(FlagWriteOutside, "Writes to a path only known when it runs", target.Text, what)
		return
	}
	if out, why := l.outside(target); out {
		f.add(FlagWriteOutside, "Writes outside the working directory", target.Text, why)
	}
}

// outside reports whether a literal path lies outside the working
// directory, and says why in words.
func (l *locator) outside(w ShellWord) (bool, string) {
	if !w.Literal {
		return true, "a path only known when it runs"
	}
	p := w.Value
	switch {
	case harmlessDevice(p):
		return false, ""
	case p == "~" || strings.HasPrefix(p, "~/") || strings.HasPrefix(p, "~"):
		return true, "in a home folder"
	case strings.HasPrefix(p, "/"):
		if l.workdir != "" && within(path.Clean(p), path.Clean(l.workdir)) {
			return false, ""
		}
		if l.workdir == "" {
			return true, "an absolute path"
		}
		return true, "outside " + l.workdir
	case l.cdOut != "":
		return true, "after " + l.cdOut
	}
	if l.workdir != "" {
		if within(path.Join(l.workdir, p), path.Clean(l.workdir)) {
			return false, ""
		}
		return true, "climbs out with .."
	}
	if c := path.Clean(p); c == ".." || strings.HasPrefix(c, "../") {
		return true, "climbs out with .."
	}
	return false, ""
}

// trimWord is a literal word without an option's prefix (of=, --x=).
func trimWord(w ShellWord, prefix string) ShellWord {
	return ShellWord{Text: strings.TrimPrefix(w.Text, prefix), Literal: w.Literal, Value: strings.TrimPrefix(w.Value, prefix)}
}

func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// harmlessDevice is a device a command may write to without harm.
func harmlessDevice(p string) bool {
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/")
}

// remotePath is the host of an scp/rsync path on another machine
// ([user@]host:path, host::module), or "".
func remotePath(v string) string {
	if strings.Contains(v, "://") || strings.HasPrefix(v, "/") || strings.HasPrefix(v, ".") {
		return ""
	}
	i := strings.IndexByte(v, ':')
	if i <= 0 || strings.Contains(v[:i], "/") {
		return ""
	}
	host := v[:i]
	if j := strings.LastIndexByte(host, '@'); j >= 0 {
		host = host[j+1:]
	}
	return strings.Trim(host, "[]")
}

// optionsWithValue are a network command's options whose next word is a
// value, not a destination.
var optionsWithValue = map[string]string{
	"curl": "-o --output -H --header -d --data --data-raw --data-binary --data-urlencode -X --request -u --user -A --user-agent -e --referer -b --cookie -c --cookie-jar -F --form -T --upload-file -w --write-out -K --config -E --cert --key --cacert -r --range -m --max-time --connect-timeout -U --proxy-user -Q --quote --retry",
	"wget": "-O --output-document -o --output-file -a --append-output -i --input-file -P --directory-prefix -U --user-agent --header --user --password -t --tries -T --timeout",
	"ssh":  "-b -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w -B",
	"nc":   "-e -i -p -s -w -X -x -q -I -O -T -V", "ncat": "-e -i -p -s -w -x -c", "netcat": "-e -i -p -s -w -q",
	"telnet": "-l -n -b -e", "http": "-a --auth -o --output", "https": "-a --auth -o --output",
}

// commandHosts are the hosts a command names: every URL's host in any
// command, and the destinations of network tools (curl, wget, ssh, scp,
// rsync, nc…) written without a scheme.
func commandHosts(name string, words []ShellWord) []string {
	var out []string
	for _, w := range words[1:] {
		if h := urlHost(w); h != "" {
			out = append(out, h)
		}
	}
	args := words[1:]
	switch name {
	case "scp", "rsync", "sftp", "git":
		for _, w := range args {
			if w.Literal {
				if h := remotePath(w.Value); h != "" && (name != "git" || strings.Contains(w.Value, "@")) {
					out = append(out, h)
				}
			}
		}
	}
	takes, network := optionsWithValue[name]
	if !network && name != "ftp" && name != "sftp" {
		return out
	}
	opts := strings.Fields(takes)
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Literal {
			continue
		}
		if strings.HasPrefix(w.Value, "-") {
			if hasOption(opts, w.Value) && !strings.Contains(w.Value, "=") {
				if name == "ssh" && w.Value == "-J" && i+1 < len(args) {
					out = append(out, bareHost(args[i+1].Value, true))
				}
				i++
			}
			continue
		}
		if strings.Contains(w.Value, "://") {
			continue
		}
		switch name {
		case "ssh", "nc", "ncat", "netcat", "telnet", "ftp", "sftp":
			out = append(out, bareHost(w.Value, true))
			return dropEmpty(out) // the rest is the remote command or the port
		default:
			if h := bareHost(w.Value, false); h != "" {
				out = append(out, h)
			}
		}
	}
	return dropEmpty(out)
}

// urlHost is the host of a word that is a URL with a scheme other than
// file:.
func urlHost(w ShellWord) string {
	v := w.Value
	if !w.Literal || !strings.Contains(v, "://") {
		return ""
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme == "file" || u.Host == "" {
		return ""
	}
	return u.Hostname()
}

// bareHost reads a host from [user@]host[:port][/path]; with any, a name
// without a dot counts (ssh server), else it must look like a domain.
func bareHost(v string, any bool) string {
	if i := strings.IndexByte(v, '/'); i >= 0 {
		v = v[:i]
	}
	if i := strings.LastIndexByte(v, '@'); i >= 0 {
		v = v[i+1:]
	}
	if strings.HasPrefix(v, "[") {
		if i := strings.IndexByte(v, ']'); i > 0 {
			return v[1:i]
		}
	}
	if i := strings.IndexByte(v, ':'); i >= 0 {
		v = v[:i]
	}
	if any {
		return v
	}
	return tokenHost(v)
}

func dropEmpty(s []string) []string {
	out := s[:0]
	for _, v := range s {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
