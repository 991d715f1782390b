//go:build !linux

package dev

import (
	"errors"
	"time"
)

var errNoProc = errors.New("dev: process times are read from /proc, on Linux only")

// Children lists the processes whose parent is pid (Linux only).
func Children(pid int) ([]int, error) { return nil, errNoProc }

// CPUTime is the CPU time the cluster's server has used so far (Linux
// only).
func (c *Cluster) CPUTime() (time.Duration, error) { return 0, errNoProc }

// ProcessCPU is the CPU time process pid has used so far (Linux only).
func ProcessCPU(pid int) (time.Duration, error) { return 0, errNoProc }
