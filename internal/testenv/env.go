package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/web"
	"github.com/jackc/pgx/v5"
)

// Env is a running Countersign for one test: its own database, identity
// provider, listener hub and HTTP server on a loopback port.
type Env struct {
	T       testing.TB
	DBURL   string
	DB      *db.DB
	Hub     *db.Hub
	IdP     *dev.IdP
	Server  *web.Server
	BaseURL string
	Config  web.Config
	// Contract validates every runtime API exchange against the OpenAPI
	// document; its mismatches fail the test when the Env stops.
	Contract *Contract
	log      *lockedWriter
	cancel   context.CancelFunc
	keys     atomic.Int32 // keys made by APIKey
}

// Option adjusts an Env's configuration before it starts.
type Option func(*web.Config)

// NewEnv starts a server on a fresh database (or on dbURL's database when
// SharedDB is given) and waits until it is ready.
func NewEnv(t testing.TB, opts ...Option) *Env {
	t.Helper()
	return NewEnvOn(t, NewDatabase(t), nil, opts...)
}

// NewEnvOn starts a server on an existing database; idp may be shared with
// another Env (several instances behind one identity provider).
func NewEnvOn(t testing.TB, dbURL string, idp *dev.IdP, opts ...Option) *Env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e := &Env{T: t, DBURL: dbURL, cancel: cancel, log: &lockedWriter{w: &bytes.Buffer{}}}
	e.IdP = ownIdP(t, idp)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.BaseURL = "http://" + ln.Addr().String()
	e.Config = envConfig(t, e.BaseURL, dbURL, e.IdP, opts)
	log := e.openDatabase(ctx)
	e.serve(ctx, ln, log)
	return e
}

// ownIdP is idp, or a new identity provider for this test alone.
func ownIdP(t testing.TB, idp *dev.IdP) *dev.IdP {
	t.Helper()
	if idp == nil {
		var err error
		if idp, err = dev.StartIdP(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = idp.Shutdown() })
	}
	return idp
}

// envConfig is the server's configuration: served at baseURL, on dbURL's
// database, signing in through idp, adjusted by opts.
func envConfig(t testing.TB, baseURL, dbURL string, idp *dev.IdP, opts []Option) web.Config {
	t.Helper()
	cfg, err := web.LoadConfig(func(k string) string {
		switch k {
		case "COUNTERSIGN_BASE_URL":
			return baseURL
		case "COUNTERSIGN_ADMIN_EMAILS":
			return dev.DemoAdmin.Email
		case "COUNTERSIGN_SHUTDOWN_TIMEOUT":
			return "2s"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	oc := idp.Config()
	cfg.DatabaseURL, cfg.OIDCIssuer, cfg.OIDCClientID, cfg.OIDCClientSecret = dbURL, oc.Issuer, oc.ClientID, oc.ClientSecret
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// openDatabase migrates and opens the Env's database and starts the
// listener hub and the audit sealer on it, waiting until the hub listens.
// It returns the server's logger.
func (e *Env) openDatabase(ctx context.Context) *slog.Logger {
	t := e.T
	t.Helper()
	if _, err := db.Migrate(ctx, e.DBURL); err != nil {
		t.Fatal(err)
	}
	var err error
	if e.DB, err = db.Open(ctx, e.DBURL); err != nil {
		t.Fatal(err)
	}
	var logOut io.Writer = e.log
	if os.Getenv("COUNTERSIGN_TEST_LOG") != "" {
		logOut = io.MultiWriter(logOut, os.Stderr)
	}
	log := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelInfo}))
	e.Hub = db.NewHub(e.DBURL, log)
	go e.Hub.Run(ctx)
	go e.DB.RunSealer(ctx, log, 50*time.Millisecond)
	// The serve command's sweep escalates items; the embedded server of a
	// test runs the same step on its own, more often.
	go e.DB.RunEscalations(ctx, log, 100*time.Millisecond)
	select {
	case <-e.Hub.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("testenv: listener not ready")
	}
	return log
}

// serve starts the server on ln, checked against the OpenAPI document
// outside benchmarks, and stops it when the test ends.
func (e *Env) serve(ctx context.Context, ln net.Listener, log *slog.Logger) {
	t := e.T
	t.Helper()
	e.Server = web.New(web.Deps{Config: e.Config, DB: e.DB, Log: log, Hub: e.Hub})
	// Tests check every runtime API exchange against the OpenAPI document;
	// benchmarks measure the product alone, without that check.
	if _, bench := t.(*testing.B); !bench {
		var err error
		if e.Contract, err = NewContract(); err != nil {
			t.Fatal(err)
		}
		e.Server.Echo.Pre(e.Contract.Middleware)
	}
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	defer dcancel()
	if err := e.Server.OIDC.Discover(dctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = e.Server.Serve(ctx, ln)
	}()
	t.Cleanup(func() {
		e.cancel()
		<-done
		e.DB.Close()
		if e.Contract != nil {
			for _, p := range e.Contract.Problems() {
				t.Errorf("runtime API contract: %s", p)
			}
		}
		if t.Failed() {
			t.Logf("server log:\n%s", e.Logs())
		}
	})
}

// Stop shuts the server down (the database stays).
func (e *Env) Stop() { e.cancel() }

// Logs is what the server logged so far.
func (e *Env) Logs() string {
	e.log.mu.Lock()
	defer e.log.mu.Unlock()
	return e.log.w.String()
}

// APIKey creates a runtime key. Its items may wait for people who have
// never signed in: tests ask for the demo people before (or without) their
// first sign-in, as `countersign dev` does. A test of the unknown_user
// refusal switches it off (the API keys page).
func (e *Env) APIKey() string {
	e.T.Helper()
	// Key names are unique per owner: the first is "test runtime", the
	// next "test runtime 2" and so on.
	name := "test runtime"
	if n := e.keys.Add(1); n > 1 {
		name += " " + strconv.Itoa(int(n))
	}
	key, _, err := e.DB.CreateAPIKeyWith(context.Background(), name, nil, db.APIKeyOptions{AllowFirstTimeUsers: true})
	if err != nil {
		e.T.Fatal(err)
	}
	return key
}

// API sends a runtime API request and decodes the JSON answer.
func (e *Env) API(key, method, path string, body any) (int, map[string]any) {
	e.T.Helper()
	var rd io.Reader
	if s, ok := body.(string); ok {
		rd = strings.NewReader(s)
	} else if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.BaseURL+path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// Browser is an HTTP client with a cookie jar that does not follow
// redirects, so tests see every step.
type Browser struct {
	T      testing.TB
	Env    *Env
	Client *http.Client
}

// NewBrowser returns a signed-out browser.
func (e *Env) NewBrowser() *Browser {
	jar, _ := cookiejar.New(nil)
	return &Browser{T: e.T, Env: e, Client: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// Do sends req and returns the response with its body read.
func (b *Browser) Do(req *http.Request) (*http.Response, string) {
	b.T.Helper()
	resp, err := b.Client.Do(req)
	if err != nil {
		b.T.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// Get fetches an absolute URL or a path of the server.
func (b *Browser) Get(target string) (*http.Response, string) {
	b.T.Helper()
	if strings.HasPrefix(target, "/") {
		target = b.Env.BaseURL + target
	}
	req, _ := http.NewRequest(http.MethodGet, target, nil)
	return b.Do(req)
}

// PostForm posts form to path as a same-origin browser would, adding the
// session's CSRF token unless the form already has a csrf_token entry.
func (b *Browser) PostForm(path string, form url.Values) (*http.Response, string) {
	b.T.Helper()
	if _, ok := form["csrf_token"]; !ok {
		form.Set("csrf_token", b.CSRF())
	}
	req, _ := http.NewRequest(http.MethodPost, b.Env.BaseURL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.Env.BaseURL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return b.Do(req)
}

var csrfRE = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// CSRF reads the session's CSRF token from a page.
func (b *Browser) CSRF() string {
	b.T.Helper()
	_, body := b.Get("/admin/api-keys")
	if m := csrfRE.FindStringSubmatch(body); m != nil {
		return m[1]
	}
	_, body = b.Get("/")
	if m := csrfRE.FindStringSubmatch(body); m != nil {
		return m[1]
	}
	b.T.Fatal("testenv: no CSRF token on the page (signed in?)")
	return ""
}

// SignIn goes through the real OIDC flow as the demo user with key
// ("member", "admin", or one added with IdP.AddUser).
func (b *Browser) SignIn(key string) {
	b.T.Helper()
	resp, _ := b.Get("/auth/login")
	if resp.StatusCode != http.StatusSeeOther {
		b.T.Fatalf("login: status %d", resp.StatusCode)
	}
	authURL, _ := url.Parse(resp.Header.Get("Location"))
	q := authURL.Query()
	q.Set("demo_user", key)
	authURL.RawQuery = q.Encode()
	resp, _ = b.Get(authURL.String())
	if resp.StatusCode != http.StatusFound {
		b.T.Fatalf("authorize: status %d", resp.StatusCode)
	}
	resp, body := b.Get(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther {
		b.T.Fatalf("callback: status %d: %s", resp.StatusCode, body)
	}
}

// User returns the stored user for a demo key after sign-in.
func (e *Env) User(subject string) db.User {
	e.T.Helper()
	var id int64
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT id FROM users WHERE subject = $1`, subject).Scan(&id); err != nil {
		e.T.Fatal(err)
	}
	u, err := e.DB.UserByID(context.Background(), id)
	if err != nil {
		e.T.Fatal(err)
	}
	return u
}

// AuditActions lists the audit lines' actions, oldest first.
func (e *Env) AuditActions() []string {
	e.T.Helper()
	rows, err := e.DB.Pool.Query(context.Background(), `SELECT action FROM audit_events ORDER BY id`)
	if err != nil {
		e.T.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		e.T.Fatal(err)
	}
	return out
}
