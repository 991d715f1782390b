package hook

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// DefaultSecretFiles are the files whose content the hook never sends,
// whatever the call: a diff of an edit to one of them is built from the
// call's arguments alone. "~/" is the home directory; "**" is any number
// of directories; other parts match one name each (path.Match).
var DefaultSecretFiles = []string{
	"~/.ssh/**", "**/.env*", "~/.aws/**", "~/.config/countersign/**", "~/.netrc",
	"~/.gnupg/**", "~/.git-credentials", "~/.docker/config.json", "~/.kube/**",
	"~/.npmrc", "~/.pypirc", "~/.config/gh/**", "~/.config/gcloud/**", "~/.azure/**",
	"**/*.pem", "**/*.key", "**/id_rsa*", "**/id_ecdsa*", "**/id_ed25519*",
}

// Files says which files the hook may read to show a diff. Whatever it
// says, the hook reads only regular files, never the key file it was
// given, never a file DefaultSecretFiles or Secret names, and — unless
// ReadOutside names a directory holding it — never a file outside the
// agent's working directory.
type Files struct {
	KeyFile     string   // the hook's own API key file, if it was given one
	Secret      []string // more patterns, as DefaultSecretFiles
	ReadOutside []string // directories outside the working directory the hook may read
}

// skipped is a file the hook did not read, and why (shown on the card).
type skipped struct{ why string }

func (s skipped) Error() string { return s.why }

// Why the card says a file was not read.
const (
	whyNotRegular = "not a regular file"
	whySecret     = "a secret file by the hook's list"
	whyKeyFile    = "the hook's own API key file"
	whyOutside    = "outside the working directory"
	whyTooLarge   = "larger than 2 MiB or binary"
	whyUnreadable = "could not be read"
	whyBudget     = "the diff ran out of its time or size budget"
	whyLink       = "a link whose target could not be resolved"
)

// fileText is a file as read for a diff: its text, the target when the
// path is a symbolic link, and its SHA-256 (the pre-image).
type fileText struct {
	text, link, sha256 string
}

// reader reads files for one call's diff under Files and the budget.
type reader struct {
	cwd     string   // the working directory, links resolved ("" reads nothing)
	home    string   // the home directory, links resolved
	secrets []string // patterns
	outside []string // directories, links resolved
	key     fs.FileInfo
	budget  *budget
	// read records each file read: path → its SHA-256.
	preimages map[string]string
}

func newReader(cwd string, f Files, b *budget) *reader {
	r := &reader{secrets: append(append([]string(nil), DefaultSecretFiles...), f.Secret...), budget: b,
		preimages: map[string]string{}}
	if cwd != "" && filepath.IsAbs(cwd) {
		r.cwd = resolved(cwd)
	}
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		r.home = resolved(h)
	}
	for _, d := range f.ReadOutside {
		if filepath.IsAbs(d) {
			r.outside = append(r.outside, resolved(d))
		}
	}
	if f.KeyFile != "" {
		r.key, _ = os.Stat(f.KeyFile)
	}
	return r
}

// resolved is p with its links resolved, or p cleaned when it cannot be.
func resolved(p string) string {
	if t, err := filepath.EvalSymlinks(p); err == nil {
		return t
	}
	return filepath.Clean(p)
}

// read reads p for a diff: errNotFound when it does not exist, skipped
// with the reason when the rules above keep it unread. It never blocks on
// what it opens: it opens only what it has seen to be a regular file, does
// so without waiting (a FIFO swapped in opens at once and is refused), and
// checks the opened file again.
func (r *reader) read(p string) (fileText, error) {
	p = filepath.Clean(p)
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		r.preimages[p] = ""
		return fileText{}, errNotFound
	}
	if err != nil {
		return fileText{}, skipped{whyUnreadable}
	}
	var ft fileText
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		return fileText{}, skipped{whyLink}
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		ft.link = target
		if fi, err = os.Lstat(target); err != nil {
			return ft, skipped{whyUnreadable}
		}
	}
	if why := r.refuse(p, target, fi); why != "" {
		return ft, skipped{why}
	}
	if fi.Size() > maxReadBytes {
		return ft, skipped{whyTooLarge}
	}
	r.budget.spend(int(fi.Size()))
	b, err := readRegular(target, fi, r.key)
	if err != nil {
		return ft, err
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return ft, skipped{whyTooLarge}
	}
	sum := sha256.Sum256(b)
	ft.text, ft.sha256 = string(b), hex.EncodeToString(sum[:])
	r.preimages[p] = ft.sha256
	return ft, nil
}

// refuse is why the file at p (target, when p is a link; fi its Lstat)
// is not read, or "".
func (r *reader) refuse(p, target string, fi fs.FileInfo) string {
	switch {
	case r.key != nil && os.SameFile(r.key, fi):
		return whyKeyFile
	case r.secret(p) || r.secret(target):
		return whySecret
	case !r.inside(target):
		return whyOutside
	case !fi.Mode().IsRegular():
		return whyNotRegular
	}
	return ""
}

// secret reports a path a secret pattern matches.
func (r *reader) secret(p string) bool {
	for _, pat := range r.secrets {
		if strings.HasPrefix(pat, "~/") {
			if r.home == "" {
				// No home to anchor the pattern: it matches at any depth.
				pat = "**/" + strings.TrimPrefix(pat, "~/")
			} else {
				pat = filepath.ToSlash(r.home) + pat[1:]
			}
		}
		if matchPath(pat, filepath.ToSlash(p)) {
			return true
		}
	}
	return false
}

// inside reports a (resolved) path under the working directory or a
// directory the configuration allows.
func (r *reader) inside(target string) bool {
	for _, d := range append([]string{r.cwd}, r.outside...) {
		if d == "" {
			continue
		}
		if rel, err := filepath.Rel(d, target); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return true
		}
	}
	return false
}

// matchPath matches a slash-separated path against a pattern whose parts
// are path.Match patterns or "**" (any number of parts, none included).
func matchPath(pattern, p string) bool {
	return matchParts(strings.Split(strings.Trim(pattern, "/"), "/"), strings.Split(strings.Trim(p, "/"), "/"))
}

func matchParts(pat, parts []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(parts); i++ {
				if matchParts(pat[1:], parts[i:]) {
					return true
				}
			}
			return false
		}
		if len(parts) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], parts[0]); err != nil || !ok {
			return false
		}
		pat, parts = pat[1:], parts[1:]
	}
	return len(parts) == 0
}

// readRegular opens the regular file p (fi its Lstat) without following a
// link and without waiting, and reads it if it is still that file.
func readRegular(p string, fi fs.FileInfo, key fs.FileInfo) ([]byte, error) {
	f, err := openNoWait(p)
	if err != nil {
		return nil, skipped{whyUnreadable}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, skipped{whyUnreadable}
	}
	switch {
	case !st.Mode().IsRegular():
		return nil, skipped{whyNotRegular}
	case !os.SameFile(fi, st):
		return nil, skipped{whyUnreadable} // swapped between the look and the open
	case key != nil && os.SameFile(key, st):
		return nil, skipped{whyKeyFile}
	case st.Size() > maxReadBytes:
		return nil, skipped{whyTooLarge}
	}
	b, err := io.ReadAll(io.LimitReader(f, maxReadBytes+1))
	if err != nil {
		return nil, skipped{whyUnreadable}
	}
	if len(b) > maxReadBytes {
		return nil, skipped{whyTooLarge}
	}
	return b, nil
}

// changedSince is the first file (in path order) that is no longer as it
// was read — pre maps each path read to its SHA-256, "" for one that did
// not exist — or "" when none changed. A file that can no longer be read
// counts as changed.
func changedSince(cwd string, f Files, pre map[string]string, deadline time.Time) string {
	paths := make([]string, 0, len(pre))
	for p := range pre {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	r := newReader(cwd, f, newBudget(deadline))
	changed := ""
	func() {
		defer func() {
			if v := recover(); v != nil {
				if _, ok := v.(overBudget); !ok {
					panic(v)
				}
				changed = "(not checked in time)"
			}
		}()
		for _, p := range paths {
			ft, err := r.read(p)
			if (pre[p] == "" && !errors.Is(err, errNotFound)) || (pre[p] != "" && (err != nil || ft.sha256 != pre[p])) {
				changed = p
				return
			}
		}
	}()
	return changed
}
