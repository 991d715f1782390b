package hook_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/hook"
)

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// The person approves the diff of the file as the hook read it (its
// SHA-256 is on the card). When the file changes between the card and the
// approval, the edit does not run: the hook denies with the reason and
// asks again at once, with the diff of the file as it is now; the agent's
// retry of the same call attaches to that new item.
func TestFileChangedAfterApproval(t *testing.T) {
	s := newServer(t)
	dir := t.TempDir()
	before := "alpha\nbeta\ngamma\n"
	path := writeFile(t, dir, "app.txt", before)
	edit := `{"file_path":` + jsonString(path) + `,"old_string":"beta","new_string":"BETA"}`
	in := func(id string) string {
		return strings.Replace(claudeInput(id, "Edit", edit), `"cwd":"/home/maya/p"`, `"cwd":`+jsonString(dir), 1)
	}
	res := runAsync(s.config(hook.ClaudeCode, 30*time.Second), in("toolu_drift"))
	id := s.pendingID(t, "toolu_drift")
	if n := s.count(t, `SELECT count(*) FROM approvals WHERE id = $1 AND context_diff::text LIKE '%' || $2 || '%'`, id, sha(before)); n != 1 {
		t.Fatalf("the card does not carry the file's SHA-256 as read")
	}
	after := "alpha\nbeta\ngamma\ndelta: added after the card was shown\n"
	if err := os.WriteFile(path, []byte(after), 0o600); err != nil {
		t.Fatal(err)
	}
	s.decide(t, id, url.Values{"decision": {"approve"}})
	r := <-res
	if r.code != hook.ExitDecided || !strings.Contains(r.stdout, `"permissionDecision":"deny"`) ||
		!strings.Contains(r.stdout, "changed after you approved") || !strings.Contains(r.stdout, "asking again") {
		t.Fatalf("exit %d stdout %q stderr %q; want the deny for a changed file", r.code, r.stdout, r.stderr)
	}
	again := s.pendingID(t, "toolu_drift-changed")
	if !strings.Contains(r.stdout, "/approvals/"+again) {
		t.Fatalf("the deny does not link the new item %s: %q", again, r.stdout)
	}
	if n := s.count(t, `SELECT count(*) FROM approvals WHERE id = $1 AND context_diff::text LIKE '%' || $2 || '%'
		AND context_diff::text LIKE '%delta: added after%'`, again, sha(after)); n != 1 {
		t.Fatalf("the new item does not show the file as it is now")
	}
	// Its reason says why it is asked again, by the hashes alone.
	if n := s.count(t, `SELECT count(*) FROM approvals WHERE id = $1 AND agent_reason = $2`, again,
		hook.DriftNote+" (sha256 "+sha(before)[:12]+"… → "+sha(after)[:12]+"…)."); n != 1 {
		t.Fatalf("the new item's reason does not say the file changed, with both hashes")
	}
	// The retry waits on the new item; approved, the edit runs.
	res = runAsync(s.config(hook.ClaudeCode, 30*time.Second), in("toolu_drift_retry"))
	time.Sleep(500 * time.Millisecond)
	s.decide(t, again, url.Values{"decision": {"approve"}})
	if r := <-res; !strings.Contains(r.stdout, `"permissionDecision":"allow"`) {
		t.Fatalf("the retry: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

// The claim's answer names the file hashes the person approved; when they
// are not those of the diff the hook sent (the item's diff was swapped),
// the edit does not run even though the file did not change.
func TestApprovedOtherContents(t *testing.T) {
	s := newServer(t)
	dir := t.TempDir()
	before := "alpha\nbeta\n"
	path := writeFile(t, dir, "app.txt", before)
	edit := `{"file_path":` + jsonString(path) + `,"old_string":"beta","new_string":"BETA"}`
	in := strings.Replace(claudeInput("toolu_swap", "Edit", edit), `"cwd":"/home/maya/p"`, `"cwd":`+jsonString(dir), 1)
	res := runAsync(s.config(hook.ClaudeCode, 30*time.Second), in)
	id := s.pendingID(t, "toolu_swap")
	if n := s.count(t, `WITH u AS (UPDATE approvals SET context_diff = replace(context_diff::text, $2, $3)::jsonb WHERE id = $1 RETURNING 1)
		SELECT count(*) FROM u`, id, sha(before), sha("something else")); n != 1 {
		t.Fatal("could not swap the item's diff")
	}
	s.decide(t, id, url.Values{"decision": {"approve"}})
	r := <-res
	if r.code != hook.ExitDecided || !strings.Contains(r.stdout, `"permissionDecision":"deny"`) || !strings.Contains(r.stdout, "other file contents") {
		t.Fatalf("exit %d stdout %q stderr %q; want a deny", r.code, r.stdout, r.stderr)
	}
	if got, _ := os.ReadFile(path); string(got) != before {
		t.Fatalf("the file changed: %q", got)
	}
}
