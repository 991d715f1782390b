package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

const auditTimeLayout = "2006-01-02T15:04"

// auditFilter reads the filter from the query string (the URL is the
// filter: shareable, and the back button works).
func auditFilter(q url.Values) (db.AuditFilter, views.AuditFilterView, error) {
	fv := views.AuditFilterView{Actions: q["action"], Actor: strings.TrimSpace(q.Get("actor")), Connector: strings.TrimSpace(q.Get("connector")),
		Tool: strings.TrimSpace(q.Get("tool")), Conversation: strings.TrimSpace(q.Get("conversation")), From: q.Get("from"), To: q.Get("to")}
	f := db.AuditFilter{Actions: fv.Actions, Actor: fv.Actor, Connector: fv.Connector, Tool: fv.Tool, Conversation: fv.Conversation}
	var err error
	parse := func(s string) time.Time {
		if s == "" {
			return time.Time{}
		}
		t, perr := time.ParseInLocation(auditTimeLayout, s, time.UTC)
		if perr != nil {
			err = approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest, "Times look like 2026-11-30T08:00 (UTC).")
		}
		return t
	}
	f.From, f.To = parse(fv.From), parse(fv.To)
	f.Before, _ = strconv.ParseInt(q.Get("before"), 10, 64)
	f.After, _ = strconv.ParseInt(q.Get("after"), 10, 64)
	return f, fv, err
}

// AuditList is the admin's audit event screen: filters, keyset paging,
// each line in plain words with its raw fields.
func (h *Handler) AuditList(c echo.Context) error {
	ctx := c.Request().Context()
	q := c.QueryParams()
	f, fv, ferr := auditFilter(q)
	names, err := h.auditNames(ctx)
	if err != nil {
		return err
	}
	f.Tool = names.toolName(f.Tool)
	fv.Tool = f.Tool
	v := views.AuditView{Page: h.Page(c, "Audit", "audit"), Filter: fv, Groups: actionGroups(fv.Actions), Now: h.Now(),
		Connectors: withCurrent(names.connectors, fv.Connector), Tools: withCurrent(names.tools, fv.Tool)}
	status := http.StatusOK
	if ferr != nil {
		v.Error, status = approval.AsError(ferr).Message, http.StatusUnprocessableEntity
	}
	f.Limit = 50
	page, err := h.DB.ListAudit(ctx, f)
	if err != nil {
		return err
	}
	for _, l := range page.Lines {
		v.Lines = append(v.Lines, names.lineView(l))
	}
	base := url.Values{}
	for k, vs := range q {
		if k != "before" && k != "after" {
			base[k] = vs
		}
	}
	if page.HasOlder {
		v.OlderURL = withParam(base, "before", page.OldestID)
	}
	if page.HasNewer {
		v.NewerURL = withParam(base, "after", page.NewestID)
	}
	v.CSVURL = "/admin/audit.csv"
	if enc := base.Encode(); enc != "" {
		v.CSVURL += "?" + enc
	}
	if v.LatestSeq, v.LatestHash, v.Unsealed, err = h.DB.LatestAudit(ctx); err != nil {
		return err
	}
	if len(v.LatestHash) > 16 {
		v.LatestHash = v.LatestHash[:16] + "…"
	}
	return Render(c, status, views.Audit(v))
}

func withParam(base url.Values, k string, id int64) string {
	q := url.Values{}
	for kk, vs := range base {
		q[kk] = vs
	}
	q.Set(k, strconv.FormatInt(id, 10))
	return "/admin/audit?" + q.Encode()
}

// auditSentence says what happened in plain words.
func auditSentence(l db.AuditLine) string {
	s := auditActor(l) + " · " + l.Action
	if l.Connector != "" || l.Tool != "" {
		s += " · " + strings.Trim(l.Connector+" · "+l.Tool, " ·")
	}
	if l.ConversationID != "" {
		s += " in conversation " + l.ConversationID
		if l.TurnID != "" {
			s += ", turn " + l.TurnID
		}
	}
	if l.PlaybookID != "" {
		s += " (playbook " + l.PlaybookID
		if l.RunID != "" {
			s += ", run " + shortRun(l.RunID)
		}
		s += ")"
	}
	return s
}

func shortRun(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// lineView is an audit line in columns: who, what, which tool (by its
// display name), where, and a policy change's before → after.
func (n auditNames) lineView(l db.AuditLine) views.AuditLineView {
	v := auditLineView(l)
	v.Actor = auditActor(l)
	if l.Connector != "" || l.Tool != "" {
		v.ToolID = strings.Trim(l.Connector+" · "+l.Tool, " ·")
		if d := n.tool[[2]string{l.Connector, l.Tool}]; d != "" {
			v.Tool = n.connector[l.Connector] + " · " + d
		} else if l.Tool == "" {
			v.Tool = n.connector[l.Connector]
		}
	}
	var where []string
	if l.ConversationID != "" {
		w := "conversation " + l.ConversationID
		if l.TurnID != "" {
			w += ", turn " + l.TurnID
		}
		where = append(where, w)
	}
	if l.PlaybookID != "" {
		w := "playbook " + l.PlaybookID
		if l.RunID != "" {
			w += ", run " + shortRun(l.RunID)
		}
		where = append(where, w)
	}
	v.Where = strings.Join(where, "; ")
	if l.Action == approval.ActionPolicyChanged {
		v.Diff = policyDiff(l.Detail)
	}
	v.Agent = auditAgent(l)
	v.Passkey = auditPasskey(l) // passkey step-up (issue 33)
	return v
}

// auditPasskey names the passkey that made the line's decision, or "".
func auditPasskey(l db.AuditLine) string {
	if proof, _ := l.Detail["proof"].(string); proof != string(approval.ProofPasskey) {
		return ""
	}
	name, _ := l.Detail["passkey"].(string)
	return name
}

// auditAgent is who asked, for a line about a call: the key (the line's
// actor when the key asked, else the key the line names) and what the
// runtime said about itself when it asked. nil for other lines.
func auditAgent(l db.AuditLine) *views.AgentView {
	str := func(k string) string { s, _ := l.Detail[k].(string); return s }
	a := views.AgentView{KeyName: str("agent_key"), Client: str("runtime_client"), Host: str("runtime_host"),
		Directory: str("runtime_working_directory")}
	if l.ApprovalID != "" && l.ActorKind == approval.ActorAPIKey && a.KeyName == "" {
		a.KeyName = l.ActorName
	}
	if a.KeyName == "" && !a.HasRuntime() {
		return nil
	}
	return &a
}

func auditActor(l db.AuditLine) string {
	switch l.ActorKind {
	case approval.ActorAPIKey:
		return "runtime key “" + l.ActorName + "”"
	case approval.ActorSystem:
		return "Countersign"
	}
	return l.ActorName
}

func auditLineView(l db.AuditLine) views.AuditLineView {
	detail, _ := json.Marshal(l.Detail)
	return views.AuditLineView{ID: l.ID, Seq: l.Seq, Sealed: l.Sealed(), At: l.At, Sentence: auditSentence(l), Action: l.Action,
		Raw: [][2]string{{"id", fmt.Sprint(l.ID)}, {"seq", fmt.Sprint(l.Seq)}, {"at", l.At.UTC().Format(time.RFC3339Nano)},
			{"actor", l.ActorKind + " " + l.ActorID + " (" + l.ActorName + ")"}, {"action", l.Action}, {"connector", l.Connector},
			{"tool", l.Tool}, {"conversation", l.ConversationID}, {"turn", l.TurnID}, {"playbook", l.PlaybookID},
			{"run", l.RunID}, {"approval", l.ApprovalID}, {"owner", l.OwnerSubject}, {"detail", string(detail)}, {"hash", l.Hash}}}
}
