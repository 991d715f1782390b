package e2e

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/internal/testenv"
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
