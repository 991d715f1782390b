package handlers_test

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/internal/testenv"
)

const firefoxAndroid = "Mozilla/5.0 (Android 14; Mobile; rv:128.0) Gecko/128.0 Firefox/128.0"

// postSubscription posts a subscription's JSON as the page's script does:
// same origin, the CSRF token in the X-CSRF-Token header (csrf "" sends
// none).
func postSubscription(b *testenv.Browser, body, csrf string) (*http.Response, string) {
	b.T.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.Env.BaseURL+"/settings/push", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", b.Env.BaseURL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("User-Agent", firefoxAndroid)
	if csrf != "" {
		req.Header.Set("X-CSRF-Token", csrf)
	}
	return b.Do(req)
}

// browserSubscription is a PushSubscription's JSON with fresh keys.
func browserSubscription(t *testing.T, endpoint string) string {
	t.Helper()
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	enc := base64.RawURLEncoding.EncodeToString
	b, _ := json.Marshal(map[string]any{"endpoint": endpoint, "expirationTime": nil,
		"keys": map[string]string{"p256dh": enc(priv.PublicKey().Bytes()), "auth": enc(auth)}})
	return string(b)
}

func TestSettingsPushDevices(t *testing.T) {
	l := newLoop(t)
	_, body := l.Member.Get("/settings")
	if !strings.Contains(body, `data-testid="push-settings"`) || !strings.Contains(body, "No device receives pushes yet") {
		t.Fatalf("settings:\n%s", body)
	}
	keys, err := l.DB.EnsureVAPIDKeys(t.Context(), func() (db.VAPIDKeys, error) {
		t.Fatal("showing the page did not create the VAPID keys")
		return db.VAPIDKeys{}, nil
	})
	if err != nil || !strings.Contains(body, `data-push-key="`+keys.PublicKey+`"`) {
		t.Fatalf("the page lacks the public key %q (%v)", keys.PublicKey, err)
	}
	csrf := l.Member.CSRF()

	t.Run("Subscribe", func(t *testing.T) {
		resp, out := postSubscription(l.Member, browserSubscription(t, "https://push.example.net/send/abc"), csrf)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("status %d: %s", resp.StatusCode, out)
		}
		_, body := l.Member.Get("/settings")
		if strings.Count(body, `data-testid="push-device"`) != 1 || !strings.Contains(body, "Firefox on Android") {
			t.Fatalf("device list:\n%s", body)
		}
		if strings.Contains(body, "push.example.net") {
			t.Fatal("the page shows the endpoint")
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		for _, tc := range []struct {
			body string
			code int
		}{
			{"not json", http.StatusBadRequest},
			{browserSubscription(t, "http://push.example.net/plain"), http.StatusUnprocessableEntity},
			{browserSubscription(t, "/relative"), http.StatusUnprocessableEntity},
			{`{"endpoint":"https://push.example.net/x","keys":{"p256dh":"AAAA","auth":"AAAAAAAAAAAAAAAAAAAAAA"}}`, http.StatusUnprocessableEntity},
		} {
			if resp, out := postSubscription(l.Member, tc.body, csrf); resp.StatusCode != tc.code {
				t.Fatalf("%.40s: status %d, want %d: %s", tc.body, resp.StatusCode, tc.code, out)
			}
		}
	})
	t.Run("ErrCSRF", func(t *testing.T) {
		if resp, _ := postSubscription(l.Member, browserSubscription(t, "https://push.example.net/send/nocsrf"), ""); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("no token: status %d", resp.StatusCode)
		}
		if resp, _ := postSubscription(l.Member, browserSubscription(t, "https://push.example.net/send/forged"), "forged"); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("forged token: status %d", resp.StatusCode)
		}
		subs, _ := l.DB.PushSubscriptionsOf(t.Context(), dev.DemoMember.Subject)
		if len(subs) != 1 {
			t.Fatalf("%d devices after refused posts", len(subs))
		}
	})

	subs, err := l.DB.PushSubscriptionsOf(t.Context(), dev.DemoMember.Subject)
	if err != nil || len(subs) != 1 {
		t.Fatalf("%d devices, %v", len(subs), err)
	}
	remove := "/settings/push/" + itoa(subs[0].ID) + "/remove"

	t.Run("ErrNotOwner", func(t *testing.T) {
		admin := l.NewBrowser()
		admin.SignIn("admin")
		if resp, _ := admin.PostForm(remove, url.Values{}); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("another person's removal: status %d", resp.StatusCode)
		}
		if resp, _ := l.Member.PostForm("/settings/push/x/remove", url.Values{}); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("bad id: status %d", resp.StatusCode)
		}
		if _, err := l.DB.PushSubscription(t.Context(), subs[0].ID); err != nil {
			t.Fatalf("the device is gone: %v", err)
		}
	})
	t.Run("ErrRemoveCSRF", func(t *testing.T) {
		if resp, _ := l.Member.PostForm(remove, url.Values{"csrf_token": {"forged"}}); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("Remove", func(t *testing.T) {
		if resp, _ := l.Member.PostForm(remove, url.Values{}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("status %d", resp.StatusCode)
		}
		_, body := l.Member.Get("/settings")
		if strings.Contains(body, `data-testid="push-device"`) || !strings.Contains(body, "Device removed") {
			t.Fatalf("after removal:\n%s", body)
		}
		if resp, _ := l.Member.PostForm(remove, url.Values{}); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("second removal: status %d", resp.StatusCode)
		}
	})
}

// The service worker is served from the root, so its scope is the whole
// app, as a script the CSP allows as a worker; the manifest is linked
// from every page.
func TestServiceWorkerAndManifest(t *testing.T) {
	l := newLoop(t)
	anon := l.NewBrowser()
	resp, body := anon.Get("/sw.js")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") ||
		!strings.Contains(body, "addEventListener('push'") || !strings.Contains(body, "notificationclick") {
		t.Fatalf("sw.js: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "worker-src 'self'") {
		t.Fatalf("CSP %q", csp)
	}
	resp, body = anon.Get("/manifest.webmanifest")
	var m struct {
		StartURL string `json:"start_url"`
		Display  string `json:"display"`
		Icons    []struct{ Src, Sizes string }
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/manifest+json" || json.Unmarshal([]byte(body), &m) != nil ||
		m.StartURL != "/" || m.Display != "standalone" || len(m.Icons) == 0 {
		t.Fatalf("manifest: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	for _, ic := range m.Icons {
		if r, _ := anon.Get(ic.Src); r.StatusCode != http.StatusOK {
			t.Fatalf("icon %s: %d", ic.Src, r.StatusCode)
		}
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "manifest-src 'self'") {
		t.Fatalf("CSP %q", csp)
	}
	_, page := l.Member.Get("/")
	if !strings.Contains(page, `<link rel="manifest" href="/manifest.webmanifest">`) {
		t.Fatal("the layout does not link the manifest")
	}
}

func TestDeviceName(t *testing.T) {
	for ua, want := range map[string]string{
		firefoxAndroid: "Firefox on Android",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1": "Safari on iPhone",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0":           "Edge on Windows",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36":                   "Chrome on macOS",
		"": "Browser",
	} {
		if got := handlers.DeviceName(ua); got != want {
			t.Errorf("%q: %q, want %q", ua, got, want)
		}
	}
}
