// Package dev holds what `countersign dev` and the tests run locally: a
// private PostgreSQL cluster and a development OpenID Connect provider with
// demo users. Nothing here is used by `countersign serve`.
package dev

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNoPostgres means no PostgreSQL server binaries were found.
var ErrNoPostgres = errors.New(`no PostgreSQL server binaries found (initdb, pg_ctl) on PATH or under /usr/lib/postgresql/*/bin.
Install them (Debian/Ubuntu: apt-get install postgresql; macOS: brew install postgresql@16),
or point Countersign at a running server with COUNTERSIGN_DATABASE_URL=postgres://user@host:5432/db`)

// Cluster is a private PostgreSQL cluster in a folder Countersign owns.
type Cluster struct {
	Dir    string // the data folder
	Port   int
	binDir string
	opts   string // the server's options, kept for Restart
	runAs  *syscall.Credential
}

// FindPostgresBin returns the folder holding initdb and pg_ctl: PATH first,
// then the newest /usr/lib/postgresql/*/bin.
func FindPostgresBin() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", ErrNoPostgres
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// StartCluster starts (creating it first if needed) a cluster whose data
// lives in dir, listening on a free loopback port. PostgreSQL refuses to run
// as root, so under root the cluster runs as the "postgres" user.
func StartCluster(ctx context.Context, dir string) (*Cluster, error) {
	return StartClusterWith(ctx, dir, ClusterOptions{})
}

// TempDir makes a new temporary folder for a private cluster and what runs
// beside it, open to the "postgres" user the cluster runs as under root.
// The caller removes it.
func TempDir(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	return dir, os.Chmod(dir, 0o755)
}

// ClusterOptions change how a private cluster runs.
type ClusterOptions struct {
	// Durable keeps Postgres's default fsync=on, so that a commit waits for
	// its WAL to reach the disk as it does in production. Without it the
	// cluster runs with fsync=off: faster, and a crash of Postgres alone
	// still loses no commit (the operating system holds what was written),
	// but a crash of the machine could. Right for development and tests,
	// wrong for measuring what a durable commit costs (the throughput
	// bench).
	Durable bool
	// Settings are further server settings, each "name=value" (passed as
	// -c name=value), e.g. shared_preload_libraries=pg_stat_statements.
	Settings []string
}

// StartClusterWith is StartCluster with options.
func StartClusterWith(ctx context.Context, dir string, o ClusterOptions) (*Cluster, error) {
	var extra string
	if !o.Durable {
		extra += " -c fsync=off"
	}
	for _, s := range o.Settings {
		if strings.ContainsAny(s, " \t\n'\"\\") || !strings.Contains(s, "=") {
			return nil, fmt.Errorf("dev: cluster setting %q: want name=value without spaces or quotes", s)
		}
		extra += " -c " + s
	}
	bin, err := FindPostgresBin()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: abs, binDir: bin}
	if os.Geteuid() == 0 {
		cred, err := postgresCredential()
		if err != nil {
			return nil, err
		}
		c.runAs = cred
	}
	if err := c.mkdirOwned(abs); err != nil {
		return nil, err
	}
	if err := c.initIfNeeded(ctx); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	c.Port = port
	sockDir := filepath.Join(abs, "run")
	if err := c.mkdirOwned(sockDir); err != nil {
		return nil, err
	}
	// A cluster left running by a killed process is stopped first.
	if _, err := os.Stat(filepath.Join(abs, "data", "postmaster.pid")); err == nil {
		_ = c.pgctl(ctx, "stop", "-D", filepath.Join(abs, "data"), "-m", "fast", "-w")
	}
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s -c max_connections=200", port, sockDir)
	opts += extra
	c.opts = opts
	if err := c.pgctl(ctx, "start", "-D", filepath.Join(abs, "data"), "-w", "-t", "60",
		"-l", filepath.Join(abs, "postgres.log"), "-o", opts); err != nil {
		return nil, fmt.Errorf("dev: start PostgreSQL (see %s): %w", filepath.Join(abs, "postgres.log"), err)
	}
	return c, nil
}

// URL is the connection string of the cluster's "postgres" database.
func (c *Cluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.Port)
}

// Stop shuts the cluster down cleanly.
func (c *Cluster) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return c.pgctl(ctx, "stop", "-D", filepath.Join(c.Dir, "data"), "-m", "fast", "-w")
}

// Restart stops the cluster with a fast shutdown (every connection is
// terminated) and starts it again on the same port.
func (c *Cluster) Restart(ctx context.Context) error {
	data := filepath.Join(c.Dir, "data")
	if err := c.pgctl(ctx, "stop", "-D", data, "-m", "fast", "-w"); err != nil {
		return err
	}
	return c.pgctl(ctx, "start", "-D", data, "-w", "-t", "60", "-l", filepath.Join(c.Dir, "postgres.log"), "-o", c.opts)
}

// PostmasterPID is the process id of the cluster's postmaster, from its
// postmaster.pid file.
func (c *Cluster) PostmasterPID() (int, error) {
	b, err := os.ReadFile(filepath.Join(c.Dir, "data", "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(line))
}

// StartAgain starts a cluster whose postmaster died (a crash test kills
// it) on the same port: Postgres recovers from its WAL. It retries while
// the dead postmaster's processes still hold its shared memory.
func (c *Cluster) StartAgain(ctx context.Context) error {
	data := filepath.Join(c.Dir, "data")
	for {
		err := c.pgctl(ctx, "start", "-D", data, "-w", "-t", "60", "-l", filepath.Join(c.Dir, "postgres.log"), "-o", c.opts)
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *Cluster) initIfNeeded(ctx context.Context) error {
	data := filepath.Join(c.Dir, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err == nil {
		return nil
	}
	if err := c.mkdirOwned(data); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync")
	c.prepare(cmd)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("dev: initdb: %w\n%s", err, out)
	}
	return nil
}

func (c *Cluster) pgctl(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, "pg_ctl"), args...)
	c.prepare(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl %s: %w: %s", args[0], err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (c *Cluster) prepare(cmd *exec.Cmd) {
	// Own process group: Ctrl-C in the terminal reaches Countersign, which
	// then stops the cluster cleanly, instead of killing postgres directly.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if c.runAs != nil {
		cmd.SysProcAttr.Credential = c.runAs
		cmd.Env = append(os.Environ(), "HOME=/tmp")
	}
	cmd.Dir = c.Dir
}

func (c *Cluster) mkdirOwned(dir string) error {
	// Parents must be reachable by the postgres user.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("dev: create %s: %w", filepath.Dir(dir), err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("dev: create %s: %w", dir, err)
	}
	if c.runAs != nil {
		if err := os.Chown(dir, int(c.runAs.Uid), int(c.runAs.Gid)); err != nil {
			return fmt.Errorf("dev: hand %s to the postgres user: %w", dir, err)
		}
	}
	return nil
}

func postgresCredential() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("dev: PostgreSQL refuses to run as root and there is no \"postgres\" user; run as a normal user or set COUNTERSIGN_DATABASE_URL")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
