package approval

// One "ready to approve" rule (issue 39). A call may be approved once its
// own red flags and the end of what runs have been on screen and nothing
// of it is folded. The browser checks the first part for the key, a
// click, a tap and a batch (static/ready.js); the server enforces what it
// can know without a screen: a batch approves only calls with no red
// flag, nothing folded and no passkey step. Every other call is decided on
// its own card, where its flags and its end are shown in full.

// CallFlag is one of a call's own red flags: something in this call's
// arguments (not in what its tool does in general) that a reviewer must
// not miss. Words are ours; Subject is the call's own text it is about
// (untrusted), or "".
type CallFlag struct {
	Kind    string `json:"kind"`
	Words   string `json:"words"`
	Subject string `json:"subject,omitempty"`
}

// Kinds of call flags besides the shell's own (whose kinds are kept).
const (
	CallFlagHidden     = "hidden"
	CallFlagLookAlike  = "look_alike"
	CallFlagUnreadable = "unreadable_arguments"
	CallFlagUnparsed   = "unparsed_command"
)

// ShownCall is everything a reviewer reads of one call on its card: its
// arguments and diff, its names and ids (the tool's, the connector's, the
// conversation's, the agent's), the agent's stated reason, and whether
// approving needs a passkey. The card, the inbox row and the batch decide
// from it whether the call was seen whole, by one rule.
type ShownCall struct {
	Preview ArgumentPreview
	Diff    *DiffPreview
	// Names are the single-line texts shown with the call (tool and
	// connector names, ids, the agent's key name and runtime).
	Names []string
	// Reason is the agent's stated reason (several lines).
	Reason string
	Proof  Proof
}

// Hidden reports a hidden or direction-changing character anywhere the
// reviewer reads the call: a name, the reason, an argument, the diff.
func (c ShownCall) Hidden() bool {
	for _, n := range c.Names {
		if HasHidden(n, SingleLine) {
			return true
		}
	}
	return HasHidden(c.Reason, MultiLine) || previewHidden(c.Preview) || diffHidden(c.Diff)
}

// Flags are the call's own red flags (CallFlags), with hidden characters
// in its names and reason counted as in its arguments.
func (c ShownCall) Flags() []CallFlag {
	out := CallFlags(c.Preview, c.Diff)
	if len(out) > 0 && out[0].Kind == CallFlagHidden || !c.Hidden() {
		return out
	}
	return append([]CallFlag{{Kind: CallFlagHidden, Words: "Hidden or direction-changing characters"}}, out...)
}

// CallFlags lists the call's own red flags in its arguments and diff, the
// most serious first: hidden or direction-changing characters, look-alike host names,
// arguments that are not a readable object, a shell command that did not
// parse, then every flag of its parsed shell command.
func CallFlags(p ArgumentPreview, d *DiffPreview) []CallFlag {
	var out []CallFlag
	if previewHidden(p) || diffHidden(d) {
		out = append(out, CallFlag{Kind: CallFlagHidden, Words: "Hidden or direction-changing characters"})
	}
	for _, hc := range p.LookAlike {
		out = append(out, CallFlag{Kind: CallFlagLookAlike, Words: "Look-alike host name", Subject: hc.Host})
	}
	if !p.Parsed && !p.Removed {
		out = append(out, CallFlag{Kind: CallFlagUnreadable, Words: "Arguments that are not a readable object"})
	}
	if sh := p.Shell; sh != nil {
		if !sh.Parsed {
			out = append(out, CallFlag{Kind: CallFlagUnparsed, Words: "A command Countersign could not read"})
		}
		for _, f := range sh.Flags {
			out = append(out, CallFlag{Kind: string(f.Kind), Words: f.Words, Subject: f.Subject})
		}
	}
	return out
}

// PreviewFolded reports whether any of the call's arguments is not shown
// whole on its card: a value or key cut or folded, raw text folded, keys
// beyond the shown lines, a parsed command kept only in part.
func PreviewFolded(p ArgumentPreview) bool {
	if p.RawShortened || p.MoreKeys > 0 || (p.Shell != nil && p.Shell.Shortened) {
		return true
	}
	for _, l := range p.Lines {
		if l.Shortened || l.KeyShortened {
			return true
		}
	}
	return false
}

// BatchRefusal says why a call may not be approved in a batch, or "" when
// it may: a batch confirmation cannot stand in for reading a flagged or
// folded call on its own card, and a batch carries no passkey. A hidden
// character in the tool's name or the agent's reason only warns on the
// card, but it keeps the call out of a batch all the same: it is seen
// whole only on its own card, with the characters shown as markers.
func BatchRefusal(c ShownCall) string {
	switch {
	case c.Hidden():
		return "This call holds hidden or direction-changing characters (in a name, the agent's reason or the arguments), so it is not approved in a batch. Decide it on its own card, where they are shown as markers."
	case len(c.Flags()) > 0:
		return "This call has red flags, so it is not approved in a batch. Decide it on its own card."
	case PreviewFolded(c.Preview):
		return "Part of this call is folded, so it is not approved in a batch. Decide it on its own card."
	case c.Proof == ProofPasskey:
		return "This call needs your passkey to approve, so it is not approved in a batch. Decide it on its own card."
	}
	return ""
}

// previewHidden reports hidden characters anywhere in the arguments, shown
// or not.
func previewHidden(p ArgumentPreview) bool {
	if p.RawHidden || p.MoreHidden || HasHidden(p.Raw, MultiLine) || HasHidden(p.RawTail, MultiLine) {
		return true
	}
	for _, l := range p.Lines {
		if l.Hidden || HasHidden(l.Key, SingleLine) || HasHidden(l.Value, MultiLine) || HasHidden(l.Tail, MultiLine) {
			return true
		}
	}
	return false
}

// diffHidden reports hidden characters anywhere in a runtime's diff.
func diffHidden(d *DiffPreview) bool {
	if d == nil {
		return false
	}
	if HasHidden(d.Raw, MultiLine) || HasHidden(d.RawTail, MultiLine) {
		return true
	}
	for _, f := range d.Files {
		if HasHidden(f.OldPath, SingleLine) || HasHidden(f.NewPath, SingleLine) {
			return true
		}
		for _, h := range f.Hunks {
			for _, l := range h.Lines {
				if HasHidden(l.Text, MultiLine) || HasHidden(l.Tail, MultiLine) {
					return true
				}
			}
		}
	}
	return false
}
