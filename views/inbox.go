package views

import (
	"net/url"
	"strings"
	"time"

	"github.com/countersign/countersign/approval"
)

// ApprovalCard is one pending call as the inbox shows it.
type ApprovalCard struct {
	ID               string
	ToolDisplay      string
	ConnectorDisplay string
	// Connector and Tool are the stable names ("connector · tool"), shown
	// small under the display names so that a display name cannot pass for
	// another tool.
	Connector      string
	Tool           string
	ConversationID string
	// ConversationTitle is the runtime's label for the conversation, if sent.
	ConversationTitle string
	TurnID            string
	// Agent says who asks; Diff is the change the agent's side computed
	// for an edit (nil: none sent).
	Agent       AgentView
	Diff        *approval.DiffPreview
	AgentReason string
	Preview     approval.ArgumentPreview
	Decisions   []approval.Decision
	// Destructive and SendsOut are what this call may do, by the one rule
	// (approval.CallBehaviour); ToolWide is what its tool's hints say of
	// every call.
	Destructive bool
	SendsOut    bool
	ToolWide    approval.Behaviour
	// UnknownBehaviour: the runtime sent no hints for the tool, so nothing
	// is known of what it does (it is then neither Destructive nor SendsOut).
	UnknownBehaviour bool
	Destination      string   // where the data goes, when an argument names it
	Recipients       []string // the same, one entry per recipient
	// MaxGrant is the longest a standing grant may last (0: no limit), and
	// Durations the lengths the reviewer may choose.
	MaxGrant  time.Duration
	Durations []time.Duration
	CreatedAt time.Time
	ExpiresAt time.Time
	Now       time.Time
	CSRFToken string
	// LikeKey names the calls "like this" one: the same key, tool and
	// arguments (by digest). The list offers to select them all for a
	// batch.
	LikeKey string
	// ConversationToolKey names the calls of the same tool in the same
	// conversation (the same key and owner too), whatever their
	// arguments: the list offers to select them all for a batch.
	ConversationToolKey string
	// Passkey step-up (issue 33): PasskeyChallenge is the base64url
	// challenge Approve must be signed over ("" when approving needs no
	// passkey), for relying party PasskeyRP; ApprovedWithPasskey names the
	// passkey that approved the item.
	PasskeyChallenge string
	PasskeyRP        string
	// NoPasskey: approving needs a passkey and the viewer has none yet.
	NoPasskey           bool
	ApprovedWithPasskey string
	// Proof is what approving needs besides a click (a passkey, or none).
	Proof approval.Proof
	// Deciders says who may decide the call (empty: its owner alone).
	Deciders DecidersView
	// Away says whom the viewer decides for and whether the call was
	// escalated (views/away.templ).
	Away AwayNote
}

// DecidedRow is one of the recent decisions under the pending list.
type DecidedRow struct {
	ID               string
	ToolDisplay      string
	ConnectorDisplay string
	ConversationID   string
	// ConversationTitle is the runtime's label for the conversation, if sent.
	ConversationTitle string
	TurnID            string
	Status            approval.Status
	Scope             string
	Reason            string
	Note              string    // typed with an approval: the reviewer's own note
	Agent             AgentView // who asked
	Gist              string    // what the call did, on one line
	CreatedAt         time.Time
	DecidedAt         time.Time
	Now               time.Time
	Passkey           string // the passkey that approved it (issue 33); "" if none
}

// Outcome is the row's result in words.
func (r DecidedRow) Outcome() (string, string) {
	switch r.Status {
	case approval.StatusApproved, approval.StatusConsumed:
		switch approval.Scope(r.Scope) {
		case approval.ScopeConversation:
			return "Allowed in this conversation", "ok"
		case approval.ScopeAlways:
			return "Always allowed", "ok"
		}
		return "Approved", "ok"
	case approval.StatusRejected:
		return "Rejected", "bad"
	case approval.StatusExpired:
		return "Expired", "warn"
	case approval.StatusCancelled:
		return "Cancelled", ""
	}
	return string(r.Status), ""
}

// InboxView is the inbox page.
type InboxView struct {
	Page       Page
	Pending    []ApprovalCard
	PendingKey string // names the pending set the page shows, for the event stream
	// Waiting is how many calls wait in all when the list stops short of
	// them (zero when it shows every one).
	Waiting int
	Recent  []DecidedRow
}

// destinationValue is the value of the first argument that names where a
// call sends data.
func destinationValue(p approval.ArgumentPreview) string {
	for _, want := range approval.DestinationKeys() {
		for _, l := range p.Lines {
			if strings.EqualFold(l.Key, want) && l.Value != "" {
				return l.Value
			}
		}
	}
	return ""
}

// DestinationOf picks the argument that names where a call sends data; a
// URL is named by its host. It is a short label (for a notification); the
// card names every destination (see Touches).
func DestinationOf(p approval.ArgumentPreview) string {
	v := destinationValue(p)
	if u, err := url.Parse(v); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return u.Host
	}
	if r := []rune(v); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return v
}

// Touches lists everything the arguments say a call sends to or writes,
// each destination-like argument with every item it names. A preview
// stored before it recorded them is read from its lines: every
// destination-like line, each item of a list, a URL by its host, a folded
// or shortened value as the text it kept.
func Touches(p approval.ArgumentPreview) []approval.Destination {
	if len(p.Destinations) > 0 {
		return p.Destinations
	}
	var out []approval.Destination
	for _, l := range p.Lines {
		if !approval.IsDestinationKey(l.Key) || l.Value == "" {
			continue
		}
		d := approval.Destination{Key: l.Key}
		switch vv := ViewValue(l.Value, l.Shortened); {
		case l.Shortened:
			d.Items = []string{l.Value + "…" + l.Tail}
		case vv.Kind == valueList:
			d.Items = vv.Items
		case vv.Kind == valueURL:
			u, _ := url.Parse(vv.Origin)
			d.Items = []string{u.Host}
		default:
			d.Items = []string{l.Value}
		}
		out = append(out, d)
	}
	return out
}

// Touches is everything the card's call sends to or writes.
func (c ApprovalCard) Touches() []approval.Destination { return Touches(c.Preview) }

// toKeys are the destination keys read as "to" before their item.
var toKeys = []string{"to", "recipient", "recipients", "email", "url", "urls", "destination", "channel", "host", "hosts", "endpoint", "webhook_url"}

func isToKey(key string) bool {
	for _, k := range toKeys {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// destinationWord is the word before a single destination: "to" for a
// recipient, a URL or a host, else the argument's own name.
func destinationWord(key string) string {
	if isToKey(key) {
		return "to"
	}
	return Marked(key) + ":"
}

// touchCount says how many items the destinations name, in words.
func touchCount(ds []approval.Destination) string {
	n, mail := 0, true
	for _, d := range ds {
		n += len(d.Items) + d.More
		switch strings.ToLower(d.Key) {
		case "to", "cc", "bcc", "recipient", "recipients", "email":
		default:
			mail = false
		}
	}
	if mail {
		return "to " + plural(n, "recipient")
	}
	return "naming " + plural(n, "destination")
}

// LookAlikeHosts lists the host names in the arguments that say where data
// goes (every such argument, not only the one on the destination line)
// that hold look-alike characters: those the preview found in the full
// values, shown or not, and those in the shown lines (all a preview made
// before it recorded the former has).
func (c ApprovalCard) LookAlikeHosts() []approval.HostCheck {
	var out []approval.HostCheck
	seen := map[string]bool{}
	add := func(hc approval.HostCheck) {
		if !seen[hc.Host] {
			seen[hc.Host] = true
			out = append(out, hc)
		}
	}
	for _, hc := range c.Preview.LookAlike {
		add(hc)
	}
	for _, l := range c.Preview.Lines {
		if approval.IsDestinationKey(l.Key) {
			for _, hc := range approval.LookAlikeHostsIn(l.Value + " " + l.Tail) {
				add(hc)
			}
		}
	}
	return out
}

// Shown is everything a reviewer reads of the call on its card, for the
// one rule (approval.ShownCall) that says whether it was seen whole.
func (c ApprovalCard) Shown() approval.ShownCall {
	return approval.ShownCall{Preview: c.Preview, Diff: c.Diff, Reason: c.AgentReason, Proof: c.Proof,
		Names: []string{c.ToolDisplay, c.ConnectorDisplay, c.Connector, c.Tool, c.ConversationID, c.TurnID,
			c.Agent.KeyName, c.Agent.Client, c.Agent.Host, c.Agent.Directory}}
}

// HasHidden reports whether anything a reviewer reads on the card (an
// argument key or value, the raw arguments, the agent's reason, the names
// and ids) holds a hidden or direction-changing character.
func (c ApprovalCard) HasHidden() bool { return c.Shown().Hidden() }

// lineHasHidden reports whether an argument's key or value holds a hidden
// character, so that its line is flagged.
func lineHasHidden(l approval.PreviewLine) bool {
	return l.Hidden || approval.HasHidden(l.Key, approval.SingleLine) || approval.HasHidden(l.Value, approval.MultiLine) ||
		approval.HasHidden(l.Tail, approval.MultiLine)
}

// scriptsNote names the writing systems a host name mixes, if it does.
func scriptsNote(scripts []string) string {
	if len(scripts) == 0 {
		return "holds characters outside plain ASCII"
	}
	return "mixes " + strings.Join(scripts, " and ") + " letters"
}

// shortID keeps the first 24 characters of an id (never part of one).
func shortID(s string) string {
	if r := []rune(s); len(r) > 24 {
		return string(r[:24]) + "…"
	}
	return s
}

// hiddenNote says where a flagged line's hidden characters are: in what is
// shown (as markers), or only in the part of a long value that is folded.
func hiddenNote(l approval.PreviewLine) string {
	if approval.HasHidden(l.Key, approval.SingleLine) || approval.HasHidden(l.Value, approval.MultiLine) ||
		approval.HasHidden(l.Tail, approval.MultiLine) {
		return "Holds hidden characters, shown as markers"
	}
	if l.Folded() {
		return "Holds hidden characters in the folded part: show it to read them"
	}
	return "Holds hidden characters in the part not shown"
}

// Truncated reports whether more calls wait than the list shows.
func (v InboxView) Truncated() bool { return v.Waiting > len(v.Pending) }

// Count is how many calls wait for the person: all of them, also when the
// list stops short.
func (v InboxView) Count() int { return max(v.Waiting, len(v.Pending)) }

// waitingWords is the inbox heading's count: "3 waiting", or "none
// waiting".
func waitingWords(n int) string {
	if n == 0 {
		return "none waiting"
	}
	return itoa(n) + " waiting"
}

// Unanswered reports whether the call ended without anyone's answer
// (expired, or cancelled before a decision).
func (r DecidedRow) Unanswered() bool {
	return r.Status == approval.StatusExpired || (r.Status == approval.StatusCancelled && r.Scope == "")
}

// RecentLabel is the outcome as the recent decisions list it: a call that
// nobody answered is said so, not shown as a decision.
func (r DecidedRow) RecentLabel() (string, string) {
	switch {
	case r.Status == approval.StatusExpired:
		return "Expired — nobody answered", "warn"
	case r.Unanswered():
		return "Cancelled — before anyone answered", ""
	}
	return r.Outcome()
}

// Lede says whose calls the inbox lists: the viewer's own agents', their
// teams' agents', and those of the people they stand in for, named.
func (v InboxView) Lede() string {
	own := false
	var teams, people []string
	seen := map[string]bool{}
	for _, c := range v.Pending {
		switch {
		case c.Away.DecidingFor != "":
			if !seen["p:"+c.Away.DecidingFor] {
				seen["p:"+c.Away.DecidingFor] = true
				people = append(people, c.Away.DecidingFor)
			}
		case c.Deciders.TeamCall != "":
			if !seen["t:"+c.Deciders.TeamCall] {
				seen["t:"+c.Deciders.TeamCall] = true
				teams = append(teams, Marked(c.Deciders.TeamCall))
			}
		default:
			own = true
		}
	}
	if len(teams) == 0 && len(people) == 0 {
		return "Calls your agents want to make that need your answer. Nothing runs until you decide."
	}
	var parts []string
	if own {
		parts = append(parts, "your agents")
	}
	if len(teams) > 0 {
		parts = append(parts, "your teams’ agents ("+strings.Join(teams, ", ")+")")
	}
	if len(people) > 0 {
		parts = append(parts, "the agents of "+strings.Join(people, ", ")+", whom you stand in for")
	}
	s := parts[0]
	for i := 1; i < len(parts); i++ {
		if i == len(parts)-1 {
			s += " and " + parts[i]
		} else {
			s += ", " + parts[i]
		}
	}
	return "Calls from " + s + " that need your answer. Nothing runs until you decide."
}
