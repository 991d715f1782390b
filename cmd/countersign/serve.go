package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/web"
)

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", "countersign serve", stderr, true)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := web.LoadConfig(os.Getenv)
	if err != nil {
		return err
	}
	if err := cfg.RequireServe(); err != nil {
		return err
	}
	if err := cfg.LoadAuditSigner(); err != nil {
		return err
	}
	log := newLogger(stderr, cfg.LogLevel)
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s (COUNTERSIGN_LISTEN): %w", cfg.Listen, err)
	}
	log.Info("countersign serving", "version", buildVersion().String(), "listen", ln.Addr().String(), "base_url", cfg.BaseURL.String())
	return serveApp(ctx, cfg, log, ln, nil)
}

// app is a running Countersign: pool, listener hub, server, sweeps.
type app struct {
	db     *db.DB
	hub    *db.Hub
	server *web.Server
}

// serveApp migrates, connects, starts the listener hub, identity provider
// discovery and sweeps, and serves on ln until ctx ends. ready, if set, is
// called once the app is built (dev uses it to start the demo agent).
func serveApp(ctx context.Context, cfg web.Config, log *slog.Logger, ln net.Listener, ready func(*app)) error {
	n, err := db.MigrateWith(ctx, cfg.DatabaseURL, db.MigrateOptions{Log: log, LockTimeout: cfg.MigrationLockTimeout})
	if err != nil {
		return err
	}
	if n > 0 {
		log.Info("database migrated", "applied", n, "schema_version", db.KnownSchemaVersion())
	}
	store, err := db.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer store.Close()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	hub := db.NewHub(cfg.DatabaseURL, log)
	go hub.Run(runCtx)
	select {
	case <-hub.Ready():
	case <-time.After(15 * time.Second):
		return fmt.Errorf("could not LISTEN for notifications on the database (a transaction pooler cannot carry LISTEN; use a direct or session-pooled connection)")
	case <-ctx.Done():
		return nil
	}
	build := buildVersion()
	srv := web.New(web.Deps{Config: cfg, DB: store, Log: log, Hub: hub, Build: &build})
	go func() { _ = srv.OIDC.Discover(runCtx) }()
	go sweep(runCtx, store, log, cfg.PreviewRetention)
	sealer := &db.Sealer{DB: store, Log: log, Signer: cfg.AuditSigner}
	if sealer.Signer != nil {
		log.Info("audit checkpoints signed", "key_id", sealer.Signer.KeyID)
	}
	// Each checkpoint also goes out as an audit.checkpoint event (the
	// outbox), so that a copy outlives the database.
	go sealer.Run(runCtx, sealEvery)
	if ready != nil {
		ready(&app{db: store, hub: hub, server: srv})
	}
	err = srv.Serve(ctx, ln)
	log.Info("stopped")
	return err
}

// sealEvery is how often each instance tries to seal the audit log; the
// unsealed window is this plus the longest open transaction.
const sealEvery = 100 * time.Millisecond

// sweep expires pending items past their wait cap and escalates those past
// their rule's escalation delay every second, and every
// ten minutes removes expired sessions, unfinished sign-ins past their
// expiry and argument previews past their retention, until ctx ends.
func sweep(ctx context.Context, store *db.DB, log *slog.Logger, retention time.Duration) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastSessions := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if n, err := store.ExpireDue(ctx, 500); err != nil && ctx.Err() == nil {
			log.Warn("expiry sweep", "err", err)
		} else if n > 0 {
			log.Info("expired pending approvals", "count", n)
		}
		// Escalation: items whose rule's delay passed without an answer go
		// to the backup team too (after expiry, so that the expiry wins).
		if n, err := store.EscalateDue(ctx, 500); err != nil && ctx.Err() == nil {
			log.Warn("escalation sweep", "err", err)
		} else if n > 0 {
			log.Info("escalated pending approvals", "count", n)
		}
		if time.Since(lastSessions) > 10*time.Minute {
			lastSessions = time.Now()
			if _, err := store.SweepSessions(ctx); err != nil && ctx.Err() == nil {
				log.Warn("session sweep", "err", err)
			}
			if _, err := store.SweepSignInFlows(ctx); err != nil && ctx.Err() == nil {
				log.Warn("sign-in flow sweep", "err", err)
			}
			if n, err := store.RemoveOldPreviews(ctx, retention, 5000); err != nil && ctx.Err() == nil {
				log.Warn("preview retention sweep", "err", err)
			} else if n > 0 {
				log.Info("removed argument previews past retention", "count", n, "retention", retention)
			}
		}
	}
}
