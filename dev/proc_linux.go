package dev

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc's CPU times: Linux reports them in
// USER_HZ, 100 a second on every architecture Go runs on.
const clockTick = 10 * time.Millisecond

// process is what /proc/<pid>/stat says of one process.
type process struct {
	pid, parent int
	cpu         time.Duration // user and system time used so far
	reaped      time.Duration // the same of its children that ended and were waited for
}

// readProcess reads the stat file of one process; false if it ended or
// cannot be read.
func readProcess(stat string) (process, bool) {
	b, err := os.ReadFile(stat)
	if err != nil {
		return process{}, false
	}
	// After the command's closing parenthesis (the command may hold any
	// character): state, parent, … with utime, stime, cutime and cstime
	// the 12th to the 15th fields.
	s := string(b)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return process{}, false
	}
	fields := strings.Fields(s[end+1:])
	if len(fields) < 15 {
		return process{}, false
	}
	pid, err := strconv.Atoi(filepath.Base(filepath.Dir(stat)))
	if err != nil {
		return process{}, false
	}
	p := process{pid: pid}
	if p.parent, err = strconv.Atoi(fields[1]); err != nil {
		return process{}, false
	}
	var ticks [4]int64
	for i := range ticks {
		if ticks[i], err = strconv.ParseInt(fields[11+i], 10, 64); err != nil {
			return process{}, false
		}
	}
	p.cpu = time.Duration(ticks[0]+ticks[1]) * clockTick
	p.reaped = time.Duration(ticks[2]+ticks[3]) * clockTick
	return p, true
}

// processes reads every process's parent and CPU time. A process that
// ends while they are read is left out.
func processes() ([]process, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil, err
	}
	out := make([]process, 0, len(stats))
	for _, f := range stats {
		if p, ok := readProcess(f); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// Children lists the processes whose parent is pid.
func Children(pid int) ([]int, error) {
	ps, err := processes()
	if err != nil {
		return nil, err
	}
	var out []int
	for _, p := range ps {
		if p.parent == pid {
			out = append(out, p.pid)
		}
	}
	return out, nil
}

// CPUTime is the CPU time the cluster's server has used so far: its
// postmaster, every process it started that is still running (backends,
// WAL writer, checkpointer, autovacuum workers), and those that ended,
// whose time the postmaster collects when it waits for them. A process
// that ended and was not waited for yet is missing from a reading for
// that moment, so two readings' difference is, if anything, low.
func (c *Cluster) CPUTime() (time.Duration, error) {
	pm, err := c.PostmasterPID()
	if err != nil {
		return 0, err
	}
	ps, err := processes()
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, p := range ps {
		switch {
		case p.pid == pm:
			sum += p.cpu + p.reaped
		case p.parent == pm:
			sum += p.cpu
		}
	}
	return sum, nil
}

// ProcessCPU is the CPU time (user and system) process pid has used so
// far.
func ProcessCPU(pid int) (time.Duration, error) {
	p, ok := readProcess(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if !ok {
		return 0, os.ErrNotExist
	}
	return p.cpu, nil
}
