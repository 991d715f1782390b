package web_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/notify"
	"github.com/countersign/countersign/web"
)

func TestConfigVAPID(t *testing.T) {
	load := func(pub, priv string) (web.Config, error) {
		return web.LoadConfig(func(k string) string {
			switch k {
			case "COUNTERSIGN_VAPID_PUBLIC_KEY":
				return pub
			case "COUNTERSIGN_VAPID_PRIVATE_KEY":
				return priv
			}
			return ""
		})
	}
	a, _ := notify.GenerateVAPIDKeys()
	b, _ := notify.GenerateVAPIDKeys()
	t.Run("OK", func(t *testing.T) {
		c, err := load(a.PublicKey, a.PrivateKey)
		if err != nil || c.VAPID == nil || *c.VAPID != a {
			t.Fatalf("%+v %v", c.VAPID, err)
		}
		c, err = load("", "")
		if err != nil || c.VAPID != nil {
			t.Fatalf("neither: %+v %v", c.VAPID, err)
		}
	})
	t.Run("Err", func(t *testing.T) {
		for _, tc := range []struct{ pub, priv, names string }{
			{a.PublicKey, "", "COUNTERSIGN_VAPID_PRIVATE_KEY"},
			{"", a.PrivateKey, "COUNTERSIGN_VAPID_PUBLIC_KEY"},
			{"nope", a.PrivateKey, "COUNTERSIGN_VAPID_PUBLIC_KEY"},
			{a.PublicKey, "short", "COUNTERSIGN_VAPID_PRIVATE_KEY"},
			{a.PublicKey, b.PrivateKey, "does not belong"},
		} {
			_, err := load(tc.pub, tc.priv)
			if err == nil || !strings.Contains(err.Error(), tc.names) {
				t.Fatalf("%.8q %.8q: want an error naming %s, got %v", tc.pub, tc.priv, tc.names, err)
			}
			if tc.priv != "" && strings.Contains(err.Error(), tc.priv) {
				t.Fatalf("the error repeats the private key: %v", err)
			}
		}
	})
}
