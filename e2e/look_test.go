package e2e

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/jackc/pgx/v5"
)

// The admin navigation fits one line at 1280 px.
func TestAdminNavOneLine(t *testing.T) {
	e := testenv.NewEnv(t)
	ctx := newTab(t)
	signIn(t, ctx, e, "admin")
	if err := chromedp.Do(ctx, chromedp.Navigate(e.BaseURL+"/admin/policies"), chromedp.WaitVisible(chromedp.CSS(`h1`))); err != nil {
		t.Fatal(err)
	}
	tops := eval[[]float64](t, ctx, `[...new Set([...document.querySelectorAll('.nav a')].map(a => Math.round(a.getBoundingClientRect().top)))]`)
	if len(tops) != 1 {
		t.Fatalf("the navigation takes %d lines at %v px", len(tops), eval[float64](t, ctx, `innerWidth`))
	}
	if eval[bool](t, ctx, `(() => { const links = [...document.querySelectorAll('.nav a')]; const who = document.querySelector('.who').getBoundingClientRect();
		const brand = document.querySelector('.brand').getBoundingClientRect();
		return links[links.length - 1].getBoundingClientRect().right > who.left || links[0].getBoundingClientRect().left < brand.right ||
			document.documentElement.scrollWidth > innerWidth; })()`) {
		t.Fatal("the navigation overlaps the name or the brand, or the page scrolls sideways")
	}
}

// Admin screens are reached by their short paths too.
func TestAdminShortPaths(t *testing.T) {
	e := testenv.NewEnv(t)
	admin := e.NewBrowser()
	admin.T = t
	admin.SignIn("admin")
	for _, name := range []string{"policies", "audit", "insights", "api-keys", "webhooks"} {
		resp, _ := admin.Get("/" + name)
		if resp.StatusCode != 303 || resp.Header.Get("Location") != "/admin/"+name {
			t.Fatalf("/%s: %d to %q", name, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	if resp, _ := admin.Get("/nothing-here"); resp.StatusCode != 404 {
		t.Fatalf("an unknown path: %d", resp.StatusCode)
	}
}

// TestNoLayoutShift: a page with a scroll bar and one without put the
// navigation and the heading at the same place, and the settings panels
// are spaced evenly.
func TestNoLayoutShift(t *testing.T) {
	e := testenv.NewEnv(t)
	err := e.DB.InTx(context.Background(), func(tx pgx.Tx) error {
		for range 80 {
			if err := db.RecordAudit(context.Background(), tx, approval.AuditEvent{Actor: approval.Actor{Kind: "user", ID: "demo-member", Name: "Maya Member"},
				Action: "approved", Connector: "mail", Tool: "send_email", ConversationID: "c", TurnID: "t"}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := newTab(t)
	signIn(t, ctx, e, "admin")
	where := func(path string) (edges []float64, scrolls bool) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(e.BaseURL+path), chromedp.WaitVisible(chromedp.CSS(`h1`))); err != nil {
			t.Fatal(err)
		}
		edges = eval[[]float64](t, ctx, `[document.querySelector('.brand').getBoundingClientRect().left, document.querySelector('h1').getBoundingClientRect().left,
			document.querySelector('.who').getBoundingClientRect().right, document.documentElement.clientWidth]`)
		return edges, eval[bool](t, ctx, `document.documentElement.scrollHeight > innerHeight`)
	}
	short, shortScrolls := where("/auto-approve")
	long, longScrolls := where("/admin/audit")
	if shortScrolls || !longScrolls {
		t.Fatalf("the auto-approve page scrolls (%v) or the audit does not (%v): nothing to compare", shortScrolls, longScrolls)
	}
	// Headless Chromium draws its scroll bars over the page, so the
	// positions below match either way there; the rule that keeps them in
	// place in a desktop browser is checked on both pages.
	for _, path := range []string{"/auto-approve", "/settings", "/admin/audit", "/"} {
		where(path)
		if g := eval[string](t, ctx, `getComputedStyle(document.documentElement).scrollbarGutter`); g != "stable" {
			t.Errorf("%s: the page keeps no room for a scroll bar (scrollbar-gutter %q)", path, g)
		}
	}
	for i, what := range []string{"the brand", "the heading", "the name", "the page's width"} {
		if short[i] != long[i] {
			t.Errorf("%s moves between a short and a long page: %.1f px, then %.1f px", what, short[i], long[i])
		}
	}

	// Settings: the same space above every panel.
	if err := chromedp.Do(ctx, chromedp.Navigate(e.BaseURL+"/settings"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="push-settings"]`))); err != nil {
		t.Fatal(err)
	}
	gaps := eval[[]float64](t, ctx, `(() => { const ps = [...document.querySelectorAll('main .panel')].filter(p => p.getBoundingClientRect().height > 0);
		const gaps = []; for (let i = 1; i < ps.length; i++) gaps.push(Math.round(ps[i].getBoundingClientRect().top - ps[i-1].getBoundingClientRect().bottom)); return gaps; })()`)
	if len(gaps) == 0 {
		t.Fatal("the settings page has fewer than two panels")
	}
	for _, g := range gaps {
		if g != gaps[0] || g < 16 {
			t.Fatalf("the settings panels are spaced %v px apart; want the same space, at least 16 px", gaps)
		}
	}
	screenshot(t, ctx, "settings")
}
