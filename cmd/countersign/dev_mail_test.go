package main

import (
	"bytes"
	"net/smtp"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/notify"
	"github.com/countersign/countersign/web"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// dev points mail at a local catcher that prints one line per mail: to
// whom, the subject and the page to open; never the whole mail.
func TestDevMailCatcher(t *testing.T) {
	var cfg web.Config
	out := &syncBuffer{}
	stop, err := startMailCatcher(&cfg, out)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if cfg.SMTP == nil || cfg.SMTP.Host != "127.0.0.1" || cfg.MailFrom == "" {
		t.Fatalf("config not pointed at the catcher: %+v %q", cfg.SMTP, cfg.MailFrom)
	}
	base, _ := url.Parse("http://localhost:8080")
	item := func(id, tool string) db.Delivery {
		return db.Delivery{ApprovalID: id, ToolDisplay: tool, ConnectorDisplay: "Mail", AgentKey: "demo agent"}
	}
	send := func(items ...db.Delivery) {
		t.Helper()
		subject, body := notify.ComposeMail(base, items)
		msg := "From: countersign@localhost\r\nTo: maya@example.com\r\nSubject: " + subject + "\r\n\r\n" + strings.ReplaceAll(body, "\n", "\r\n")
		if err := smtp.SendMail(cfg.SMTP.Addr(), nil, "countersign@localhost", []string{"maya@example.com"}, []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	lines := func(n int) []string {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			var got []string
			for _, l := range strings.Split(out.String(), "\n") {
				if strings.HasPrefix(l, "mail  │ ") {
					got = append(got, l)
				}
			}
			if len(got) >= n {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d mail lines printed, want %d:\n%s", len(got), n, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	send(item("a1", "Send email"))
	got := lines(1)
	if want := "mail  │ to maya@example.com: Approval needed: Send email — http://localhost:8080/approvals/a1"; len(got) != 1 || got[0] != want {
		t.Fatalf("one mail printed as %q, want %q", got, want)
	}
	// Several calls in one mail: the inbox lists them.
	send(item("b1", "Send email"), item("b2", "Delete file"), item("b3", "Open page"))
	got = lines(2)
	if want := "mail  │ to maya@example.com: Approval needed: 3 calls are waiting — http://localhost:8080/"; len(got) != 2 || got[1] != want {
		t.Fatalf("a mail about three calls printed as %q, want %q", got, want)
	}
	if strings.Contains(out.String(), "Agent key") || strings.Contains(out.String(), "Turn these mails off") {
		t.Fatalf("the whole mail was printed:\n%s", out.String())
	}
}
