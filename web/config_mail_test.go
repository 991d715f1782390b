package web_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/web"
)

func TestConfigMail(t *testing.T) {
	load := func(smtp, from string) (web.Config, error) {
		return web.LoadConfig(func(k string) string {
			switch k {
			case "COUNTERSIGN_SMTP_URL":
				return smtp
			case "COUNTERSIGN_MAIL_FROM":
				return from
			}
			return ""
		})
	}
	t.Run("OK", func(t *testing.T) {
		for _, tc := range []struct {
			url      string
			port     int
			implicit bool
			user     string
		}{
			{"smtp://user:p%40ss@mail.example.com:587", 587, false, "user"},
			{"smtps://user:pass@mail.example.com", 465, true, "user"},
			{"smtp://relay.internal:25", 25, false, ""},
		} {
			c, err := load(tc.url, "Countersign <countersign@example.com>")
			if err != nil || c.SMTP == nil || c.SMTP.Port != tc.port || c.SMTP.Implicit != tc.implicit || c.SMTP.Username != tc.user {
				t.Fatalf("%s: %+v %v", tc.url, c.SMTP, err)
			}
		}
		c, err := load("", "")
		if err != nil || c.SMTP != nil {
			t.Fatalf("no SMTP: %+v %v", c.SMTP, err)
		}
	})
	t.Run("Err", func(t *testing.T) {
		for _, tc := range []struct{ url, from, names string }{
			{"http://user:hunter2@mail.example.com", "a@example.com", "COUNTERSIGN_SMTP_URL"},
			{"smtp://user:hunter2@:25", "a@example.com", "COUNTERSIGN_SMTP_URL"},
			{"smtp://user:hunter2@mail.example.com:99999", "a@example.com", "COUNTERSIGN_SMTP_URL"},
			{"smtp://user:hunter2@mail.example.com:587", "", "COUNTERSIGN_MAIL_FROM"},
			{"smtp://user:hunter2@mail.example.com:587", "not an address", "COUNTERSIGN_MAIL_FROM"},
			{"", "a@example.com", "COUNTERSIGN_SMTP_URL"},
		} {
			_, err := load(tc.url, tc.from)
			if err == nil || !strings.Contains(err.Error(), tc.names) {
				t.Fatalf("%q %q: want an error naming %s, got %v", tc.url, tc.from, tc.names, err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("the error repeats the password: %v", err)
			}
		}
	})
}
