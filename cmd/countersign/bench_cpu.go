package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/countersign/countersign/dev"
)

// cpuUse is CPU time used: by this process (Countersign's server, the
// runtimes that load it and the floors' server and clients all run in
// it) and by the private cluster's Postgres. known is false where either
// cannot be read: a database of --database, or not Linux.
type cpuUse struct {
	self, pg time.Duration
	known    bool
}

// cpuNow reads the CPU time used so far.
func (b *benchServer) cpuNow() cpuUse {
	if b.cluster == nil {
		return cpuUse{}
	}
	self, err1 := dev.ProcessCPU(os.Getpid())
	pg, err2 := b.cluster.CPUTime()
	return cpuUse{self: self, pg: pg, known: err1 == nil && err2 == nil}
}

func (u cpuUse) since(then cpuUse) cpuUse {
	return cpuUse{self: u.self - then.self, pg: u.pg - then.pg, known: u.known && then.known}
}

func (u cpuUse) plus(o cpuUse) cpuUse {
	return cpuUse{self: u.self + o.self, pg: u.pg + o.pg, known: u.known && o.known}
}

// cpuTurns is the CPU that one side of an alternated measurement used in
// its turns (its warm-ups and, for the check, the sealing and planning
// each turn left behind), the operations it did in them, and their
// length.
type cpuTurns struct {
	use  cpuUse
	ops  int
	wall time.Duration
}

// perOp is the CPU time an operation took here and in Postgres, in ms.
func (c cpuTurns) perOp() (self, pg float64) {
	if c.ops == 0 {
		return 0, 0
	}
	return c.use.self.Seconds() * 1000 / float64(c.ops), c.use.pg.Seconds() * 1000 / float64(c.ops)
}

// busy is the share of cpus CPUs the turns kept busy.
func (c cpuTurns) busy(cpus int) float64 {
	if c.wall <= 0 || cpus <= 0 {
		return 0
	}
	return (c.use.self + c.use.pg).Seconds() / (c.wall.Seconds() * float64(cpus))
}

// cpuRow says what a check of a path and an operation of its floor cost
// in CPU, measured over their alternated turns, and the most CPU a check
// may use to reach the goal: at goal × the floor's rate, a check that
// kept every CPU of the machine busy could use no more than the CPUs'
// time divided by that rate. A check over that bound cannot reach the
// goal on this machine however its waits are arranged; one under it is
// bound by its waits (the CPUs' idle share says how much).
//
// cpus is the machine's CPUs (runtime.NumCPU: those this process may run
// on, not a container's CPU quota, under which the bound is too high).
func cpuRow(stdout io.Writer, check, floor cpuTurns, floorName string, floorRate, goal float64, cpus int) {
	if !check.use.known || !floor.use.known || check.ops == 0 || floor.ops == 0 {
		return
	}
	cs, cp := check.perOp()
	fs, fp := floor.perOp()
	fmt.Fprintf(stdout, "  %-44s CPU a check %.3f ms in this process + %.3f ms in Postgres = %.3f ms, CPUs %.0f%% busy; %s %.3f + %.3f = %.3f ms, %.0f%% busy\n",
		"", cs, cp, cs+cp, 100*check.busy(cpus), floorName, fs, fp, fs+fp, 100*floor.busy(cpus))
	rate := goal * floorRate
	most := float64(cpus) * 1000 / rate
	fmt.Fprintf(stdout, "  %-44s at %.2f× (%.0f/s) a check may use at most %.3f ms of CPU, all %d CPUs busy: it uses %.2f× that\n",
		"", goal, rate, most, cpus, (cs+cp)/most)
}
