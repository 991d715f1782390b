package hook

import (
	"encoding/json"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// measure runs f, and is how long it took and the most heap it held.
func measure(f func()) (time.Duration, uint64) {
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base := m.HeapAlloc
	start := time.Now()
	f()
	took := time.Since(start)
	close(stop)
	<-done
	return took, peak.Load() - min(base, peak.Load())
}

// The crafted edits that once took tens of seconds and gigabytes end
// within the diff's share of --wait, as a diff from the arguments alone
// that says why. The numbers are logged, not asserted: the machine is
// shared.
func TestDiffBudget(t *testing.T) {
	dir := t.TempDir()
	var big strings.Builder
	for i := 0; big.Len() < 1_900_000; i++ {
		big.WriteString("line " + strings.Repeat("x", 40) + " " + string(rune('a'+i%26)) + "\n")
	}
	write(t, dir, "big.txt", big.String())
	var words strings.Builder
	for i := 0; words.Len() < 1_900_000; i++ {
		words.WriteString("t" + strconv.Itoa(1000+i%1000) + " ")
		if i%16 == 15 {
			words.WriteString("\n")
		}
	}
	write(t, dir, "words.txt", words.String())
	var patch strings.Builder
	patch.WriteString("*** Begin Patch\n")
	for i := 0; i < 300; i++ {
		patch.WriteString("*** Update File: big.txt\n@@\n-line " + strings.Repeat("x", 40) + " a\n+line " + strings.Repeat("y", 40) + " a\n")
	}
	patch.WriteString("*** End Patch\n")
	var edits []map[string]any
	for i := 0; i < 1000; i++ {
		edits = append(edits, map[string]any{"old_string": "t" + strconv.Itoa(1000+i) + " ", "new_string": "u" + strconv.Itoa(1000+i) + " ", "replace_all": true})
	}
	multi, _ := json.Marshal(map[string]any{"file_path": filepath.Join(dir, "words.txt"), "edits": edits})
	patchIn, _ := json.Marshal(map[string]string{"command": patch.String()})
	const share = 2 * time.Second // diffShare of --wait 8s
	for _, c := range []struct {
		name, tool string
		input      []byte
	}{
		{"Patch300UpdatesOfABigFile", "apply_patch", patchIn},
		{"MultiEdit1000ReplaceAll", "MultiEdit", multi},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Logf("input %d bytes", len(c.input))
			var d string
			took, heap := measure(func() {
				cc, _ := contextOf(Input{ToolName: c.tool, ToolInput: c.input, Cwd: dir}, Files{}, time.Now().Add(share), "")
				if cc != nil {
					d = cc.Diff
				}
			})
			t.Logf("%s: %v, peak heap +%.1f MB, diff %d bytes", c.name, took.Round(time.Millisecond), float64(heap)/(1<<20), len(d))
			if !strings.Contains(d, whyBudget) {
				t.Fatalf("not the diff from the arguments alone with the budget note:\n%.500s", d)
			}
			if took > 2*share+maxDiffTime {
				t.Fatalf("took %v: the budget did not end it", took)
			}
		})
	}
}
