package dev

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"

	"github.com/emersion/go-smtp"
)

// Mail is one message the catcher received, decoded for reading.
type Mail struct {
	From    string   // envelope sender
	To      []string // envelope recipients
	Header  mail.Header
	Subject string // decoded
	Body    string // decoded text
	Raw     []byte
}

// MailCatcher is a local SMTP server that keeps every message instead of
// delivering it: `countersign dev` prints them, tests read them. It is
// never started by serve.
type MailCatcher struct {
	ln  net.Listener
	srv *smtp.Server
	mu  sync.Mutex
	got []Mail
	// C receives each message as it arrives (buffered; never blocks the server).
	C      chan Mail
	onMail func(Mail)
}

// StartMailCatcher listens on a free loopback port; onMail, if set, is
// called with each message.
func StartMailCatcher(onMail func(Mail)) (*MailCatcher, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mc := &MailCatcher{ln: ln, C: make(chan Mail, 100), onMail: onMail}
	mc.srv = smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &catchSession{mc: mc}, nil }))
	mc.srv.Domain = "localhost"
	mc.srv.MaxMessageBytes = 1 << 20
	go func() { _ = mc.srv.Serve(ln) }()
	return mc, nil
}

// URL is the COUNTERSIGN_SMTP_URL that reaches the catcher.
func (mc *MailCatcher) URL() string { return "smtp://" + mc.ln.Addr().String() }

// Mails returns what arrived so far.
func (mc *MailCatcher) Mails() []Mail {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	return append([]Mail(nil), mc.got...)
}

// Close stops the catcher.
func (mc *MailCatcher) Close() error { return mc.srv.Close() }

func (mc *MailCatcher) keep(m Mail) {
	mc.mu.Lock()
	mc.got = append(mc.got, m)
	mc.mu.Unlock()
	select {
	case mc.C <- m:
	default:
	}
	if mc.onMail != nil {
		mc.onMail(m)
	}
}

type catchSession struct {
	mc   *MailCatcher
	from string
	to   []string
}

func (s *catchSession) Reset()        { s.from, s.to = "", nil }
func (s *catchSession) Logout() error { return nil }
func (s *catchSession) Mail(from string, _ *smtp.MailOptions) error {
	s.from = from
	return nil
}
func (s *catchSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}
func (s *catchSession) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m := Mail{From: s.from, To: s.to, Raw: raw}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return errors.New("unreadable message")
	}
	m.Header = msg.Header
	dec := new(mime.WordDecoder)
	if m.Subject, err = dec.DecodeHeader(msg.Header.Get("Subject")); err != nil {
		m.Subject = msg.Header.Get("Subject")
	}
	body, _ := io.ReadAll(msg.Body)
	if strings.EqualFold(msg.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		if b, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(body))); err == nil {
			body = b
		}
	}
	m.Body = strings.ReplaceAll(string(body), "\r\n", "\n")
	s.mc.keep(m)
	return nil
}
