package notify

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	mail "github.com/wneessen/go-mail"
)

// SMTPConfig is where mail goes, parsed from COUNTERSIGN_SMTP_URL:
// smtp://user:pass@host:587 (STARTTLS required), smtps://user:pass@host:465
// (implicit TLS), smtp://host:25 (no authentication, for a local relay;
// STARTTLS when the relay offers it).
type SMTPConfig struct {
	Host     string
	Port     int
	Implicit bool // smtps://
	Username string
	Password string
}

// ParseSMTPURL reads an SMTP URL. Its errors never repeat the URL, which
// may hold a password.
func ParseSMTPURL(raw string) (SMTPConfig, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return SMTPConfig{}, errors.New("is not a URL such as smtp://user:pass@mail.example.com:587")
	}
	var c SMTPConfig
	switch u.Scheme {
	case "smtp":
	case "smtps":
		c.Implicit = true
	default:
		return SMTPConfig{}, errors.New("must start with smtp:// (STARTTLS) or smtps:// (implicit TLS)")
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return SMTPConfig{}, errors.New("names no host")
	}
	if port == "" {
		port = map[bool]string{false: "587", true: "465"}[c.Implicit]
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return SMTPConfig{}, errors.New("has an invalid port")
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
		return SMTPConfig{}, errors.New("must be only scheme, credentials, host and port")
	}
	c.Host, c.Port = host, n
	if u.User != nil {
		c.Username = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	return c, nil
}

// Addr is host:port.
func (c SMTPConfig) Addr() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }

// client builds a go-mail client. A password is only ever sent over TLS:
// with credentials, smtp:// requires STARTTLS.
func (c SMTPConfig) client() (*mail.Client, error) {
	opts := []mail.Option{mail.WithPort(c.Port), mail.WithTimeout(20 * time.Second)}
	switch {
	case c.Implicit:
		opts = append(opts, mail.WithSSL())
	case c.Username != "":
		opts = append(opts, mail.WithTLSPolicy(mail.TLSMandatory))
	default:
		opts = append(opts, mail.WithTLSPolicy(mail.TLSOpportunistic))
	}
	if c.Username != "" {
		opts = append(opts, mail.WithSMTPAuth(mail.SMTPAuthAutoDiscover), mail.WithUsername(c.Username), mail.WithPassword(c.Password))
	}
	cl, err := mail.NewClient(c.Host, opts...)
	if err != nil {
		return nil, fmt.Errorf("mail client: %w", err)
	}
	return cl, nil
}
