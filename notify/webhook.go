package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
)

// SignatureHeader carries a webhook body's signature.
const SignatureHeader = "Countersign-Signature"

// Sign returns the signature header's value for body sent at t:
// "t=<unix>,v1=<hex HMAC-SHA256 of "<unix>.<body>" under secret>".
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil))
}

// Webhooks posts events to the admins' endpoints, signed.
type Webhooks struct {
	db     *db.DB
	base   *url.URL
	client *http.Client
	now    func() time.Time
}

// NewWebhooks prepares the webhook channel; links point under base.
func NewWebhooks(store *db.DB, base *url.URL, now func() time.Time) *Webhooks {
	if now == nil {
		now = time.Now
	}
	// No redirects: a receiver answers for itself, and a redirect must not
	// carry a signed event somewhere else.
	c := &http.Client{Timeout: 15 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &Webhooks{db: store, base: base, client: c, now: now}
}

// Name implements Channel.
func (w *Webhooks) Name() string { return "webhook" }

// TargetsDependOnKindAndOwnerOnly: see SameForKindAndOwner.
func (*Webhooks) TargetsDependOnKindAndOwnerOnly() {}

// Targets implements Channel: the endpoints subscribed to ev's kind.
func (w *Webhooks) Targets(ctx context.Context, ev db.NotificationEvent) ([]Target, error) {
	if ev.Kind == db.EventTest {
		return nil, nil // queued straight to its endpoint
	}
	ids, err := w.db.WebhookTargets(ctx, ev.Kind)
	out := make([]Target, len(ids))
	for i, id := range ids {
		out[i] = Target{ID: id}
	}
	return out, err
}

// Payload is a webhook's JSON body. It names the event, the item and the
// tool, never argument values, the agent's reason or a reviewer's reason.
type Payload struct {
	Event       string `json:"event"`
	DeliveryID  int64  `json:"delivery_id"`
	EventID     int64  `json:"event_id"`
	ApprovalID  string `json:"approval_id,omitempty"`
	PlaybookID  string `json:"playbook_id,omitempty"`
	Tool        string `json:"tool,omitempty"`
	ToolDisplay string `json:"tool_display_name,omitempty"`
	Connector   string `json:"connector,omitempty"`
	Owner       string `json:"owner,omitempty"`
	// AgentKey is the name of the API key whose agent asked, for an item.
	AgentKey   string `json:"agent_key,omitempty"`
	Status     string `json:"status,omitempty"`
	Link       string `json:"link"`
	OccurredAt string `json:"occurred_at"`
	// Checkpoint is the signed checkpoint of an audit.checkpoint event: its
	// signature verifies with the audit key's public half over
	// db.Checkpoint.Message().
	Checkpoint *db.Checkpoint `json:"checkpoint,omitempty"`
	// Text is one line for chat tools: a Slack or Teams incoming-webhook
	// URL shows it as the message.
	Text string `json:"text"`
}

// BuildPayload turns a delivery into the webhook body.
func BuildPayload(base *url.URL, d db.Delivery) Payload {
	p := Payload{Event: d.Kind, DeliveryID: d.ID, EventID: d.EventID, ApprovalID: d.ApprovalID, PlaybookID: d.PlaybookID,
		Tool: d.Tool, ToolDisplay: d.ToolDisplay, Connector: d.Connector, Owner: d.Owner,
		AgentKey:   approval.Visible(d.AgentKey, approval.SingleLine).String(),
		OccurredAt: d.EventAt.UTC().Format(time.RFC3339)}
	if s, ok := d.Detail["status"].(string); ok {
		p.Status = s
	}
	name := approval.Visible(d.ToolDisplay, approval.SingleLine).String()
	conn := approval.Visible(d.ConnectorDisplay, approval.SingleLine).String()
	switch {
	case d.ApprovalID != "":
		p.Link = Link(base, d.ApprovalID)
	case d.Kind == db.EventPreapprovalLapsed:
		p.Link = base.String() + "/playbooks/" + url.PathEscape(d.PlaybookID)
	case d.Kind == db.EventPolicyChanged:
		p.Link = base.String() + "/admin/policies"
	case d.Kind == db.EventAuditCheckpoint:
		p.Link = base.String() + "/admin/audit/verify"
		p.Checkpoint = checkpointOf(d.Detail)
	default:
		p.Link = base.String() + "/admin/webhooks"
	}
	what := map[string]string{
		db.EventApprovalRequested: "waits for approval",
		db.EventApprovalDecided:   "was " + p.Status,
		db.EventApprovalExpired:   "expired unanswered",
		db.EventApprovalCancelled: "was cancelled",
		db.EventPreapprovalLapsed: "lost its playbook pre-approval",
		db.EventPolicyChanged:     "had its policy changed",
	}[d.Kind]
	switch {
	case d.Kind == db.EventTest:
		p.Text = "Countersign test event: this webhook works. " + p.Link
	case p.Checkpoint != nil:
		p.Text = fmt.Sprintf("Countersign: audit checkpoint signed with key %s: event %d has hash %s: %s",
			p.Checkpoint.KeyID, p.Checkpoint.Seq, p.Checkpoint.Hash, p.Link)
	default:
		// Chat tools read <…> and & as markup: escape them as Slack asks.
		p.Text = fmt.Sprintf("Countersign: %s (%s) %s: %s", chatEscape(name), chatEscape(conn), what, p.Link)
	}
	return p
}

// checkpointOf reads the checkpoint an audit.checkpoint event carries; nil
// when it carries none.
func checkpointOf(detail map[string]any) *db.Checkpoint {
	b, err := json.Marshal(detail["checkpoint"])
	var c db.Checkpoint
	if err != nil || json.Unmarshal(b, &c) != nil || c.Signature == "" {
		return nil
	}
	return &c
}

var chatEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func chatEscape(s string) string { return chatEscaper.Replace(s) }

// Send implements Channel: one signed POST; any 2xx is delivered.
func (w *Webhooks) Send(ctx context.Context, target string, ds []db.Delivery) Result {
	id, err := strconv.ParseInt(target, 10, 64)
	if err != nil {
		return Result{Err: errors.New("bad target"), Permanent: true}
	}
	hook, err := w.db.WebhookByID(ctx, id)
	if e := approval.AsError(err); e != nil && e.Kind == approval.KindNotFound {
		return Result{Err: errors.New("webhook deleted"), Permanent: true}
	}
	if err != nil {
		return Result{Err: errors.New("could not read the webhook")}
	}
	body, err := json.Marshal(BuildPayload(w.base, ds[0]))
	if err != nil {
		return Result{Err: err, Permanent: true}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook.URL, bytes.NewReader(body))
	if err != nil {
		return Result{Err: errors.New("invalid URL"), Permanent: true}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Countersign-Webhook")
	req.Header.Set(SignatureHeader, Sign(hook.Secret, w.now(), body))
	resp, err := w.client.Do(req)
	if err != nil {
		// Not err.Error(): it may echo the URL, which can hold a token.
		return Result{Err: errors.New("no answer from the receiver")}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Result{StatusCode: resp.StatusCode, Err: fmt.Errorf("receiver answered %d", resp.StatusCode)}
	}
	return Result{StatusCode: resp.StatusCode}
}
