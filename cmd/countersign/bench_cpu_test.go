package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The bench's CPU line: per operation over the turns (warm-ups counted),
// the busy share of the CPUs, and the most a check may use at the goal —
// the CPUs' time divided by the goal's rate.
func TestCPURow(t *testing.T) {
	// A check: 0.6 s here and 0.4 s in Postgres for 4,000 operations, in
	// 0.5 s of 2 CPUs (all busy). Its floor: 0.3 + 0.1 s for 4,000, in 1 s
	// (a fifth busy) at 10,000/s.
	check := cpuTurns{use: cpuUse{self: 600 * time.Millisecond, pg: 400 * time.Millisecond, known: true}, ops: 4000, wall: 500 * time.Millisecond}
	floor := cpuTurns{use: cpuUse{self: 300 * time.Millisecond, pg: 100 * time.Millisecond, known: true}, ops: 4000, wall: time.Second}
	var out bytes.Buffer
	cpuRow(&out, check, floor, "one-select", 10000, 0.50, 2)
	// At 0.50× of 10,000/s a check has 2 CPUs × 1 s / 5,000 = 0.4 ms; it
	// uses 0.25 ms.
	for _, want := range []string{
		"CPU a check 0.150 ms in this process + 0.100 ms in Postgres = 0.250 ms, CPUs 100% busy",
		"one-select 0.075 + 0.025 = 0.100 ms, 20% busy",
		"at 0.50× (5000/s) a check may use at most 0.400 ms of CPU, all 2 CPUs busy: it uses 0.62× that",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}
	// Where either side's CPU could not be read, nothing is said.
	for _, c := range []cpuTurns{{use: cpuUse{self: time.Second}, ops: 10}, {use: cpuUse{known: true}}} {
		out.Reset()
		cpuRow(&out, c, floor, "one-select", 10000, 0.50, 2)
		if out.Len() != 0 {
			t.Errorf("said %q of %+v", out.String(), c)
		}
	}
}
