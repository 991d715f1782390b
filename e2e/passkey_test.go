package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

// virtualAuthenticator gives the tab Chromium's virtual platform
// authenticator (resident keys, user verification that succeeds), and
// returns its id.
func virtualAuthenticator(t *testing.T, ctx context.Context) webauthn.AuthenticatorID {
	t.Helper()
	var id webauthn.AuthenticatorID
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, webauthn.Enable, webauthn.EnableParams{}); err != nil {
			return err
		}
		res, err := cdp.Call(ctx, tg, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{
			Options: &webauthn.VirtualAuthenticatorOptions{Protocol: webauthn.AuthenticatorProtocolCtap2,
				Ctap2version: webauthn.Ctap2versionCtap21, Transport: webauthn.AuthenticatorTransportInternal,
				HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true}})
		id = res.AuthenticatorID
		return err
	}))
	if err != nil {
		t.Fatalf("virtual authenticator: %v", err)
	}
	return id
}

// badUV makes the authenticator's answers carry no user verification.
func badUV(t *testing.T, ctx context.Context, id webauthn.AuthenticatorID, bad bool) {
	t.Helper()
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, webauthn.SetResponseOverrideBits, webauthn.SetResponseOverrideBitsParams{AuthenticatorID: id, IsBadUV: &bad})
		return err
	}))
	if err != nil {
		t.Fatal(err)
	}
}

// assertJS asks the page's authenticator to sign challenge and returns the
// PublicKeyCredential as passkey.js sends it.
const assertJS = `(async (challenge, uv) => {
  const dec = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((s.length + 3) %% 4)), (c) => c.charCodeAt(0));
  const enc = (b) => btoa(String.fromCharCode(...new Uint8Array(b))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  const c = await navigator.credentials.get({ publicKey: { challenge: dec(challenge), rpId: location.hostname, userVerification: uv } });
  const r = c.response;
  return JSON.stringify({ id: c.id, rawId: enc(c.rawId), type: c.type, response: { authenticatorData: enc(r.authenticatorData),
    clientDataJSON: enc(r.clientDataJSON), signature: enc(r.signature), userHandle: r.userHandle ? enc(r.userHandle) : '' } });
})(%q, %q)`

func assertion(t *testing.T, ctx context.Context, a db.Approval, dec approval.Decision, uv string) string {
	t.Helper()
	ch := base64.RawURLEncoding.EncodeToString(approval.ProofChallenge(a.ID, a.CallID, a.ArgumentsDigest, dec, dec.Scope()))
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(assertJS, ch, uv), chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("assertion: %v", err)
	}
	return s
}

// postDecision posts the decision form from the page, as the page's own
// script would (session cookie, CSRF token), and returns the status.
func postDecision(t *testing.T, ctx context.Context, id, decision, assertion string) int {
	t.Helper()
	js := fmt.Sprintf(`(async () => {
	  const f = new URLSearchParams();
	  f.append('csrf_token', document.querySelector('input[name="csrf_token"]').value);
	  f.append('decision', %q);
	  if (%q) { f.append('assertion', %q); }
	  const r = await fetch('/approvals/%s/decision', { method: 'POST', body: f, credentials: 'same-origin', headers: { 'HX-Request': 'true' } });
	  return r.status;
	})()`, decision, assertion, assertion, id)
	status, err := chromedp.Run(ctx, chromedp.Evaluate[int](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	return status
}

func pendingItem(t *testing.T, e *testenv.Env, id string) db.Approval {
	t.Helper()
	a, err := e.DB.ApprovalForViewer(context.Background(), id, dev.DemoMember.Subject)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func wantPending(t *testing.T, e *testenv.Env, id string) {
	t.Helper()
	if st := pendingItem(t, e, id).Status; st != approval.StatusPending {
		t.Fatalf("status = %s, want pending", st)
	}
}

// check asks for a call through the raw API and returns the item's id.
func check(t *testing.T, e *testenv.Env, key, callID, tool string, proof string) string {
	t.Helper()
	body := map[string]any{"call_id": callID, "user": dev.DemoMember.Subject, "conversation_id": "conv-passkey", "turn_id": "turn-1",
		"connector": "mail", "tool": tool, "arguments": `{"to":"finance@acme.example","subject":"` + callID + `"}`}
	if proof != "" {
		body["proof"] = proof
	}
	status, out := e.API(key, "POST", "/api/v1/tool-calls", body)
	ap, _ := out["approval"].(map[string]any)
	if status != 200 || out["decision"] != "pending" || ap == nil {
		t.Fatalf("check %s: %d %v", callID, status, out)
	}
	return ap["id"].(string)
}

func TestPasskeyStepUp(t *testing.T) {
	e := testenv.NewEnv(t, testenv.Localhost)
	base := testenv.LocalhostURL(e.BaseURL)
	runtime(t, e)
	key := e.APIKey()
	ctx := newTab(t)
	auth := virtualAuthenticator(t, ctx)
	var toolID int64
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT id FROM tools WHERE connector = 'mail' AND name = 'send_email'`).Scan(&toolID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DB.SetToolProof(context.Background(), approval.SystemActor, toolID, 0, approval.ProofPasskey, ""); err != nil {
		t.Fatal(err)
	}
	signInAt(t, ctx, base, "member")

	t.Run("RegisterPasskey", func(t *testing.T) {
		err := chromedp.Do(ctx, chromedp.Navigate(base+"/settings"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="passkey-settings"]`)),
			chromedp.SendKeys(chromedp.CSS(`#passkey-name`), "Laptop"),
			chromedp.Click(chromedp.CSS(`[data-testid="passkey-add-button"]`)))
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, `[...document.querySelectorAll('[data-testid="passkey-name"]')].some((n) => n.textContent.trim() === 'Laptop')`, "the passkey is not listed")
		checkAxe(t, ctx, "settings-passkeys")
		screenshot(t, ctx, "settings-passkeys")
	})

	x := check(t, e, key, "pk-x", "send_email", "")
	y := check(t, e, key, "pk-y", "send_email", "")
	ax, ay := pendingItem(t, e, x), pendingItem(t, e, y)
	if ax.ProofRequired != approval.ProofPasskey || strings.Contains(strings.Join(ax.AvailableDecisions, " "), "always") {
		t.Fatalf("item: proof %q, decisions %v", ax.ProofRequired, ax.AvailableDecisions)
	}
	openRequestAt(t, ctx, base, x)
	if got := text(t, ctx, `[data-testid="approve-passkey"]`); got != "Approve with passkey" {
		t.Fatalf("approve button %q", got)
	}
	screenshot(t, ctx, "request-passkey")

	refusals := countActions(t, e, approval.ActionProofRefused)
	earlier := assertion(t, ctx, ax, approval.Approve, "required") // used below, after a later one
	for _, c := range []struct {
		name      string
		assertion func() string
	}{
		{"ErrNoAssertion", func() string { return "" }},
		{"ErrOtherItem", func() string { return assertion(t, ctx, ay, approval.Approve, "required") }},
		{"ErrRejectReplayedAsApprove", func() string { return assertion(t, ctx, ax, approval.Reject, "required") }},
		{"ErrNoUserVerification", func() string {
			badUV(t, ctx, auth, true)
			defer badUV(t, ctx, auth, false)
			return assertion(t, ctx, ax, approval.Approve, "discouraged")
		}},
		{"ErrReplayedOlderAssertion", func() string {
			// A later assertion was made (and its counter seen) first:
			// the earlier one is a replay, its counter did not go up.
			if s := postDecision(t, ctx, y, "approve", assertion(t, ctx, ay, approval.Approve, "required")); s != 200 {
				t.Fatalf("approving y: %d", s)
			}
			return earlier
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if s := postDecision(t, ctx, x, "approve", c.assertion()); s != http.StatusForbidden {
				t.Fatalf("status %d, want 403", s)
			}
			wantPending(t, e, x)
		})
	}
	if n := countActions(t, e, approval.ActionProofRefused) - refusals; n != 5 {
		t.Fatalf("%d refusals audited, want 5", n)
	}

	t.Run("FailedPromptSaysWhy", func(t *testing.T) {
		// The person's device cannot verify them: nothing is sent, and
		// the card says why.
		setUserVerified(t, ctx, auth, false)
		defer setUserVerified(t, ctx, auth, true)
		openRequestAt(t, ctx, base, x)
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="approve-passkey"]`))); err != nil {
			t.Fatal(err)
		}
		until(t, ctx, `/^Not approved: the passkey prompt was cancelled or failed/.test(document.querySelector('[data-passkey-status]').textContent)`, "the card does not say why")
		checkAxe(t, ctx, "request-passkey-failed")
		screenshot(t, ctx, "request-passkey-failed")
		wantPending(t, e, x)
	})

	t.Run("AgentWithTheSessionCookie", func(t *testing.T) {
		// A script holding the person's cookie and the page's CSRF token
		// posts the approval form, as an agent driving the browser's
		// profile could: refused, and audited.
		cookies, err := chromedp.Run(ctx, chromedp.Action[[]*network.Cookie](func(ctx context.Context, tg *chromedp.Target) ([]*network.Cookie, error) {
			res, err := cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: []string{base}})
			return res.Cookies, err
		}))
		if err != nil {
			t.Fatal(err)
		}
		csrf := eval[string](t, ctx, `document.querySelector('input[name="csrf_token"]').value`)
		form := url.Values{"csrf_token": {csrf}, "decision": {"approve"}}
		req, _ := http.NewRequest("POST", base+"/approvals/"+x+"/decision", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		for _, c := range cookies {
			req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "passkey") {
			t.Fatalf("agent's post: %d %s", resp.StatusCode, body)
		}
		wantPending(t, e, x)
		if n := countActions(t, e, approval.ActionProofRefused) - refusals; n != 6 {
			t.Fatalf("the agent's attempt is not audited (%d)", n)
		}
	})

	t.Run("ApproveWithPasskey", func(t *testing.T) {
		openRequestAt(t, ctx, base, x)
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="approve-passkey"]`))); err != nil {
			t.Fatal(err)
		}
		until(t, ctx, `(document.querySelector('[data-testid="outcome-label"]') || {}).textContent === 'Approved'`, "not approved")
		if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
			t.Fatal(err)
		}
		until(t, ctx, `/Approved with passkey Laptop,/.test((document.querySelector('[data-testid="outcome-passkey"]') || {}).textContent || '')`, "the page does not name the passkey")
		screenshot(t, ctx, "request-approved-passkey")
		// The same decision again: the item is decided, nothing changes.
		if s := postDecision(t, ctx, x, "approve", earlier); s != http.StatusConflict {
			t.Fatalf("replayed after the decision: %d, want 409", s)
		}
		status, out := e.API(key, "POST", "/api/v1/approvals/"+x+"/claim", map[string]any{"call_id": "pk-x", "arguments_digest": ax.ArgumentsDigest})
		if status != 200 || out["proof"] != "passkey" {
			t.Fatalf("claim: %d %v", status, out)
		}
	})

	t.Run("CheckAsksForProof", func(t *testing.T) {
		// search_messages has no step-up; the check asks for it.
		var id int64
		if err := e.DB.Pool.QueryRow(context.Background(), `UPDATE tools SET mode = 'require_approval' WHERE connector = 'mail' AND name = 'search_messages' RETURNING id`).Scan(&id); err != nil {
			t.Fatal(err)
		}
		z := check(t, e, key, "pk-z", "search_messages", "passkey")
		if pendingItem(t, e, z).ProofRequired != approval.ProofPasskey {
			t.Fatal("the check's proof is not required")
		}
		if s := postDecision(t, ctx, z, "approve", ""); s != http.StatusForbidden {
			t.Fatalf("without a passkey: %d", s)
		}
		if s := postDecision(t, ctx, z, "reject", ""); s != 200 {
			t.Fatalf("a rejection needs no passkey: %d", s)
		}
		w := check(t, e, key, "pk-w", "search_messages", "")
		if s := postDecision(t, ctx, w, "approve", ""); s != 200 {
			t.Fatalf("without proof asked: %d", s)
		}
		status, out := e.API(key, "POST", "/api/v1/approvals/"+w+"/claim", map[string]any{"call_id": "pk-w", "arguments_digest": pendingItem(t, e, w).ArgumentsDigest})
		if status != 200 || out["proof"] != "session" {
			t.Fatalf("claim: %d %v", status, out)
		}
	})

	t.Run("AdminScreens", func(t *testing.T) {
		admin := newTab(t)
		signInAt(t, admin, base, "admin")
		if err := chromedp.Do(admin, chromedp.Navigate(base+"/admin/passkeys"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="passkey-holders"]`))); err != nil {
			t.Fatal(err)
		}
		if got := text(t, admin, `[data-testid="passkey-count"]`); got != "1" {
			t.Fatalf("the member's passkeys: %q", got)
		}
		checkAxe(t, admin, "admin-passkeys")
		screenshot(t, admin, "admin-passkeys")
		if err := chromedp.Do(admin, chromedp.Navigate(fmt.Sprintf("%s/admin/policies/%d/proof", base, toolID)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="proof-form"]`))); err != nil {
			t.Fatal(err)
		}
		if !eval[bool](t, admin, `document.querySelector('[data-testid="proof-passkey"]').checked`) {
			t.Fatal("the form does not show the step-up")
		}
		checkAxe(t, admin, "policy-proof")
		screenshot(t, admin, "policy-proof")
		if err := chromedp.Do(admin, chromedp.Navigate(base+"/admin/audit")); err != nil {
			t.Fatal(err)
		}
		until(t, admin, `[...document.querySelectorAll('[data-testid="audit-passkey"]')].some((p) => p.textContent.includes('Laptop'))`, "the audit screen does not name the passkey")
	})

	t.Run("AuditVerify", func(t *testing.T) {
		rep, err := e.DB.VerifyReceipts(context.Background())
		if err != nil || !rep.OK() || rep.Checked != 2 {
			t.Fatalf("receipts: %v %s", err, rep)
		}
		if _, err := e.DB.Pool.Exec(context.Background(), `UPDATE approval_receipts SET signature = set_byte(signature, 12, get_byte(signature, 12) # 1)
			WHERE approval_id = $1`, x); err != nil {
			t.Fatal(err)
		}
		rep, _ = e.DB.VerifyReceipts(context.Background())
		if rep.OK() || !strings.Contains(rep.String(), x) {
			t.Fatalf("after altering a signature: %s", rep)
		}
	})

	t.Run("KeyboardApprove", func(t *testing.T) { keyboardApprove(t, ctx, e, base, key, auth) })
}

// keyboardApprove: the inbox's "a" presses "Approve with passkey", which
// asks for the passkey like a click; when the device cannot verify the
// person, nothing is sent and the card says why.
func keyboardApprove(t *testing.T, ctx context.Context, e *testenv.Env, base, key string, auth webauthn.AuthenticatorID) {
	v := check(t, e, key, "pk-v", "send_email", "")
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, `document.querySelectorAll('#pending-list > li[data-approval-id]').length === 1 && !!document.querySelector('.live.on')`, "no card")
	n := 0
	press(t, ctx, &n, "j")
	time.Sleep(600 * time.Millisecond)
	setUserVerified(t, ctx, auth, false)
	press(t, ctx, &n, "a")
	until(t, ctx, `/^Not approved: the passkey prompt/.test((document.querySelector('li.is-selected [data-passkey-status]') || {}).textContent || '')`, "a did not ask for the passkey")
	wantPending(t, e, v)
	setUserVerified(t, ctx, auth, true)
	press(t, ctx, &n, "a")
	until(t, ctx, `(document.querySelector('[data-testid="decided-passkey"]') || {}).textContent === 'Laptop'`, "a did not approve with the passkey")
	if got := pendingItem(t, e, v); got.Status != approval.StatusApproved || got.ProofPasskey != "Laptop" {
		t.Fatalf("after a: %s, passkey %q", got.Status, got.ProofPasskey)
	}
}

func countActions(t *testing.T, e *testenv.Env, action string) int {
	t.Helper()
	var n int
	deadline := time.Now().Add(time.Second)
	for {
		if err := e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_events WHERE action = $1`, action).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) || n > 0 {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// signInAt signs in as signIn does, at base.
func signInAt(t *testing.T, ctx context.Context, base, user string) {
	t.Helper()
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="sign-in"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="sign-in"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="demo-user-`+user+`"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="demo-user-`+user+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="user-name"]`)),
	)
	if err != nil {
		t.Fatalf("sign in as %s: %v", user, err)
	}
}

// openRequestAt opens a request's page at base.
func openRequestAt(t *testing.T, ctx context.Context, base, id string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/approvals/"+id)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, `!!document.querySelector('#approval-page')`, "no request page")
}

// waitFor is until across a navigation: it polls js until it is true.
func waitFor(t *testing.T, ctx context.Context, js, what string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// setUserVerified makes the authenticator's user verification succeed or
// fail.
func setUserVerified(t *testing.T, ctx context.Context, id webauthn.AuthenticatorID, ok bool) {
	t.Helper()
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, webauthn.SetUserVerified, webauthn.SetUserVerifiedParams{AuthenticatorID: id, IsUserVerified: ok})
		return err
	}))
	if err != nil {
		t.Fatal(err)
	}
}
