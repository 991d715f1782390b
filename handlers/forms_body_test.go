package handlers_test

import (
	"net/http"
	"net/url"
	"testing"
)

// Every browser form is read from the POST body only: fields in the URL's
// query string (which leaks through logs and Referer, and can be planted in
// a link) change nothing.
func TestFormsReadTheBodyOnly(t *testing.T) {
	l := newLoop(t)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	id := toolID(t, l.Env, "mail", "send_email")
	before := toolVersion(t, l.Env, id)
	// The mode and the action only in the query; version and token in the body.
	resp, _ := admin.PostForm("/admin/policies/"+id+"?mode=block&action=confirm&standing_approval=1", url.Values{"version": {before}})
	if resp.StatusCode == http.StatusSeeOther || toolVersion(t, l.Env, id) != before {
		t.Fatalf("a policy change taken from the query string: %d, version %s → %s", resp.StatusCode, before, toolVersion(t, l.Env, id))
	}
	if mode := count(t, l.Env, `SELECT count(*) FROM tools WHERE id = $1 AND mode = 'block'`, id); mode != 0 {
		t.Fatal("the tool was blocked from the query string")
	}
	resp, _ = admin.PostForm("/admin/api-keys?name=from-query", url.Values{})
	if n := count(t, l.Env, `SELECT count(*) FROM api_keys WHERE name = 'from-query'`); n != 0 {
		t.Fatalf("an API key named from the query string: %d, %d keys", resp.StatusCode, n)
	}
}
