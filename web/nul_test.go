package web

import (
	"net/url"
	"testing"
)

func TestNulIn(t *testing.T) {
	cases := map[string]string{
		"/api/v1/approvals/abc":      "",
		"/admin/audit?user=a&tool=b": "",
		"/x?q=%2500":                 "", // the text "%00", not a NUL
		"/api/v1/approvals/%00":      "address",
		"/playbooks/a%00b/enable":    "address",
		"/admin/audit?user=a%00b":    "query",
		"/?x%00=1":                   "query",
		"/?bad=%zz&user=%00":         "query",
		"/?q=ok%3B&other=x%00":       "query",
	}
	for raw, want := range cases {
		u, err := url.ParseRequestURI(raw)
		if err != nil {
			t.Fatal(raw, err)
		}
		if got := nulIn(u); got != want {
			t.Errorf("%s: %q, want %q", raw, got, want)
		}
	}
}
