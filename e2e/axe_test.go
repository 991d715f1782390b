package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// axeSource is axe-core's browser bundle, installed by `npm ci` in e2e/axe
// at the version its package-lock.json pins.
var axeSource = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile(filepath.Join("axe", "node_modules", "axe-core", "axe.min.js"))
	return string(b), err
})

// axeViolation is one rule axe-core found broken, with where.
type axeViolation struct {
	ID      string   `json:"id"`
	Impact  string   `json:"impact"`
	Help    string   `json:"help"`
	Targets []string `json:"targets"`
}

// checkAxe runs axe-core on the page in ctx and fails t on any serious or
// critical violation. Without axe-core installed the check is skipped,
// unless COUNTERSIGN_E2E=1 makes browser tests required: then it fails.
func checkAxe(t *testing.T, ctx context.Context, screen string) {
	t.Helper()
	for _, v := range axeRun(t, ctx, screen) {
		t.Errorf("%s: %s (%s): %s at %s", screen, v.ID, v.Impact, v.Help, strings.Join(v.Targets, ", "))
	}
}

// axeRun injects axe-core into the page and returns its serious and
// critical violations.
func axeRun(t *testing.T, ctx context.Context, screen string) []axeViolation {
	t.Helper()
	src, err := axeSource()
	if err != nil {
		if os.Getenv("COUNTERSIGN_E2E") == "1" {
			t.Fatalf("axe-core is not installed (run `npm ci` in e2e/axe): %v", err)
		}
		t.Skipf("axe-core is not installed (run `npm ci` in e2e/axe): %v", err)
	}
	// DevTools evaluation is not subject to the page's Content Security
	// Policy, so the strict CSP stays as it is for the check.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.axe !== undefined || (function(){`+src+`
return true})()`)); err != nil {
		t.Fatalf("%s: inject axe-core: %v", screen, err)
	}
	out, err := chromedp.Run(ctx, chromedp.EvaluateAsDevTools[string](`(async () => {
		const r = await axe.run(document, {resultTypes: ['violations']});
		return JSON.stringify(r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical').map(v => ({
			id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map(n => n.target.join(' ')) })));
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: run axe-core: %v", screen, err)
	}
	var vs []axeViolation
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		t.Fatalf("%s: read axe-core's result: %v", screen, err)
	}
	return vs
}

// String says which rule, how bad, and where.
func (v axeViolation) String() string {
	return v.ID + " (" + v.Impact + "): " + v.Help + " at " + strings.Join(v.Targets, ", ")
}
