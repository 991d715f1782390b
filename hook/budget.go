package hook

import "time"

// A call's diff shares one budget across all its files: a deadline, and
// a count of work (bytes read, compared and written, cells of the line
// diff's table) that also bounds the memory the diff holds. Past either,
// the diff is made again from the call's arguments alone, with a note.
const (
	maxDiffWork = 64 << 20
	maxDiffTime = 5 * time.Second
)

// overBudget is the panic that ends a diff past its budget; editDiff
// recovers it.
type overBudget struct{}

// budget is what a diff may still spend.
type budget struct {
	deadline time.Time
	work     int
	checked  int // work when the clock was last read
}

func newBudget(deadline time.Time) *budget {
	return &budget{deadline: deadline, work: maxDiffWork}
}

// spend takes n units of work, and ends the diff (panics with overBudget)
// when the work or the time is used up. The clock is read every 64 Ki
// units, so that a loop may spend a little at a time. A nil budget is
// unbounded (a diff from arguments the hook already holds).
func (b *budget) spend(n int) {
	if b == nil {
		return
	}
	b.work -= n
	if b.work < 0 {
		panic(overBudget{})
	}
	if b.checked-b.work >= 64<<10 || n >= 64<<10 {
		b.checked = b.work
		if time.Now().After(b.deadline) {
			panic(overBudget{})
		}
	}
}
