package views

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/countersign/countersign/approval"
)

// gistChars is how long a row's one-line gist may be; the full card beside
// the list shows everything.
const gistChars = 140

// Gist is what the call does, on one line, for the compact list: each
// argument as "key: value" in the order sent (line breaks and runs of
// space as one space), or the raw text when it is not a JSON object. It
// ends with "…" when it is longer than a row holds.
func (c ApprovalCard) Gist() string { return Gist(c.Preview) }

// Gist is a preview's one-line gist (see ApprovalCard.Gist).
func Gist(p approval.ArgumentPreview) string {
	var parts []string
	switch {
	case p.Removed:
		return ""
	case !p.Parsed:
		parts = append(parts, p.Raw)
	default:
		for _, l := range p.Lines {
			parts = append(parts, l.Key+": "+l.Value)
		}
	}
	s := strings.Join(strings.Fields(strings.Join(parts, "; ")), " ")
	if utf8.RuneCountInString(s) > gistChars {
		s = string([]rune(s)[:gistChars-1]) + "…"
	}
	return s
}

// RiskFlag is one risk a row names in a word or two, with the token the
// list's risk filter matches.
type RiskFlag struct {
	Token string
	Words string
	Tone  string
}

// shellFlagWords are the shell flags a row names, in the words of a badge.
var shellFlagWords = map[approval.ShellFlagKind]string{
	approval.FlagDownloadRun:  "runs a download",
	approval.FlagDelete:       "deletes",
	approval.FlagForcePush:    "force push",
	approval.FlagHistory:      "rewrites history",
	approval.FlagWriteOutside: "writes outside",
	approval.FlagPermissions:  "permissions",
	approval.FlagPrivilege:    "privileged",
	approval.FlagEval:         "eval",
	approval.FlagShellString:  "nested shell",
	approval.FlagPipeToShell:  "pipes into a shell",
	approval.FlagUnreadable:   "unreadable command",
}

// RiskFlags are the risks a row names: hidden characters and look-alike
// hosts first, then what the tool does, then the shell command's own flags.
func (c ApprovalCard) RiskFlags() []RiskFlag {
	var out []RiskFlag
	if c.HasHidden() {
		out = append(out, RiskFlag{"hidden", "hidden characters", "bad"})
	}
	if len(c.LookAlikeHosts()) > 0 {
		out = append(out, RiskFlag{"hidden", "look-alike host", "bad"})
	}
	if c.Destructive {
		out = append(out, RiskFlag{"destructive", "can’t be undone", "warn"})
	}
	if c.SendsOut {
		out = append(out, RiskFlag{"sends-out", "sends data out", "warn"})
	}
	if c.UnknownBehaviour {
		out = append(out, RiskFlag{"unknown", "unknown tool", "warn"})
	}
	if sh := c.Preview.Shell; sh != nil {
		seen := map[string]bool{}
		for _, f := range sh.Flags {
			w, ok := shellFlagWords[f.Kind]
			if ok && !seen[w] {
				seen[w] = true
				out = append(out, RiskFlag{"shell", w, "bad"})
			}
		}
	}
	return out
}

// riskTokens are the row's risk filter tokens, space-separated ("none"
// when it names no risk).
func riskTokens(flags []RiskFlag) string {
	if len(flags) == 0 {
		return "none"
	}
	var out []string
	seen := map[string]bool{}
	for _, f := range flags {
		if !seen[f.Token] {
			seen[f.Token] = true
			out = append(out, f.Token)
		}
	}
	return strings.Join(out, " ")
}

// agentName is the key's name as a row and the agent filter name it.
func (c ApprovalCard) agentName() string {
	if c.Agent.KeyName == "" {
		return "(a deleted key)"
	}
	return c.Agent.KeyName
}

// isoMicro is a time in UTC to the microsecond, in a fixed width, so that
// the script can sort calls by arrival comparing the text.
func isoMicro(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }
