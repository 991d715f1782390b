//go:build unix

package gateway

import (
	"os"
	"syscall"
)

// lockTask holds the task's lock file (<id>.lock) exclusively until the
// returned function is called: the processes of a task directory change a
// task one at a time, so that one that read the task before another ended
// it cannot write it back over the end.
func (s *TaskStore) lockTask(id string) (func(), error) {
	f, err := os.OpenFile(s.path(id, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { _ = f.Close() }, nil // closing releases the lock
}
