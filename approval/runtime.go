package approval

import (
	"strconv"
	"unicode/utf8"
)

// Limits on what a runtime says about itself and the context it computed,
// counted in characters (the diff in bytes of UTF-8 text, as sent).
const (
	MaxRuntimeClientChars = 200     // runtime.client, e.g. "Claude Code 2.1.328"
	MaxRuntimeHostChars   = 200     // runtime.host: a host name
	MaxWorkingDirChars    = 4096    // runtime.working_directory: a path (PATH_MAX on Linux)
	MaxContextDiffBytes   = 1 << 20 // context.diff: a unified diff
)

// Runtime is what the agent's runtime says about itself: its name (and
// version), the machine it runs on and its working directory. It is the
// runtime's word, shown to the reviewer as untrusted text, like the
// agent's reason; nothing is decided on it.
type Runtime struct {
	Client           string `json:"client,omitempty"`
	Host             string `json:"host,omitempty"`
	WorkingDirectory string `json:"working_directory,omitempty"`
}

// Empty reports whether the runtime said nothing about itself.
func (r Runtime) Empty() bool { return r.Client == "" && r.Host == "" && r.WorkingDirectory == "" }

// CheckRuntime bounds the runtime's texts: one line each, no control
// characters, at most the limits above.
func CheckRuntime(r Runtime) error {
	if err := CheckFields(
		Field{Name: "runtime.client", Value: r.Client, Rule: RuleDisplayName},
		Field{Name: "runtime.host", Value: r.Host, Rule: RuleDisplayName},
	); err != nil {
		return err
	}
	return checkLine("runtime.working_directory", r.WorkingDirectory, MaxWorkingDirChars)
}

// CheckContextDiff bounds a runtime-computed diff. Any character but NUL
// (refused with the body) is accepted: a file's text may hold control
// characters, and the reviewer sees them as markers.
func CheckContextDiff(diff string) error {
	switch {
	case !utf8.ValidString(diff):
		return Errorf(KindInvalid, CodeInvalidRequest, "context.diff is not valid UTF-8.")
	case len(diff) > MaxContextDiffBytes:
		return Errorf(KindInvalid, CodeInvalidRequest, "context.diff is too long: at most %s bytes.", strconv.Itoa(MaxContextDiffBytes))
	}
	return nil
}

// checkLine bounds one line of text of up to limit characters.
func checkLine(name, v string, limit int) error {
	if !utf8.ValidString(v) {
		return Errorf(KindInvalid, CodeInvalidRequest, "%s is not valid UTF-8.", name)
	}
	if utf8.RuneCountInString(v) > limit {
		return Errorf(KindInvalid, CodeInvalidRequest, "%s is too long: at most %d characters.", name, limit)
	}
	for _, r := range v {
		if isControl(r) {
			return Errorf(KindInvalid, CodeInvalidRequest, "%s holds a control character (U+%04X), which is not accepted.", name, r)
		}
	}
	return nil
}
