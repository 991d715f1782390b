package appserver

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/hook"
)

// fileItem is a fileChange item as item/started announced it.
type fileItem struct {
	changes json.RawMessage // the item's changes, as sent
	parsed  []fileChange
}

// fileChange is one FileUpdateChange.
type fileChange struct {
	Path string `json:"path"`
	Kind struct {
		Type     string  `json:"type"`
		MovePath *string `json:"move_path"`
	} `json:"kind"`
	Diff string `json:"diff"`
}

// track keeps fileChange items from item/started until item/completed:
// their approval request names only the item.
func (p *Proxy) track(method string, params json.RawMessage) {
	var n struct {
		Item struct {
			Type    string          `json:"type"`
			ID      string          `json:"id"`
			Changes json.RawMessage `json:"changes"`
		} `json:"item"`
	}
	if json.Unmarshal(params, &n) != nil || n.Item.Type != "fileChange" || n.Item.ID == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if method == methodItemCompleted {
		delete(p.changes, n.Item.ID)
		return
	}
	var parsed []fileChange
	if json.Unmarshal(n.Item.Changes, &parsed) != nil {
		return
	}
	p.changes[n.Item.ID] = fileItem{changes: n.Item.Changes, parsed: parsed}
}

// fileParams is item/fileChange/requestApproval's params.
type fileParams struct {
	ThreadID  string  `json:"threadId"`
	TurnID    string  `json:"turnId"`
	ItemID    string  `json:"itemId"`
	Reason    *string `json:"reason"`
	GrantRoot *string `json:"grantRoot"`
}

// fileArgs are what a file change's approval binds to: the changes as the
// app-server announced them, and the root it asks to write under.
type fileArgs struct {
	Changes   json.RawMessage `json:"changes"`
	GrantRoot string          `json:"grantRoot,omitempty"`
	Reason    string          `json:"reason,omitempty"`
}

// fileRequest maps a file change approval to a check of Codex's
// apply_patch with the changes' diff; an item the proxy did not see start
// is not answered (its changes are unknown).
func (p *Proxy) fileRequest(params json.RawMessage) (asked, bool) {
	var f fileParams
	if json.Unmarshal(params, &f) != nil || !ids(f.ThreadID, f.TurnID, f.ItemID) {
		return asked{}, false
	}
	p.mu.Lock()
	item, ok := p.changes[f.ItemID]
	p.mu.Unlock()
	if !ok {
		return asked{}, false
	}
	t, err := hook.CodexTarget("apply_patch")
	if err != nil {
		return asked{}, false
	}
	args := fileArgs{Changes: item.changes}
	if f.GrantRoot != nil {
		args.GrantRoot = *f.GrantRoot
	}
	reason := ""
	if f.Reason != nil {
		reason = *f.Reason
	}
	if approval.CheckFields(approval.Field{Name: "reason", Value: reason, Rule: approval.RuleReason}) != nil {
		args.Reason, reason = reason, ""
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return asked{}, false
	}
	call := client.Call{CallID: callID(f.ThreadID, f.ItemID, nil), ConversationID: f.ThreadID, TurnID: f.TurnID,
		Connector: t.Connector, Tool: t.Tool, Arguments: string(raw), Reason: reason,
		OfferedDecisions: []string{string(approval.Approve), string(approval.Reject), string(approval.ApproveConversation)}}
	if d := changesDiff(item.parsed); approval.CheckContextDiff(d) == nil {
		call.Context = &client.CallContext{Diff: d}
	}
	return asked{call: call, target: t, answer: fileDecision}, true
}

// fileDecision: approve → accept, in this conversation → acceptForSession,
// refusals as for commands.
func fileDecision(out client.Outcome, err error) any {
	if err != nil {
		return decisionDecline
	}
	if out.Allowed {
		if out.Via == "person" && out.Scope == string(approval.ScopeConversation) {
			return decisionAcceptForSession
		}
		return decisionAccept
	}
	return refusal(out)
}

// changesDiff is the changes as one unified diff: an update's diff is
// already hunks; an added or deleted file's is its whole text.
func changesDiff(changes []fileChange) string {
	var b strings.Builder
	for _, c := range changes {
		switch c.Kind.Type {
		case "add":
			b.WriteString("--- /dev/null\n+++ b/" + c.Path + "\n")
			wholeFile(&b, c.Diff, "+", false)
		case "delete":
			b.WriteString("--- a/" + c.Path + "\n+++ /dev/null\n")
			wholeFile(&b, c.Diff, "-", true)
		default:
			to := c.Path
			if c.Kind.MovePath != nil && *c.Kind.MovePath != "" {
				to = *c.Kind.MovePath
			}
			d := c.Diff
			if !strings.HasPrefix(d, "--- ") {
				b.WriteString("--- a/" + c.Path + "\n+++ b/" + to + "\n")
			}
			b.WriteString(d)
			if d != "" && !strings.HasSuffix(d, "\n") {
				b.WriteString("\n")
			}
		}
	}
	return b.String()
}

// wholeFile writes text as one hunk of added (or removed) lines.
func wholeFile(b *strings.Builder, text, sign string, old bool) {
	if text == "" {
		return
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	n := strconv.Itoa(len(lines))
	if old {
		b.WriteString("@@ -1," + n + " +0,0 @@\n")
	} else {
		b.WriteString("@@ -0,0 +1," + n + " @@\n")
	}
	for _, l := range lines {
		b.WriteString(sign + l)
		if !strings.HasSuffix(l, "\n") {
			b.WriteString("\n\\ No newline at end of file\n")
		}
	}
}
