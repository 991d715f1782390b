package notify

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	mail "github.com/wneessen/go-mail"
)

// Email mails a person about their new pending items.
type Email struct {
	db     *db.DB
	smtp   SMTPConfig
	from   string
	base   *url.URL
	window time.Duration
	now    func() time.Time
}

// DefaultMailWindow is how long after a mail the next items of the same
// person wait, so that a burst arrives as one mail.
const DefaultMailWindow = 30 * time.Second

// NewEmail prepares the email channel. Items that come within window of a
// person's last mail are grouped into one mail when the window ends.
func NewEmail(store *db.DB, smtp SMTPConfig, from string, base *url.URL, window time.Duration, now func() time.Time) *Email {
	if now == nil {
		now = time.Now
	}
	if window <= 0 {
		window = DefaultMailWindow
	}
	return &Email{db: store, smtp: smtp, from: from, base: base, window: window, now: now}
}

// Name implements Channel.
func (e *Email) Name() string { return "email" }

// GroupByTarget implements Grouped: one mail per person and burst.
func (e *Email) GroupByTarget() bool { return true }

// Targets implements Channel: a new pending item is mailed to each person
// who may decide it (Deciders), an escalated one to its backup team's
// members, each if they have a verified address and did not turn mail off.
func (e *Email) Targets(ctx context.Context, ev db.NotificationEvent) ([]Target, error) {
	people, err := peopleTold(ctx, e.db, ev)
	if err != nil {
		return nil, err
	}
	return targetsOf(people, func(subject string) ([]Target, error) { return e.personTargets(ctx, subject) })
}

// personTargets is subject's mail, if they have a verified address and did
// not turn mail off.
func (e *Email) personTargets(ctx context.Context, subject string) ([]Target, error) {
	r, ok, err := e.db.MailRecipientFor(ctx, subject, e.now())
	if err != nil || !ok || !r.Enabled {
		return nil, err
	}
	return []Target{{ID: subject, NotBefore: e.groupUntil(r)}}, nil
}

// groupUntil is when a new item's mail may go: with the mail already
// waiting, if there is one; else one window after the person's last mail
// or last planned mail; else now (zero). So the first item of a burst is
// mailed at once and the rest arrive together one window later.
func (e *Email) groupUntil(r db.MailRecipient) time.Time {
	if r.WaitingUntil != nil {
		return *r.WaitingUntil
	}
	var last time.Time
	for _, t := range []*time.Time{r.LastMailAt, r.LastPlannedAt} {
		if t != nil && t.After(last) {
			last = *t
		}
	}
	if last.IsZero() {
		return time.Time{}
	}
	return last.Add(e.window)
}

// Send implements Channel: one plain-text mail for the items still
// pending; nothing when the person turned mail off meanwhile.
func (e *Email) Send(ctx context.Context, subject string, ds []db.Delivery) Result {
	r, ok, err := e.db.MailRecipientFor(ctx, subject, e.now())
	if err != nil {
		return Result{Err: errors.New("could not read the recipient")}
	}
	if !ok || !r.Enabled {
		return Result{Skipped: true}
	}
	var items []db.Delivery
	for _, d := range ds {
		if d.Status == string(approval.StatusPending) {
			items = append(items, d)
		}
	}
	if len(items) == 0 {
		return Result{Skipped: true} // all answered before the mail went out
	}
	subj, body := ComposeMail(e.base, items)
	m := mail.NewMsg()
	if err := m.From(e.from); err != nil {
		return Result{Err: errors.New("invalid sender address"), Permanent: true}
	}
	if err := m.To(r.Email); err != nil {
		return Result{Err: errors.New("invalid recipient address"), Permanent: true}
	}
	m.Subject(subj)
	m.SetDate()
	m.SetMessageID()
	m.SetBodyString(mail.TypeTextPlain, body)
	c, err := e.smtp.client()
	if err != nil {
		return Result{Err: err, Permanent: true}
	}
	if err := c.DialAndSendWithContext(ctx, m); err != nil {
		return Result{Err: fmt.Errorf("mail server: %s", firstLine(err.Error()))}
	}
	if err := e.db.MarkMailed(ctx, subject, e.now()); err != nil {
		return Result{} // sent; only the grouping hint was not kept
	}
	return Result{}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// ComposeMail writes a notification mail about items (all one person's):
// subject and plain-text body. It says what waits and links to each item's
// page; it never carries argument values or the agent's stated reason (an
// agent may copy arguments into it). Untrusted names are shown with their
// hidden characters as visible markers, never cut, and with "://" written
// "[:]//" so that no mail client turns a name a runtime chose into a link.
func ComposeMail(base *url.URL, items []db.Delivery) (subject, body string) {
	show := func(s string) string {
		return strings.ReplaceAll(approval.Visible(s, approval.SingleLine).String(), "://", "[:]//")
	}
	if len(items) == 1 {
		subject = "Approval needed: " + show(items[0].ToolDisplay)
	} else {
		subject = fmt.Sprintf("Approval needed: %d calls are waiting", len(items))
	}
	var b strings.Builder
	if len(items) == 1 {
		b.WriteString("An agent wants to run a tool and waits for your answer.\n\n")
	} else {
		fmt.Fprintf(&b, "Agents want to run %d tools and wait for your answer.\n\n", len(items))
	}
	for _, d := range items {
		fmt.Fprintf(&b, "Tool:      %s\n", show(d.ToolDisplay))
		fmt.Fprintf(&b, "Connector: %s\n", show(d.ConnectorDisplay))
		fmt.Fprintf(&b, "Agent key: %s\n", show(d.AgentKey))
		if d.ExpiresAt != nil {
			fmt.Fprintf(&b, "Expires:   %s\n", d.ExpiresAt.UTC().Format("2006-01-02 15:04:05 UTC"))
		}
		if d.Kind == db.EventApprovalEscalated {
			b.WriteString("Escalated: nobody answered in time, so your team may decide it too.\n")
		}
		fmt.Fprintf(&b, "Review:    %s\n\n", Link(base, d.ApprovalID))
	}
	b.WriteString("Open the link, sign in, and decide there: the page shows the exact call.\n")
	b.WriteString("This mail never carries the call's arguments.\n\n")
	fmt.Fprintf(&b, "Turn these mails off on %s/settings\n", base.String())
	return subject, b.String()
}
