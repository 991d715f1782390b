package main

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The bench's CPU line: per operation over the turns (warm-ups counted),
// the busy share of the machine's CPUs, and the most a check may use at
// the goal — the CPUs' time divided by the goal's rate.
func TestCPURow(t *testing.T) {
	cpus := float64(runtime.NumCPU())
	check := cpuTurns{use: cpuUse{self: 600 * time.Millisecond, pg: 400 * time.Millisecond, known: true}, ops: 4000,
		wall: time.Duration(float64(time.Second) / cpus)} // 1 s of CPU in 1 s of all CPUs: 100 % busy
	floor := cpuTurns{use: cpuUse{self: 300 * time.Millisecond, pg: 100 * time.Millisecond, known: true}, ops: 4000, wall: time.Second}
	var out bytes.Buffer
	cpuRow(&out, check, floor, "one-select", 10000, 0.50)
	// A check 0.150 + 0.100 ms; at 0.50× of 10,000/s (5,000/s) the CPUs
	// give it cpus × 1000 / 5000 ms.
	most := cpus * 1000 / 5000
	for _, want := range []string{
		"CPU a check 0.150 ms in this process + 0.100 ms in Postgres = 0.250 ms, CPUs 100% busy",
		"one-select 0.075 + 0.025 = 0.100 ms",
		fmt.Sprintf("at 0.50× (5000/s) a check may use at most %.3f ms of CPU", most),
		fmt.Sprintf("it uses %.2f× that", 0.25/most),
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}
	// Where either side's CPU could not be read, nothing is said.
	for _, c := range []cpuTurns{{use: cpuUse{self: time.Second}, ops: 10}, {use: cpuUse{known: true}}} {
		out.Reset()
		cpuRow(&out, c, floor, "one-select", 10000, 0.50)
		if out.Len() != 0 {
			t.Errorf("said %q of %+v", out.String(), c)
		}
	}
}
