package main

import (
	"bytes"
	"net/smtp"
	"strings"
	"sync"
	"testing"
	"time"

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

// dev points mail at a local catcher that prints each mail to the terminal.
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
	msg := "From: countersign@localhost\r\nTo: maya@example.com\r\nSubject: Approval needed: Send email\r\n\r\nReview: http://localhost:8080/approvals/1\r\n"
	if err := smtp.SendMail(cfg.SMTP.Addr(), nil, "countersign@localhost", []string{"maya@example.com"}, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "mail  │ Review: http://localhost:8080/approvals/1") {
		if time.Now().After(deadline) {
			t.Fatalf("the mail was not printed:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(out.String(), "mail  │ Subject: Approval needed: Send email") {
		t.Fatalf("output:\n%s", out.String())
	}
}
