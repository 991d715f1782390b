//go:build !unix

package gateway

// lockTask is a no-op where flock(2) is missing: the processes of a task
// directory are not serialised there (see the unix version).
func (s *TaskStore) lockTask(string) (func(), error) { return func() {}, nil }
