package db

import (
	"fmt"
	"testing"

	"github.com/countersign/countersign/approval"
)

// The set of asking tools forgets a tool that no longer asks or is not
// found, and never holds more than maxAskingTools.
func TestAskingToolsStayBounded(t *testing.T) {
	var a askingTools
	asks := &Tool{Mode: string(approval.ModeRequireApproval)}
	a.note("c", "t", a.asks("c", "t"), asks)
	a.note("c", "t", a.asks("c", "t"), asks)
	if !a.asks("c", "t") || a.n.Load() != 1 {
		t.Fatalf("noted twice: asks %v, %d held", a.asks("c", "t"), a.n.Load())
	}
	a.note("c", "t", a.asks("c", "t"), &Tool{Mode: string(approval.ModeAllow)})
	if a.asks("c", "t") || a.n.Load() != 0 {
		t.Fatalf("after an allow: asks %v, %d held", a.asks("c", "t"), a.n.Load())
	}
	a.note("c", "t", a.asks("c", "t"), asks)
	a.note("c", "t", a.asks("c", "t"), nil)
	if a.asks("c", "t") {
		t.Fatal("a tool not found is still remembered")
	}
	for i := range maxAskingTools + 10 {
		a.note("c", fmt.Sprint(i), false, asks)
	}
	held := 0
	a.m.Range(func(any, any) bool { held++; return true })
	if held > maxAskingTools || int64(held) != a.n.Load() {
		t.Fatalf("%d held, counted %d, bound %d", held, a.n.Load(), maxAskingTools)
	}
	if !a.asks("c", fmt.Sprint(maxAskingTools+9)) {
		t.Fatal("the newest tool was not kept")
	}
}
