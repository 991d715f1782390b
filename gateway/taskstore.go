package gateway

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/countersign/countersign/client"
)

// Statuses of an MCP task (MCP 2025-11-25, Tasks).
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

func taskTerminal(status string) bool {
	return status == taskCompleted || status == taskFailed || status == taskCancelled
}

// errTaskNotFound: no task by that id (for this connector and user).
var errTaskNotFound = errors.New("gateway: task not found")

// TaskStore keeps the MCP tasks of held tool calls in a directory, one
// file per task, so that a new gateway process picks a task up where the
// one that created it stopped. Countersign keeps only a bounded preview of
// a call's arguments: the exact arguments, needed to forward the call once
// approved, live only here. Files are written whole (a temporary file
// renamed over the old one) and readable by the owner only.
//
// Running a task's call is guarded twice: a marker file created
// exclusively (<id>.run) lets one process of this store claim and run it,
// and Countersign's claim binds the approval to the call id and the digest
// of its arguments, so the call runs once even across machines. Each
// change of a task is made under its lock file (<id>.lock), so that a
// task that ended stays ended.
type TaskStore struct {
	dir string
	now func() time.Time

	mu sync.Mutex
	// ended holds the ends this process could not store (a full disk, a
	// directory that became unusable): the client is still told how its
	// task ended, by this process.
	ended map[string]*taskRecord
}

// taskRecord is one task as stored.
type taskRecord struct {
	TaskID        string    `json:"task_id"`
	Connector     string    `json:"connector"`
	User          string    `json:"user"`
	Status        string    `json:"status"`
	StatusMessage string    `json:"status_message,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	LastUpdatedAt time.Time `json:"last_updated_at"`
	TTL           int64     `json:"ttl_ms"`
	// Key names the API key that asked about the call (see keyMark): the
	// item is that key's, and only its processes take the task up.
	Key string `json:"key"`
	// Call is what Countersign is asked, with the exact arguments.
	Call client.Call `json:"call"`
	// Digest is approval.Digest of Call.Arguments, as claimed.
	Digest string `json:"arguments_digest"`
	// Params are the tools/call params forwarded to the server once
	// approved: the client's, without its task and progress token.
	Params  json.RawMessage `json:"params"`
	Pending *client.Pending `json:"pending,omitempty"`
	// Result or Error is the call's answer once the task ended.
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// Task store limits.
const (
	defaultTaskTTL = 24 * time.Hour
	minTaskTTL     = time.Minute
	maxTaskTTL     = 7 * 24 * time.Hour
	taskPollEvery  = time.Second // the pollInterval offered to clients
)

// OpenTaskStore opens the task directory and removes the tasks whose
// time to live has passed. The directory is made (mode 0700) with the
// first task, so a gateway whose clients never ask for tasks leaves none.
func OpenTaskStore(dir string) (*TaskStore, error) {
	if dir == "" {
		return nil, errors.New("gateway: no task directory")
	}
	s := &TaskStore{dir: dir, now: time.Now}
	if err := s.check(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	s.sweep()
	return s, nil
}

// check: the directory is there and nobody else may use it — the tasks
// hold call arguments, and a task added by someone else would be run once
// approved.
func (s *TaskStore) check() error {
	fi, err := os.Stat(s.dir)
	if err != nil {
		return fmt.Errorf("gateway: task directory: %w", err)
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("gateway: the task directory %s is open to other users (mode %v) or not a directory; make it a directory of mode 0700", s.dir, fi.Mode().Perm())
	}
	return nil
}

// keyMark names an API key in a task file without holding it: a hash of
// the key under a label of its own.
func keyMark(apiKey string) string {
	sum := sha256.Sum256([]byte("countersign mcp task owner\x00" + apiKey))
	return hex.EncodeToString(sum[:16])
}

// newTaskID is a task id: 128 random bits, hex.
func newTaskID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// validTaskID: only ids this store makes name a file (no paths).
func validTaskID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}

func (s *TaskStore) path(id, ext string) string { return filepath.Join(s.dir, id+ext) }

// save writes r whole. A task that ended stays as it ended: a record that
// is already terminal on disk is not overwritten (another process ended
// it first).
func (s *TaskStore) save(r *taskRecord) error {
	if !validTaskID(r.TaskID) {
		return errors.New("gateway: bad task id")
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		s.keepEnded(r)
		return fmt.Errorf("gateway: task directory: %w", err)
	}
	if err := s.check(); err != nil {
		s.keepEnded(r)
		return err
	}
	// Read, compare and write under the task's lock: a process that read
	// the task before another ended it does not write it back over the end.
	unlock, err := s.lockTask(r.TaskID)
	if err != nil {
		s.keepEnded(r)
		return fmt.Errorf("gateway: lock task: %w", err)
	}
	defer unlock()
	if cur, err := s.load(r.TaskID); err == nil && taskTerminal(cur.Status) && !taskTerminal(r.Status) {
		return nil
	} else if err == nil && taskTerminal(cur.Status) {
		*r = *cur
		return nil
	}
	// Without HTML escaping: the params keep the bytes the client sent
	// (forwardedCall compares them with the call that was checked).
	b, err := marshalExact(r)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(s.dir, s.path(r.TaskID, ".json"), b); err != nil {
		s.keepEnded(r)
		return fmt.Errorf("gateway: save task: %w", err)
	}
	return nil
}

// keepEnded keeps in memory an end that save could not store.
func (s *TaskStore) keepEnded(r *taskRecord) {
	if !taskTerminal(r.Status) {
		return
	}
	c := *r
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended == nil {
		s.ended = map[string]*taskRecord{}
	}
	s.ended[r.TaskID] = &c
}

// writeFileAtomic writes b to name (mode 0600) by way of a temporary file
// in dir, synced and renamed over name: a reader sees the old file or the
// new one, never part of either.
func writeFileAtomic(dir, name string, b []byte) error {
	f, err := os.CreateTemp(dir, "."+filepath.Base(name)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(b)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// load reads one task: as stored, unless this process ended it and could
// not store the end (then as it ended), or another process ended it first.
func (s *TaskStore) load(id string) (*taskRecord, error) {
	r, err := s.loadFile(id)
	if err == nil && taskTerminal(r.Status) {
		return r, nil
	}
	s.mu.Lock()
	kept := s.ended[id]
	s.mu.Unlock()
	if kept != nil {
		c := *kept
		return &c, nil
	}
	return r, err
}

// loadFile reads one task's file.
func (s *TaskStore) loadFile(id string) (*taskRecord, error) {
	if !validTaskID(id) {
		return nil, errTaskNotFound
	}
	b, err := os.ReadFile(s.path(id, ".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errTaskNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("gateway: load task: %w", err)
	}
	var r taskRecord
	if err := json.Unmarshal(b, &r); err != nil || r.TaskID != id {
		return nil, fmt.Errorf("gateway: task %s is unreadable", id)
	}
	return &r, nil
}

// list is every readable task, oldest first.
func (s *TaskStore) list() []*taskRecord {
	names, _ := filepath.Glob(filepath.Join(s.dir, "*.json"))
	var out []*taskRecord
	for _, n := range names {
		if r, err := s.load(strings.TrimSuffix(filepath.Base(n), ".json")); err == nil {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out
}

// expired: the task's time to live, counted from its last change, has
// passed.
func (s *TaskStore) expired(r *taskRecord) bool {
	return s.now().After(r.LastUpdatedAt.Add(time.Duration(r.TTL) * time.Millisecond))
}

// sweep removes expired tasks and leftover temporary files.
func (s *TaskStore) sweep() {
	for _, r := range s.list() {
		if s.expired(r) {
			_ = os.Remove(s.path(r.TaskID, ".json"))
			_ = os.Remove(s.path(r.TaskID, ".run"))
			_ = os.Remove(s.path(r.TaskID, ".lock"))
		}
	}
	tmps, _ := filepath.Glob(filepath.Join(s.dir, ".*.tmp"))
	for _, t := range tmps {
		if fi, err := os.Stat(t); err == nil && s.now().Sub(fi.ModTime()) > time.Hour {
			_ = os.Remove(t)
		}
	}
}

// claimRun makes this process the one that claims and runs the task's
// call: true for exactly one caller, whichever process, ever.
func (s *TaskStore) claimRun(id string) (bool, error) {
	if !validTaskID(id) {
		return false, errTaskNotFound
	}
	f, err := os.OpenFile(s.path(id, ".run"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("gateway: claim task: %w", err)
	}
	host, _ := os.Hostname()
	_, err = f.WriteString(strconv.Itoa(os.Getpid()) + " " + host + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return true, err
}

// running: a process claimed the task to run (or cancel) it.
func (s *TaskStore) running(id string) bool {
	_, err := os.Stat(s.path(id, ".run"))
	return err == nil
}

// runnerGone: the process that claimed the task to run it is known to be
// gone (on this machine, no process by its id). A runner on another
// machine, or one that cannot be told, is taken as alive.
func (s *TaskStore) runnerGone(id string) bool {
	b, err := os.ReadFile(s.path(id, ".run"))
	if err != nil {
		return false
	}
	pidText, host, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	pid, err := strconv.Atoi(pidText)
	if me, _ := os.Hostname(); err != nil || pid <= 0 || host != me {
		return false
	}
	if pid == os.Getpid() {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	err = p.Signal(syscall.Signal(0))
	return err != nil && !errors.Is(err, syscall.EPERM)
}
