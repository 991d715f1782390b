package views

import (
	"encoding/json"
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

// Gist is a preview's one-line gist (see ApprovalCard.Gist): a shell
// command by its first flagged simple command, else the command itself; a
// file path cut in its middle, never its end (the file name).
func Gist(p approval.ArgumentPreview) string {
	var parts []string
	switch {
	case p.Removed:
		return ""
	case !p.Parsed:
		parts = append(parts, p.Raw)
	case p.Shell != nil && p.Shell.Parsed && len(p.Shell.Flags) > 0 && p.Shell.Flags[0].Subject != "":
		parts = append(parts, p.Shell.Flags[0].Subject)
	default:
		for _, l := range p.Lines {
			v := l.Value
			if l.Folded() {
				v += "…" + l.Tail
			}
			if isPathKey(l.Key) {
				v = midCut(v, gistPathChars)
			}
			parts = append(parts, l.Key+": "+v)
		}
	}
	s := strings.Join(strings.Fields(strings.Join(parts, "; ")), " ")
	if utf8.RuneCountInString(s) > gistChars {
		s = string([]rune(s)[:gistChars-1]) + "…"
	}
	return s
}

// gistPathChars is how long a file path may be in a row's gist.
const gistPathChars = 48

// pathKeys are the argument keys whose value is a file's path.
var pathKeys = map[string]bool{"path": true, "file_path": true, "filepath": true, "filename": true, "file": true,
	"notebook_path": true, "target_file": true, "source": true, "destination_path": true}

func isPathKey(k string) bool { return pathKeys[strings.ToLower(k)] }

// midCut shortens s to about n characters by leaving out its middle, so
// that the end (a file's name) always shows.
func midCut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	keep := n / 3
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		if name := utf8.RuneCountInString(s[i:]); name < n-4 {
			keep = n - 1 - name
			if keep > n/3 {
				keep = n / 3
			}
			return string(r[:keep]) + "…" + s[i:]
		}
	}
	return string(r[:keep]) + "…" + string(r[len(r)-(n-keep-1):])
}

// RowArgs are the call's arguments for the list to compare the calls of
// one tool (static/panes.js shows, on each row, the values that differ
// between them): each key with its value on one line, a path cut in its
// middle, as JSON.
func (c ApprovalCard) RowArgs() string {
	p := c.Preview
	if !p.Parsed || p.Removed || (p.Shell != nil && Gist(p) != Gist(approval.ArgumentPreview{Parsed: true, Lines: p.Lines})) {
		// Not comparable, or a shell line shown by its flagged command:
		// that is what tells it apart.
		return "[]"
	}
	out := make([][2]string, 0, len(p.Lines))
	for _, l := range p.Lines {
		v := strings.Join(strings.Fields(l.Value), " ")
		if l.Folded() {
			v += "…" + strings.Join(strings.Fields(l.Tail), " ")
		}
		if isPathKey(l.Key) {
			v = midCut(v, gistPathChars)
		} else if utf8.RuneCountInString(v) > 60 {
			v = string([]rune(v)[:59]) + "…"
		}
		out = append(out, [2]string{Marked(l.Key), Marked(v)})
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "[]"
	}
	return string(b)
}

// RowFlags splits the row's risks: the call's own red flags, shown as
// badges first, and what its tool does (as it applies to this call: see
// approval.CallBehaviour), folded into one quiet mark.
func (c ApprovalCard) RowFlags() (own, tool []RiskFlag) {
	for _, f := range c.RiskFlags() {
		if f.Tone == "bad" {
			own = append(own, f)
		} else {
			tool = append(tool, f)
		}
	}
	return own, tool
}

// CallSaysBetter names, in words, what the tool does in general that this
// call, as read, does not ("" when the badges are the tool's own).
func (c ApprovalCard) CallSaysBetter() string {
	var ws []string
	if c.ToolWide.Destructive && !c.Destructive {
		ws = append(ws, "make changes that can’t be undone")
	}
	if c.ToolWide.SendsOut && !c.SendsOut {
		ws = append(ws, "send data out")
	}
	if len(ws) == 0 {
		return ""
	}
	return "This tool can " + strings.Join(ws, " and ") + "; as Countersign reads this call, it does not."
}

// toolMarkWords says in one line what the tool does in general.
func toolMarkWords(flags []RiskFlag) string {
	ws := make([]string, len(flags))
	for i, f := range flags {
		ws[i] = f.Words
	}
	return "This tool: " + strings.Join(ws, ", ")
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
