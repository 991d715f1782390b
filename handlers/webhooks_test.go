package handlers_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/notify"
)

func TestWebhooksPage(t *testing.T) {
	l := newLoop(t)
	type got struct {
		body []byte
		sig  string
	}
	hits := make(chan got, 10)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hits <- got{b, r.Header.Get(notify.SignatureHeader)}
	}))
	t.Cleanup(rc.Close)
	admin := l.NewBrowser()
	admin.SignIn("admin")
	const secret = "s3cret-for-the-receiver-1234"

	t.Run("ErrInvalidURL", func(t *testing.T) {
		resp, body := admin.PostForm("/admin/webhooks", url.Values{"url": {"ftp://hooks.example/x"}, "secret": {secret},
			"events": {"approval.requested"}})
		if resp.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if !strings.Contains(body, `value="ftp://hooks.example/x"`) || !strings.Contains(body, "http:// or https://") {
			t.Fatalf("the form is not re-rendered with the input and the message:\n%s", body)
		}
		if strings.Contains(body, secret) {
			t.Fatal("the secret was sent back")
		}
		resp, _ = admin.PostForm("/admin/webhooks", url.Values{"url": {rc.URL}, "secret": {"short"}, "events": {"approval.requested"}})
		if resp.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("short secret: status %d", resp.StatusCode)
		}
		resp, _ = admin.PostForm("/admin/webhooks", url.Values{"url": {rc.URL}, "secret": {secret}, "events": {"approval.everything"}})
		if resp.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("unknown event: status %d", resp.StatusCode)
		}
	})

	t.Run("OK", func(t *testing.T) {
		resp, _ := admin.PostForm("/admin/webhooks", url.Values{"url": {rc.URL + "/hook/abcdefgh"}, "secret": {secret},
			"events": {"approval.requested", "approval.decided"}})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/admin/webhooks" {
			t.Fatalf("status %d", resp.StatusCode)
		}
		_, body := admin.Get("/admin/webhooks")
		if !strings.Contains(body, "Webhook added") || !strings.Contains(body, "…1234") || strings.Contains(body, secret) {
			t.Fatalf("page after create:\n%s", body)
		}
		if strings.Contains(body, "/hook/abcdefgh") {
			t.Fatal("the URL is shown in full")
		}
	})

	t.Run("SendTestEvent", func(t *testing.T) {
		hooks, err := l.DB.ListWebhooks(context.Background())
		if err != nil || len(hooks) != 1 {
			t.Fatalf("%v %v", hooks, err)
		}
		resp, _ := admin.PostForm("/admin/webhooks/"+itoa(hooks[0].ID)+"/test", url.Values{})
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("status %d", resp.StatusCode)
		}
		var h got
		select {
		case h = <-hits:
		case <-time.After(15 * time.Second):
			t.Fatal("no test event arrived")
		}
		var p notify.Payload
		if err := json.Unmarshal(h.body, &p); err != nil || p.Event != "test" || p.Text == "" {
			t.Fatalf("payload %s", h.body)
		}
		ts, v1, _ := strings.Cut(strings.TrimPrefix(h.sig, "t="), ",v1=")
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(ts + "." + string(h.body)))
		if hex.EncodeToString(m.Sum(nil)) != v1 {
			t.Fatalf("signature %q does not verify", h.sig)
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			_, body := admin.Get("/admin/webhooks")
			if strings.Contains(body, `data-testid="webhook-attempt"`) && strings.Contains(body, ">200<") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the attempt is not shown:\n%s", body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	t.Run("ErrNotAdmin", func(t *testing.T) {
		resp, _ := l.Member.Get("/admin/webhooks")
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("GET: status %d", resp.StatusCode)
		}
		resp, _ = l.Member.PostForm("/admin/webhooks", url.Values{"url": {rc.URL}, "secret": {secret}, "events": {"approval.requested"}})
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("POST: status %d", resp.StatusCode)
		}
		if hooks, _ := l.DB.ListWebhooks(context.Background()); len(hooks) != 1 {
			t.Fatalf("a member added a webhook: %d", len(hooks))
		}
	})

	t.Run("Delete", func(t *testing.T) {
		hooks, _ := l.DB.ListWebhooks(context.Background())
		resp, _ := admin.PostForm("/admin/webhooks/"+itoa(hooks[0].ID)+"/delete", url.Values{})
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if hooks, _ := l.DB.ListWebhooks(context.Background()); len(hooks) != 0 {
			t.Fatal("not removed")
		}
	})
}
