package testenv

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// RunWith is Run with a setup that starts before the package's tests and
// examples and is torn down after them: for Example functions, which have
// no *testing.T, to talk to a real server. A setup failure fails the run.
func RunWith(m *testing.M, setup func(t testing.TB) error) int {
	return run(m, func() (func() int, error) {
		tb := &standaloneTB{name: "setup"}
		if err := tb.guard(func() error { return setup(tb) }); err != nil {
			tb.cleanup()
			return nil, err
		}
		return func() int {
			tb.cleanup()
			if tb.Failed() {
				fmt.Fprintln(os.Stderr, "testenv: setup reported failures:\n"+tb.report())
				return 1
			}
			return 0
		}, nil
	})
}

// standaloneTB lets testenv's helpers run outside a test: Fatal stops the
// setup with an error (through a panic that guard recovers), Error is
// collected and fails the run at the end, Cleanup runs at teardown.
type standaloneTB struct {
	testing.TB // nil: only the methods below are used by testenv
	name       string
	mu         sync.Mutex
	cleanups   []func()
	errs       []string
}

type fatal struct{ msg string }

func (s *standaloneTB) guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			ft, ok := r.(fatal)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("testenv: %s", ft.msg)
		}
	}()
	return f()
}

func (s *standaloneTB) Helper()      {}
func (s *standaloneTB) Name() string { return s.name }
func (s *standaloneTB) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}
func (s *standaloneTB) Fatal(args ...any)                 { panic(fatal{fmt.Sprint(args...)}) }
func (s *standaloneTB) Fatalf(format string, args ...any) { panic(fatal{fmt.Sprintf(format, args...)}) }
func (s *standaloneTB) Error(args ...any)                 { s.addErr(fmt.Sprint(args...)) }
func (s *standaloneTB) Errorf(format string, args ...any) { s.addErr(fmt.Sprintf(format, args...)) }
func (s *standaloneTB) Log(args ...any)                   {}
func (s *standaloneTB) Logf(format string, args ...any)   {}
func (s *standaloneTB) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.errs) > 0
}

func (s *standaloneTB) addErr(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, msg)
}

func (s *standaloneTB) report() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := ""
	for _, e := range s.errs {
		out += "  " + e + "\n"
	}
	return out
}

func (s *standaloneTB) cleanup() {
	s.mu.Lock()
	fs := s.cleanups
	s.cleanups = nil
	s.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
