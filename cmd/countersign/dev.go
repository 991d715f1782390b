package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/notify"
	"github.com/countersign/countersign/web"
	"github.com/jackc/pgx/v5"
)

// runDev runs the whole product on one machine. It is a separate command
// with its own wiring: nothing in serve can reach the development identity
// provider or the private cluster.
func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("dev", "countersign dev [--data DIR] [--no-agent] [--agent-interval D]", stderr, true)
	dataDir := fs.String("data", ".countersign", "folder for the private PostgreSQL cluster (reused between runs)")
	noAgent := fs.Bool("no-agent", false, "don't run the scripted demo agent")
	interval := fs.Duration("agent-interval", 8*time.Second, "time between the demo agent's calls")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, log, err := devConfig(*dataDir, stderr)
	if err != nil {
		return err
	}

	if cfg.DatabaseURL == "" {
		stop, err := startDevDatabase(ctx, &cfg, *dataDir, stdout, stderr)
		if err != nil {
			return err
		}
		defer stop()
	}

	idp, err := dev.StartIdP()
	if err != nil {
		return err
	}
	defer func() { _ = idp.Shutdown() }()
	oc := idp.Config()
	cfg.OIDCIssuer, cfg.OIDCClientID, cfg.OIDCClientSecret = oc.Issuer, oc.ClientID, oc.ClientSecret
	cfg.AdminEmails = append(cfg.AdminEmails, dev.DemoAdmin.Email)

	if cfg.SMTP == nil {
		stop, err := startMailCatcher(&cfg, stdout)
		if err != nil {
			return err
		}
		defer stop()
	}

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (set COUNTERSIGN_LISTEN and COUNTERSIGN_BASE_URL to use another port)", cfg.Listen, err)
	}
	if os.Getenv("COUNTERSIGN_BASE_URL") == "" {
		cfg.BaseURL = devBaseURL(ln.Addr().(*net.TCPAddr))
	}
	return serveApp(ctx, cfg, log, ln, devReady(ctx, &cfg, log, *dataDir, *noAgent, *interval, stdout))
}

// devConfig is the configuration from the environment, quieter than
// serve's, with the demo's audit signing key when none is configured.
func devConfig(dataDir string, stderr io.Writer) (web.Config, *slog.Logger, error) {
	cfg, err := web.LoadConfig(os.Getenv)
	if err != nil {
		return cfg, nil, err
	}
	if os.Getenv("COUNTERSIGN_LOG_LEVEL") == "" {
		// The terminal is for the hand-over, the demo agent and the mail
		// catcher; one line per request would bury them.
		cfg.LogLevel = slog.LevelWarn
	}
	log := newLogger(stderr, cfg.LogLevel)
	if err := cfg.LoadAuditSigner(); err != nil {
		return cfg, log, err
	}
	if cfg.AuditSigner == nil {
		if cfg.AuditSigner, err = devAuditSigner(dataDir); err != nil {
			return cfg, log, err
		}
	}
	return cfg, log, nil
}

// startDevDatabase starts the private PostgreSQL cluster in dataDir and
// points cfg at its countersign database. The returned stop stops the
// cluster, keeping its data.
func startDevDatabase(ctx context.Context, cfg *web.Config, dataDir string, stdout, stderr io.Writer) (func(), error) {
	fmt.Fprintf(stdout, "Starting a private PostgreSQL in %s …\n", filepath.Join(dataDir, "pg"))
	cluster, err := dev.StartCluster(ctx, filepath.Join(dataDir, "pg"))
	if err != nil {
		return nil, err
	}
	stop := func() {
		fmt.Fprintln(stdout, "Stopping the private PostgreSQL …")
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(stderr, "could not stop PostgreSQL cleanly:", err)
		} else {
			fmt.Fprintln(stdout, "PostgreSQL stopped. Data kept in", cluster.Dir)
		}
	}
	if cfg.DatabaseURL, err = ensureDatabase(ctx, cluster.URL(), "countersign"); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// devReady is what runDev does once the server listens: print the
// hand-over and, unless noAgent, start the scripted demo agent.
func devReady(ctx context.Context, cfg *web.Config, log *slog.Logger, dataDir string, noAgent bool, interval time.Duration, stdout io.Writer) func(a *app) {
	return func(a *app) {
		keyFile := filepath.Join(dataDir, devKeyFile)
		key, err := devAPIKey(ctx, a.db, keyFile)
		if err != nil {
			log.Error("dev API key", "err", err)
		}
		printHandover(stdout, handover{BaseURL: cfg.BaseURL.String(), APIKey: key, KeyFile: keyFile,
			DatabaseURL: redactedURL(cfg.DatabaseURL), Users: []dev.DemoUser{dev.DemoMember, dev.DemoAdmin, dev.DemoFinn, dev.DemoFiona, dev.DemoSam}})
		if noAgent {
			return
		}
		// The demo people may not have signed in yet when the agent first
		// asks for them: let its items wait (dev only).
		agentKey, _, err := a.db.CreateAPIKeyWith(ctx, "demo agent (countersign dev)", nil, db.APIKeyOptions{AllowFirstTimeUsers: true, Replace: true})
		if err != nil {
			log.Error("demo agent key", "err", err)
			return
		}
		go func() {
			// Wait until the server answers before the agent starts.
			time.Sleep(300 * time.Millisecond)
			err := dev.RunAgent(ctx, dev.AgentOptions{Client: client.New(cfg.BaseURL.String(), agentKey),
				User: dev.DemoMember.Subject, Interval: interval, Out: prefixWriter{w: stdout, prefix: "agent │ "}})
			if err != nil && !errors.Is(err, context.Canceled) {
				log.Error("demo agent stopped", "err", err)
			}
		}()
	}
}

// devAuditSigner signs the demo's audit checkpoints with a key made once
// in the data folder, so that the audit screen's Verify checks them as a
// deployment with COUNTERSIGN_AUDIT_SIGNING_KEY does.
func devAuditSigner(dir string) (*db.Signer, error) {
	path := filepath.Join(dir, "audit.key")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		// As the private cluster makes it: its server may run as another
		// user (dev run as root) and must reach its own folder inside.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("audit signing key: %w", err)
		}
		if _, err := db.GenerateSigningKey(path); err != nil {
			return nil, fmt.Errorf("audit signing key: %w", err)
		}
	}
	return db.LoadSigner(path)
}

// startMailCatcher points the notification mails at a local SMTP server
// that prints each mail to the terminal, so that a new user sees a
// notification without a mail server. Only dev does this.
func startMailCatcher(cfg *web.Config, stdout io.Writer) (func(), error) {
	out := prefixWriter{w: stdout, prefix: "mail  │ "}
	mc, err := dev.StartMailCatcher(func(m dev.Mail) {
		fmt.Fprintln(out, mailLine(m))
	})
	if err != nil {
		return nil, fmt.Errorf("start the local mail catcher: %w", err)
	}
	smtp, err := notify.ParseSMTPURL(mc.URL())
	if err != nil {
		_ = mc.Close()
		return nil, err
	}
	cfg.SMTP = &smtp
	if cfg.MailFrom == "" {
		cfg.MailFrom = "Countersign <countersign@localhost>"
	}
	fmt.Fprintf(stdout, "Notification mails are caught on %s and printed here, prefixed \"mail  │\", once a person has signed in (set COUNTERSIGN_SMTP_URL to send real mail).\n", mc.URL())
	return func() { _ = mc.Close() }, nil
}

// reviewLink finds a mail's review links: "Review:" lines of a
// notification mail, or any link as a fallback.
var reviewLink = regexp.MustCompile(`https?://[^\s<>"]+/approvals/[^\s<>"]+`)

// mailLine is one terminal line for a caught mail: to whom, its subject and
// the page to open, so that the demo agent's lines between mails stay
// readable. A mail about several calls links to the inbox, which lists them.
func mailLine(m dev.Mail) string {
	subject := approval.Visible(m.Subject, approval.SingleLine).String()
	line := "to " + strings.Join(m.To, ", ") + ": " + subject
	links := reviewLink.FindAllString(m.Body, -1)
	switch {
	case len(links) == 1:
		line += " — " + links[0]
	case len(links) > 1:
		if u, err := url.Parse(links[0]); err == nil {
			line += " — " + u.Scheme + "://" + u.Host + "/"
		}
	}
	return line
}

func devBaseURL(addr *net.TCPAddr) *url.URL {
	host := "localhost"
	if !addr.IP.IsLoopback() && !addr.IP.IsUnspecified() {
		host = addr.IP.String()
	}
	return &url.URL{Scheme: "http", Host: fmt.Sprintf("%s:%d", host, addr.Port)}
}

// ensureDatabase creates the named database on the cluster if it is missing
// and returns its URL.
func ensureDatabase(ctx context.Context, adminURL, name string) (string, error) {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		if _, err := conn.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()); err != nil {
			return "", err
		}
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	lines := strings.SplitAfter(string(b), "\n")
	var sb strings.Builder
	for _, l := range lines {
		if l != "" {
			sb.WriteString(p.prefix + l)
		}
	}
	_, err := io.WriteString(p.w, sb.String())
	return len(b), err
}
