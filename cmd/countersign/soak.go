package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/dev"
)

// soakChildEnv makes a test binary run as countersign (see TestMain), so
// that the soak's test can start serve instances from itself.
const soakChildEnv = "COUNTERSIGN_SOAK_CHILD"

// soakInstance is one `countersign serve` child process.
type soakInstance struct {
	port int
	base string
	cmd  *exec.Cmd
	log  *os.File
}

// soak runs three serve instances on one private Postgres cluster, with
// runtimes and deciders spread across them, while faults are injected.
type soak struct {
	exe     string
	dir     string
	cluster *dev.Cluster
	url     string
	store   *db.DB
	key     string
	signing string            // the instances' audit signing key file
	pub     ed25519.PublicKey // its public half, to verify the checkpoints
	owner   db.User
	cap     time.Duration
	instMu  sync.Mutex // inst is replaced when an instance restarts
	inst    [3]*soakInstance

	mu       sync.Mutex
	calls    []*soakCall
	outages  [][2]time.Time // Postgres down → back
	faults   []string
	decided  map[string]approval.Decision // item → decision made
	decideMu sync.Mutex
}

// newSoak starts the cluster and the three instances.
func newSoak(ctx context.Context, capWait time.Duration) (*soak, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := dev.TempDir("countersign-soak-")
	if err != nil {
		return nil, err
	}
	s := &soak{exe: exe, dir: dir, cap: capWait, decided: map[string]approval.Decision{}, signing: filepath.Join(dir, "audit.key")}
	// The instances sign checkpoints, so that the chain is also verified
	// against them at the end, across the faults.
	if s.pub, err = db.GenerateSigningKey(s.signing); err != nil {
		s.close()
		return nil, err
	}
	if s.cluster, err = dev.StartCluster(ctx, filepath.Join(dir, "pg")); err != nil {
		s.close()
		return nil, err
	}
	if s.url, err = ensureDatabase(ctx, s.cluster.URL(), "countersign_soak"); err != nil {
		s.close()
		return nil, err
	}
	if _, err := db.Migrate(ctx, s.url); err != nil {
		s.close()
		return nil, err
	}
	if s.store, err = db.Open(ctx, s.url); err != nil {
		s.close()
		return nil, err
	}
	if s.key, _, err = s.store.CreateAPIKey(ctx, "soak", nil); err != nil {
		s.close()
		return nil, err
	}
	if s.owner, err = s.store.SignIn(ctx, db.User{Issuer: "soak", Subject: dev.DemoMember.Subject, Email: dev.DemoMember.Email}); err != nil {
		s.close()
		return nil, err
	}
	for i := range s.inst {
		if err := s.start(ctx, i, 0); err != nil {
			s.close()
			return nil, err
		}
	}
	if err := client.New(s.instance(0).base, s.key).SyncConnector(ctx, "mail", dev.DemoCatalog["mail"]); err != nil {
		s.close()
		return nil, err
	}
	if _, err := s.store.SetToolPolicy(ctx, approval.SystemActor, "mail", "send_email",
		approval.Policy{Mode: approval.ModeRequireApproval, StandingApproval: true}); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// start runs instance i (on its earlier port when port is not 0) and waits
// until it serves (/healthz: /readyz also wants an identity provider, which
// the soak does not run; serve answers only once its database and LISTEN
// are in place).
func (s *soak) start(ctx context.Context, i, port int) error {
	if port == 0 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	logf, err := os.OpenFile(filepath.Join(s.dir, "serve-"+strconv.Itoa(i)+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(s.exe, "serve")
	cmd.Env = append(os.Environ(), soakChildEnv+"=1", "COUNTERSIGN_DATABASE_URL="+s.url, "COUNTERSIGN_LISTEN=127.0.0.1:"+strconv.Itoa(port),
		"COUNTERSIGN_BASE_URL="+base, "COUNTERSIGN_OIDC_ISSUER=http://127.0.0.1:1/soak", "COUNTERSIGN_OIDC_CLIENT_ID=soak",
		"COUNTERSIGN_OIDC_CLIENT_SECRET=soak", "COUNTERSIGN_APPROVAL_TIMEOUT="+s.cap.String(), "COUNTERSIGN_LOG_LEVEL=warn",
		"COUNTERSIGN_AUDIT_SIGNING_KEY="+s.signing)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	s.setInstance(i, &soakInstance{port: port, base: base, cmd: cmd, log: logf})
	deadline := time.Now().Add(60 * time.Second)
	hc := &http.Client{Timeout: 2 * time.Second}
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if resp, err := hc.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("instance %d did not become ready (see %s)", i, logf.Name())
}

func (s *soak) close() {
	for i := range s.inst {
		if in := s.instance(i); in != nil && in.cmd.Process != nil {
			_ = in.cmd.Process.Signal(syscall.SIGTERM)
			_ = in.cmd.Wait()
			in.log.Close()
		}
	}
	if s.store != nil {
		s.store.Close()
	}
	if s.cluster != nil {
		_ = s.cluster.Stop()
	}
	if s.dir != "" && os.Getenv("COUNTERSIGN_SOAK_KEEP") == "" {
		_ = os.RemoveAll(s.dir)
	}
}

func (s *soak) fault(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, fmt.Sprintf("%s "+format, append([]any{time.Now().Format("15:04:05.000")}, args...)...))
}

// injectFaults kills and restarts an instance, terminates the LISTEN
// connections, and restarts Postgres, at fixed points of d.
func (s *soak) injectFaults(ctx context.Context, d time.Duration) error {
	at := func(f float64) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Duration(f * float64(d))):
			return true
		}
	}
	if !at(0.25) {
		return nil
	}
	victim := s.instance(1)
	_ = victim.cmd.Process.Signal(syscall.SIGKILL)
	_ = victim.cmd.Wait()
	victim.log.Close()
	s.fault("SIGKILL instance 1")
	time.Sleep(2 * time.Second)
	if err := s.start(ctx, 1, victim.port); err != nil {
		return err
	}
	s.fault("instance 1 restarted")
	if !at(0.2) {
		return nil
	}
	var n int
	if err := s.store.Pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`,
		db.ListenerApplicationName).Scan(&n); err != nil {
		return err
	}
	s.fault("terminated %d LISTEN connections", n)
	if !at(0.2) {
		return nil
	}
	down := time.Now()
	s.fault("Postgres fast shutdown and restart")
	if err := s.cluster.Restart(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	s.outages = append(s.outages, [2]time.Time{down, time.Now()})
	s.mu.Unlock()
	s.fault("Postgres back")
	return nil
}

// runBenchSoak is `countersign bench --soak DURATION`.
func runBenchSoak(ctx context.Context, d time.Duration, stdout io.Writer) error {
	rep, err := Soak(ctx, d, 20*time.Second, 24)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, rep.String())
	if !rep.OK() {
		return errors.New("soak: targets missed")
	}
	return nil
}

// instance is the i-th serve process as it runs now.
func (s *soak) instance(i int) *soakInstance {
	s.instMu.Lock()
	defer s.instMu.Unlock()
	return s.inst[i]
}

func (s *soak) setInstance(i int, in *soakInstance) {
	s.instMu.Lock()
	defer s.instMu.Unlock()
	s.inst[i] = in
}
