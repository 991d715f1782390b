package gateway

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func testRecord(t *testing.T) *taskRecord {
	t.Helper()
	id, err := newTaskID()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	return &taskRecord{TaskID: id, Connector: "c", User: "u", Status: taskWorking, CreatedAt: now, LastUpdatedAt: now,
		TTL: time.Hour.Milliseconds(), Params: []byte(`{"name":"t","arguments":{"a":"b"}}`)}
}

func openTestStore(t *testing.T) (*TaskStore, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tasks")
	s, err := OpenTaskStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatal("the directory was made before a task")
	}
	return s, dir
}

// A task file is written whole and readable by its owner only: a reader
// running beside the writer never sees a part of one, and nothing is left
// behind.
func TestTaskStoreWritesWhole(t *testing.T) {
	s, dir := openTestStore(t)
	r := testRecord(t)
	if err := s.save(r); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(s.path(r.TaskID, ".json")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v", fi.Mode().Perm())
	}
	var stop atomic.Bool
	var bad atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			got, err := s.load(r.TaskID)
			if err != nil || got.TaskID != r.TaskID {
				bad.Add(1)
			}
		}
	})
	for i := range 200 {
		r.StatusMessage = strings.Repeat("x", (i%7)*20000)
		if err := s.save(r); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d reads saw a part of a task", bad.Load())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// A task that ended stays as it ended: a process still following it
// cannot make it pending again.
func TestTaskStoreEndedStaysEnded(t *testing.T) {
	s, _ := openTestStore(t)
	r := testRecord(t)
	r.Status, r.StatusMessage = taskFailed, "rejected"
	if err := s.save(r); err != nil {
		t.Fatal(err)
	}
	late := *r
	late.Status, late.StatusMessage = taskWorking, "waiting"
	if err := s.save(&late); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.load(r.TaskID); got.Status != taskFailed || got.StatusMessage != "rejected" {
		t.Fatalf("%+v", got)
	}
}

// Of many claims to run a task, from two stores on the same directory (two
// gateway processes), exactly one wins.
func TestTaskStoreRunClaimedOnce(t *testing.T) {
	a, dir := openTestStore(t)
	b, err := OpenTaskStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := testRecord(t)
	if err := a.save(r); err != nil {
		t.Fatal(err)
	}
	var won atomic.Int64
	var wg sync.WaitGroup
	for i := range 40 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			ok, err := s.claimRun(r.TaskID)
			if err != nil {
				t.Error(err)
			}
			if ok {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d claims won", won.Load())
	}
	if a.runnerGone(r.TaskID) {
		t.Fatal("this process, the runner, taken for gone")
	}
}

// A runner whose process is gone is known to be gone.
func TestTaskStoreRunnerGone(t *testing.T) {
	s, _ := openTestStore(t)
	r := testRecord(t)
	if err := s.save(r); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no true:", err)
	}
	host, _ := os.Hostname()
	if err := os.WriteFile(s.path(r.TaskID, ".run"), []byte(strconv.Itoa(cmd.Process.Pid)+" "+host+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !s.runnerGone(r.TaskID) {
		t.Fatal("a dead runner taken for alive")
	}
	if err := os.WriteFile(s.path(r.TaskID, ".run"), []byte(strconv.Itoa(cmd.Process.Pid)+" elsewhere\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s.runnerGone(r.TaskID) {
		t.Fatal("a runner on another machine taken for gone")
	}
}

// Only the store's own ids name files; a directory others may write is
// refused; tasks past their time to live are removed on open.
func TestTaskStoreEdges(t *testing.T) {
	s, dir := openTestStore(t)
	for _, id := range []string{"../../etc/passwd", "", strings.Repeat("A", 32), strings.Repeat("a", 31) + "/"} {
		if _, err := s.load(id); err != errTaskNotFound {
			t.Errorf("load(%q): %v", id, err)
		}
	}
	old := testRecord(t)
	old.LastUpdatedAt, old.TTL = time.Now().Add(-2*time.Hour), time.Hour.Milliseconds()
	if err := s.save(old); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenTaskStore(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := s.load(old.TaskID); err != errTaskNotFound {
		t.Fatalf("an expired task stayed: %v", err)
	}
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(open, 0o777)
	if _, err := OpenTaskStore(open); err == nil {
		t.Fatal("a directory open to others was accepted")
	}
}

// Terminal means terminal across processes: while other processes (each
// its own store on the directory) keep saving the task as working from
// copies read before it ended, the end that one of them stores is never
// overwritten.
func TestTaskStoreEndIsNeverOverwritten(t *testing.T) {
	s, dir := openTestStore(t)
	for round := range 40 {
		r := testRecord(t)
		if err := s.save(r); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 4 {
			other, err := OpenTaskStore(dir)
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				<-start
				for i := range 25 {
					stale := *r
					stale.StatusMessage = "still waiting " + strconv.Itoa(i)
					_ = other.save(&stale)
				}
			})
		}
		wg.Go(func() {
			<-start
			ended := *r
			ended.Status, ended.StatusMessage = taskCompleted, ""
			if err := s.save(&ended); err != nil {
				t.Error(err)
			}
		})
		close(start)
		wg.Wait()
		fresh, _ := OpenTaskStore(dir)
		if got, err := fresh.load(r.TaskID); err != nil || got.Status != taskCompleted {
			t.Fatalf("round %d: the ended task reads %+v (%v)", round, got, err)
		}
	}
}
