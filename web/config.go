package web

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/notify"
)

// Config is Countersign's configuration, read from COUNTERSIGN_* variables.
type Config struct {
	DatabaseURL      string
	Listen           string
	BaseURL          *url.URL
	OIDCIssuer       string
	OIDCClientID     string
	OIDCClientSecret string
	// OIDCGroupsClaim names the ID token claim that lists the person's
	// groups; each group is a team (refreshed at every sign-in).
	OIDCGroupsClaim      string
	AdminEmails          []string
	ApprovalTimeout      time.Duration
	DeniedBlockThreshold int
	SessionIdleTimeout   time.Duration
	SessionLifetime      time.Duration
	LogLevel             slog.Level
	TrustedProxies       []*net.IPNet
	ShutdownTimeout      time.Duration
	PreviewRetention     time.Duration
	// MigrationLockTimeout bounds how long a starting process waits for
	// another one's migrations.
	MigrationLockTimeout time.Duration
	// SMTP is where notification mails go; nil: email is not configured.
	SMTP     *notify.SMTPConfig
	MailFrom string
	// VAPID is the configured Web Push key pair; nil: the pair kept in the
	// database (generated on first use).
	VAPID *db.VAPIDKeys
	// AuditSigningKey is the file of the key that signs the audit log's
	// checkpoints (COUNTERSIGN_AUDIT_SIGNING_KEY); empty: none are signed.
	// Only the commands that serve read it (LoadAuditSigner).
	AuditSigningKey string
	// AuditSigner is the key loaded from AuditSigningKey; nil: none.
	AuditSigner *db.Signer
}

// Setting documents one environment variable.
type Setting struct {
	Name, Default, Meaning string
}

// Settings lists every variable LoadConfig reads, for --help and the README.
var Settings = []Setting{
	{"COUNTERSIGN_DATABASE_URL", "", "Postgres connection string (required for serve)"},
	{"COUNTERSIGN_LISTEN", "127.0.0.1:8080", "listen address"},
	{"COUNTERSIGN_BASE_URL", "http://localhost:8080", "public URL: OIDC redirect, Secure cookies when https"},
	{"COUNTERSIGN_OIDC_ISSUER", "", "identity provider issuer URL (required for serve)"},
	{"COUNTERSIGN_OIDC_CLIENT_ID", "", "OIDC client id (required for serve)"},
	{"COUNTERSIGN_OIDC_CLIENT_SECRET", "", "OIDC client secret (required for serve)"},
	{"COUNTERSIGN_OIDC_GROUPS_CLAIM", "groups", "ID token claim listing the person's groups: each is a team, refreshed at every sign-in"},
	{"COUNTERSIGN_ADMIN_EMAILS", "", "comma-separated verified emails that get the admin role"},
	{"COUNTERSIGN_APPROVAL_TIMEOUT", "600s", "wait cap for a pending item"},
	{"COUNTERSIGN_DENIED_BLOCK_THRESHOLD", "2", "explicit rejections per turn before approval_denied_repeated"},
	{"COUNTERSIGN_SESSION_IDLE_TIMEOUT", "12h", "sign out after this long without a request"},
	{"COUNTERSIGN_SESSION_LIFETIME", "168h", "sign out this long after sign-in, whatever the activity"},
	{"COUNTERSIGN_LOG_LEVEL", "info", "debug, info, warn or error"},
	{"COUNTERSIGN_TRUSTED_PROXIES", "", "comma-separated CIDRs of reverse proxies whose X-Forwarded-For is trusted"},
	{"COUNTERSIGN_SHUTDOWN_TIMEOUT", "30s", "how long in-flight requests get to finish on SIGTERM"},
	{"COUNTERSIGN_PREVIEW_RETENTION", "720h", "how long argument previews of decided items are kept (audit lines are kept)"},
	{"COUNTERSIGN_MIGRATION_LOCK_TIMEOUT", "10m", "how long serve and migrate wait for another process's migrations before giving up (the wait is logged)"},
	{"COUNTERSIGN_SMTP_URL", "", "mail server for notifications: smtp://user:pass@host:587 (STARTTLS), smtps://user:pass@host:465 (implicit TLS), smtp://host:25 (local relay, no auth); empty: no mail"},
	{"COUNTERSIGN_MAIL_FROM", "", "sender address of notification mails (required with COUNTERSIGN_SMTP_URL), e.g. Countersign <countersign@example.com>"},
	{"COUNTERSIGN_VAPID_PUBLIC_KEY", "", "Web Push VAPID public key (base64url, uncompressed P-256 point); set both or neither; empty: a pair generated once and kept in the database"},
	{"COUNTERSIGN_VAPID_PRIVATE_KEY", "", "Web Push VAPID private key (base64url, 32 bytes), the pair of COUNTERSIGN_VAPID_PUBLIC_KEY"},
	{"COUNTERSIGN_AUDIT_SIGNING_KEY", "", "file of the Ed25519 key that signs audit checkpoints (countersign audit keygen); empty: checkpoints are not signed"},
}

// LoadConfig reads the configuration through getenv, applying defaults and
// checking formats. Requirements that depend on the command are checked by
// RequireServe.
func LoadConfig(getenv func(string) string) (Config, error) {
	get := func(name string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		for _, s := range Settings {
			if s.Name == name {
				return s.Default
			}
		}
		return ""
	}
	var errs []error
	dur := func(name string) time.Duration {
		d, err := time.ParseDuration(get(name))
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be a positive duration such as 600s or 10m, got %q", name, get(name)))
		}
		return d
	}
	c := Config{
		DatabaseURL:          get("COUNTERSIGN_DATABASE_URL"),
		Listen:               get("COUNTERSIGN_LISTEN"),
		OIDCIssuer:           get("COUNTERSIGN_OIDC_ISSUER"),
		OIDCClientID:         get("COUNTERSIGN_OIDC_CLIENT_ID"),
		OIDCClientSecret:     get("COUNTERSIGN_OIDC_CLIENT_SECRET"),
		OIDCGroupsClaim:      get("COUNTERSIGN_OIDC_GROUPS_CLAIM"),
		ApprovalTimeout:      dur("COUNTERSIGN_APPROVAL_TIMEOUT"),
		SessionIdleTimeout:   dur("COUNTERSIGN_SESSION_IDLE_TIMEOUT"),
		SessionLifetime:      dur("COUNTERSIGN_SESSION_LIFETIME"),
		ShutdownTimeout:      dur("COUNTERSIGN_SHUTDOWN_TIMEOUT"),
		PreviewRetention:     dur("COUNTERSIGN_PREVIEW_RETENTION"),
		MigrationLockTimeout: dur("COUNTERSIGN_MIGRATION_LOCK_TIMEOUT"),
	}
	u, err := url.Parse(get("COUNTERSIGN_BASE_URL"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("COUNTERSIGN_BASE_URL must be an absolute http(s) URL, got %q", get("COUNTERSIGN_BASE_URL")))
	} else {
		u.Path = strings.TrimRight(u.Path, "/")
		c.BaseURL = u
	}
	for _, e := range strings.Split(get("COUNTERSIGN_ADMIN_EMAILS"), ",") {
		if e = strings.ToLower(strings.TrimSpace(e)); e != "" {
			c.AdminEmails = append(c.AdminEmails, e)
		}
	}
	n, err := strconv.Atoi(get("COUNTERSIGN_DENIED_BLOCK_THRESHOLD"))
	if err != nil || n < 1 {
		errs = append(errs, fmt.Errorf("COUNTERSIGN_DENIED_BLOCK_THRESHOLD must be a whole number of at least 1, got %q", get("COUNTERSIGN_DENIED_BLOCK_THRESHOLD")))
	}
	c.DeniedBlockThreshold = n
	if err := c.LogLevel.UnmarshalText([]byte(get("COUNTERSIGN_LOG_LEVEL"))); err != nil {
		errs = append(errs, fmt.Errorf("COUNTERSIGN_LOG_LEVEL must be debug, info, warn or error, got %q", get("COUNTERSIGN_LOG_LEVEL")))
	}
	for _, cidr := range strings.Split(get("COUNTERSIGN_TRUSTED_PROXIES"), ",") {
		if cidr = strings.TrimSpace(cidr); cidr == "" {
			continue
		}
		_, n, err := net.ParseCIDR(cidr)
		if err != nil {
			errs = append(errs, fmt.Errorf("COUNTERSIGN_TRUSTED_PROXIES: %q is not a CIDR such as 10.0.0.0/8", cidr))
			continue
		}
		c.TrustedProxies = append(c.TrustedProxies, n)
	}
	errs = append(errs, c.loadMail(get)...)
	errs = append(errs, c.loadVAPID(get)...)
	c.AuditSigningKey = get("COUNTERSIGN_AUDIT_SIGNING_KEY")
	if c.ApprovalTimeout > 0 && c.ApprovalTimeout < time.Second {
		errs = append(errs, errors.New("COUNTERSIGN_APPROVAL_TIMEOUT must be at least 1s"))
	}
	return c, errors.Join(errs...)
}

// LoadAuditSigner reads the audit signing key named by AuditSigningKey
// into AuditSigner, for the commands that serve: others (migrate, audit
// verify, apikey) never touch the private key.
func (c *Config) LoadAuditSigner() error {
	if c.AuditSigningKey == "" || c.AuditSigner != nil {
		return nil
	}
	s, err := db.LoadSigner(c.AuditSigningKey)
	if err != nil {
		return fmt.Errorf("COUNTERSIGN_AUDIT_SIGNING_KEY: %w", err)
	}
	c.AuditSigner = s
	return nil
}

// RequireServe checks what `countersign serve` cannot run without.
func (c Config) RequireServe() error {
	var errs []error
	for _, req := range []struct{ name, val string }{
		{"COUNTERSIGN_DATABASE_URL", c.DatabaseURL},
		{"COUNTERSIGN_OIDC_ISSUER", c.OIDCIssuer},
		{"COUNTERSIGN_OIDC_CLIENT_ID", c.OIDCClientID},
		{"COUNTERSIGN_OIDC_CLIENT_SECRET", c.OIDCClientSecret},
	} {
		if req.val == "" {
			errs = append(errs, fmt.Errorf("%s is required for serve", req.name))
		}
	}
	return errors.Join(errs...)
}

// Secure reports whether the public URL is https, which turns on Secure
// cookies, the __Host- cookie prefix and HSTS.
func (c Config) Secure() bool { return c.BaseURL != nil && c.BaseURL.Scheme == "https" }

// IsAdminEmail reports whether a verified email is listed in
// COUNTERSIGN_ADMIN_EMAILS.
func (c Config) IsAdminEmail(email string) bool {
	email = strings.ToLower(strings.TrimSpace(email))
	for _, a := range c.AdminEmails {
		if a == email && email != "" {
			return true
		}
	}
	return false
}

// loadMail reads the mail settings. An SMTP URL may hold a password: no
// message repeats it.
func (c *Config) loadMail(get func(string) string) []error {
	raw, from := get("COUNTERSIGN_SMTP_URL"), get("COUNTERSIGN_MAIL_FROM")
	if raw == "" {
		if from != "" {
			return []error{errors.New("COUNTERSIGN_MAIL_FROM is set but COUNTERSIGN_SMTP_URL is not: set both to send mail")}
		}
		return nil
	}
	var errs []error
	s, err := notify.ParseSMTPURL(raw)
	if err != nil {
		errs = append(errs, fmt.Errorf("COUNTERSIGN_SMTP_URL %v", err))
	} else {
		c.SMTP = &s
	}
	if from == "" {
		errs = append(errs, errors.New("COUNTERSIGN_MAIL_FROM is required with COUNTERSIGN_SMTP_URL"))
	} else if _, err := mail.ParseAddress(from); err != nil {
		errs = append(errs, fmt.Errorf("COUNTERSIGN_MAIL_FROM must be an address such as countersign@example.com, got %q", from))
	}
	c.MailFrom = from
	return errs
}

// loadVAPID reads a configured Web Push key pair: both halves or neither.
// No message repeats the private key.
func (c *Config) loadVAPID(get func(string) string) []error {
	pub, priv := get("COUNTERSIGN_VAPID_PUBLIC_KEY"), get("COUNTERSIGN_VAPID_PRIVATE_KEY")
	switch {
	case pub == "" && priv == "":
		return nil
	case priv == "":
		return []error{errors.New("COUNTERSIGN_VAPID_PRIVATE_KEY is required with COUNTERSIGN_VAPID_PUBLIC_KEY: set both or neither")}
	case pub == "":
		return []error{errors.New("COUNTERSIGN_VAPID_PUBLIC_KEY is required with COUNTERSIGN_VAPID_PRIVATE_KEY: set both or neither")}
	}
	k, err := notify.ParseVAPIDKeys(pub, priv)
	switch {
	case errors.Is(err, notify.ErrVAPIDPublic):
		return []error{fmt.Errorf("COUNTERSIGN_VAPID_PUBLIC_KEY %v", err)}
	case errors.Is(err, notify.ErrVAPIDPrivate):
		return []error{fmt.Errorf("COUNTERSIGN_VAPID_PRIVATE_KEY %v", err)}
	case err != nil:
		return []error{fmt.Errorf("COUNTERSIGN_VAPID_PRIVATE_KEY: %v (COUNTERSIGN_VAPID_PUBLIC_KEY)", err)}
	}
	c.VAPID = &k
	return nil
}
