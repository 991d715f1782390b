// Package web wires Countersign's HTTP server: Echo, middleware, sessions,
// OpenID Connect sign-in and the routes.
package web

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/notify"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// Server is one Countersign HTTP server.
type Server struct {
	Echo     *echo.Echo
	Sessions *scs.SessionManager
	OIDC     *OIDC
	Handler  *handlers.Handler
	cfg      Config
	db       *db.DB
	log      *slog.Logger
	metrics  *metrics
	// Notify is the notification pipeline; Serve runs it.
	Notify *notify.Pipeline
	build  Build
}

// Deps are a Server's collaborators.
type Deps struct {
	Config Config
	DB     *db.DB
	Log    *slog.Logger
	Hub    *db.Hub
	// Notify tunes the notification pipeline (tests move its clock).
	Notify notify.Options
	// MailWindow groups a person's mails (default notify.DefaultMailWindow).
	MailWindow time.Duration
	// Build is which build runs, shown to admins at /admin/version
	// (default: ReadBuild("")).
	Build *Build
}

// New builds a server: sessions in Postgres, the relying party (not yet
// discovered), the handlers and every route.
func New(d Deps) *Server {
	s := &Server{cfg: d.Config, db: d.DB, log: d.Log, build: ReadBuild("")}
	if d.Build != nil {
		s.build = *d.Build
	}
	s.Sessions = newSessionManager(d.Config, d.DB)
	s.OIDC = NewOIDC(d.Config, d.Log)
	s.metrics = newMetrics(d.DB)
	s.Handler = &handlers.Handler{
		DB: d.DB, Sessions: s.Sessions, Auth: s.OIDC, Log: d.Log, Now: time.Now, Hub: d.Hub,
		Condition: approval.EvaluateCondition,
		Settings: handlers.Settings{
			AdminEmails:     d.Config.IsAdminEmail,
			ApprovalTimeout: d.Config.ApprovalTimeout, DeniedBlockThreshold: d.Config.DeniedBlockThreshold,
			BaseURL:         d.Config.BaseURL.String(),
			EmailConfigured: d.Config.SMTP != nil,
			VAPIDPublicKey:  notify.NewVAPID(d.DB, d.Config.VAPID).PublicKey,
			AuditPublicKey:  d.Config.AuditSigner.Public(),
		},
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = errorHandler(d.Log, s.Handler)
	if len(d.Config.TrustedProxies) > 0 {
		var opts []echo.TrustOption
		for _, n := range d.Config.TrustedProxies {
			opts = append(opts, echo.TrustIPRange(n))
		}
		e.IPExtractor = echo.ExtractIPFromXFFHeader(append(opts, echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false))...)
	} else {
		e.IPExtractor = echo.ExtractIPDirect()
	}
	s.Echo = e
	s.Notify = newPipeline(d)
	s.routes()
	return s
}

func newSessionManager(cfg Config, store *db.DB) *scs.SessionManager {
	sm := scs.New()
	// Expired rows are removed by the periodic sweep, not a goroutine per
	// server; a session signed out stays signed out (sessionStore).
	sm.Store = sessionStore{pool: store.Pool}
	sm.IdleTimeout = cfg.SessionIdleTimeout
	sm.Lifetime = cfg.SessionLifetime
	sm.HashTokenInStore = true
	sm.Cookie.Name = "countersign_session"
	sm.Cookie.HttpOnly = true
	sm.Cookie.SameSite = http.SameSiteLaxMode // Strict would drop the cookie on the identity provider's redirect back
	sm.Cookie.Path = "/"
	sm.Cookie.Persist = true
	if cfg.Secure() {
		sm.Cookie.Secure = true
		sm.Cookie.Name = "__Host-countersign_session"
	}
	sm.ErrorFunc = func(w http.ResponseWriter, r *http.Request, err error) {
		slog.Default().ErrorContext(r.Context(), "session store", "err", err)
		http.Error(w, "Something went wrong on our side. Please try again.", http.StatusInternalServerError)
	}
	return sm
}

// common is the middleware every request passes through.
func (s *Server) common() []echo.MiddlewareFunc {
	return []echo.MiddlewareFunc{
		middleware.RequestID(),
		middleware.RecoverWithConfig(middleware.RecoverConfig{DisableStackAll: true, LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			s.log.ErrorContext(c.Request().Context(), "panic", "err", err, "stack", string(stack))
			return err
		}}),
		s.accessLog(),
		s.metrics.middleware,
		middleware.BodyLimit("4M"),
		securityHeaders(s.cfg.Secure()),
		rejectNUL,
	}
}

func (s *Server) accessLog() echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogStatus: true, LogURIPath: true, LogMethod: true, LogLatency: true, LogRemoteIP: true, LogRequestID: true, LogRoutePath: true,
		HandleError: false,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			level := slog.LevelInfo
			if strings.HasPrefix(v.URIPath, "/static/") || v.URIPath == "/healthz" || v.URIPath == "/readyz" || v.URIPath == "/metrics" {
				level = slog.LevelDebug
			}
			s.log.Log(c.Request().Context(), level, "request", "method", v.Method, "path", v.URIPath, "route", v.RoutePath,
				"status", v.Status, "latency_ms", float64(v.Latency.Microseconds())/1000, "ip", v.RemoteIP, "request_id", v.RequestID)
			return nil
		},
	})
}

// Healthz answers while the process is alive.
func (s *Server) healthz(c echo.Context) error { return c.String(http.StatusOK, "ok\n") }

// Readyz answers 200 once the database and the identity provider are
// reachable; load balancers send traffic only then.
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := s.db.Ping(ctx); err != nil {
		return c.String(http.StatusServiceUnavailable, "database unreachable\n")
	}
	if !s.OIDC.Ready() {
		return c.String(http.StatusServiceUnavailable, "identity provider not discovered yet\n")
	}
	return c.String(http.StatusOK, "ready\n")
}

// Serve listens on ln until ctx ends, then finishes in-flight requests
// within the shutdown timeout.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.Echo,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	// The pipeline runs as long as the server: it stops with it, and what it
	// did not send waits in the outbox for the next instance.
	nctx, stopNotify := context.WithCancel(context.WithoutCancel(ctx))
	notifyDone := make(chan struct{})
	go func() { defer close(notifyDone); s.Notify.Run(nctx) }()
	defer func() { stopNotify(); <-notifyDone }()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down: finishing in-flight requests", "timeout", s.cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if s.Handler.Hub != nil {
		s.Handler.Hub.CloseWaiters() // long polls and event streams end now, not at the timeout
	}
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		_ = srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return err
}

// newPipeline builds the notification pipeline and its channels: webhooks
// always, email when SMTP is configured. A new channel (Web Push) is added
// to the list here.
func newPipeline(d Deps) *notify.Pipeline {
	opt := d.Notify
	channels := []notify.Channel{notify.NewWebhooks(d.DB, d.Config.BaseURL, opt.Now)}
	if d.Config.SMTP != nil {
		channels = append(channels, notify.NewEmail(d.DB, *d.Config.SMTP, d.Config.MailFrom, d.Config.BaseURL, d.MailWindow, opt.Now))
	}
	channels = append(channels, notify.NewPush(d.DB, notify.NewVAPID(d.DB, d.Config.VAPID), notify.VAPIDSubject(d.Config.MailFrom, d.Config.BaseURL), d.Config.BaseURL, opt.Now, notify.PushOptions{}))
	return notify.New(d.DB, d.Hub, d.Log, opt, channels...)
}
