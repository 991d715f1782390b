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
}

// readProcess reads the stat file of one process; false if it ended or
// cannot be read.
func readProcess(stat string) (process, bool) {
	b, err := os.ReadFile(stat)
	if err != nil {
		return process{}, false
	}
	// After the command's closing parenthesis: state, parent, … with utime
	// and stime the 12th and 13th fields.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return process{}, false
	}
	pid, err1 := strconv.Atoi(filepath.Base(filepath.Dir(stat)))
	parent, err2 := strconv.Atoi(fields[1])
	user, err3 := strconv.ParseInt(fields[11], 10, 64)
	system, err4 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return process{}, false
	}
	return process{pid: pid, parent: parent, cpu: time.Duration(user+system) * clockTick}, true
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
// postmaster and every process it started (backends, WAL writer,
// checkpointer, autovacuum) that is still running. A process that ended
// takes its time with it, so a difference of two readings undercounts
// what short-lived processes (an autovacuum worker) used between them.
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
		if p.pid == pm || p.parent == pm {
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
