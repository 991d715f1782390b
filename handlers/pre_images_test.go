package handlers_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
)

// TestClaimCarriesPreImages: the claim's answer names the SHA-256 of each
// file as the runtime read it for the diff the person approved (issue 41),
// read from the stored diff; an item without one answers an empty list.
func TestClaimCarriesPreImages(t *testing.T) {
	l := newLoop(t)
	sum := strings.Repeat("ab", 32)
	diff := "--- /home/ana/shop/a.txt\n+++ /home/ana/shop/a.txt\n@@ -1,1 +1,1 @@\n-old\n+new\n" +
		approval.PreImageNote + sum + "\n--- /home/ana/shop/b.txt\n+++ /home/ana/shop/b.txt\n@@ -1,1 +1,1 @@\n-x\n+y\n" +
		"--- /dev/null\n+++ /home/ana/shop/c.txt\n@@ -0,0 +1,1 @@\n+z\n"
	claim := func(t *testing.T, extra map[string]any) (string, map[string]any) {
		t.Helper()
		call := withRuntime(l.call("mail", "send_email", `{"to":"a@b.c"}`), extra)
		id := l.pending(t, call)
		if s, body := decide(l.Member, id, "approve"); s != http.StatusSeeOther {
			t.Fatalf("approve: %d %s", s, body)
		}
		status, out := l.claim(l.Key, id, call)
		if status != http.StatusOK {
			t.Fatalf("claim: %d %v", status, out)
		}
		return id, out
	}
	t.Run("WithDiff", func(t *testing.T) {
		id, out := claim(t, map[string]any{"context": map[string]any{"diff": diff}})
		if got := fmt.Sprint(out["pre_images"]); got != "[map[path:/home/ana/shop/b.txt sha256:"+sum+"]]" {
			t.Fatalf("pre_images %s", got)
		}
		// The audit's request and claim lines carry the hashes, not the paths.
		rows, err := l.DB.Pool.Query(t.Context(), `SELECT action, detail->'pre_images', detail::text FROM audit_events
			WHERE approval_id = $1 AND action IN ('approval requested', 'claimed') ORDER BY seq`, id)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var lines []string
		for rows.Next() {
			var action, detail string
			var pre *string
			if err := rows.Scan(&action, &pre, &detail); err != nil {
				t.Fatal(err)
			}
			if pre == nil || *pre != `["`+sum+`"]` || strings.Contains(detail, "ana/shop") {
				t.Fatalf("%s line detail %s", action, detail)
			}
			lines = append(lines, action)
		}
		if rows.Err() != nil || fmt.Sprint(lines) != "[approval requested claimed]" {
			t.Fatalf("audit lines %v %v", lines, rows.Err())
		}
	})
	t.Run("WithoutDiff", func(t *testing.T) {
		id, out := claim(t, nil)
		if got, ok := out["pre_images"].([]any); !ok || len(got) != 0 {
			t.Fatalf("pre_images %#v, want []", out["pre_images"])
		}
		var n int
		if err := l.DB.Pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_events WHERE approval_id = $1 AND detail ? 'pre_images'`, id).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%d audit lines name pre-images for an item without a diff (%v)", n, err)
		}
	})
}
