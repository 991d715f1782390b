package approval

import (
	"reflect"
	"testing"
)

func TestDestinationHosts(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"MailAddress", "finance@acme.example", []string{"acme.example"}},
		{"MailWithName", "Finance <finance@pаypal.com>", []string{"pаypal.com"}},
		{"URL", "https://pаypal.com:8443/login?next=x", []string{"pаypal.com"}},
		{"BareHost", "files.example.com", []string{"files.example.com"}},
		{"IdeographicDot", "例え\u3002jp", []string{"例え\u3002jp"}},
		{"List", "a@pаypal.com, b@acme.example; c@acme.example", []string{"pаypal.com", "acme.example"}},
		{"LookAlikeFirst", "billing@pаypal.com x@acme.example", []string{"pаypal.com", "acme.example"}},
		{"JSONArray", `["billing@pаypal.com","https://files.example/x"]`, []string{"pаypal.com", "files.example"}},
		{"ZeroWidthInHost", "x@pay\u200bpal.com", []string{"pay\u200bpal.com"}},
		{"Path", "/home/user/report", nil},
		{"Word", "general", nil},
		{"Sentence", "see you at noon.", nil},
		{"OtherScheme", "ftp://host.example/x", nil},
		{"Empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DestinationHosts(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("DestinationHosts(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCheckHost(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want HostCheck
	}{
		{"ASCII", "paypal.com", HostCheck{Host: "paypal.com", ASCII: "paypal.com"}},
		{"CyrillicA", "pаypal.com", HostCheck{Host: "pаypal.com", ASCII: "xn--pypal-4ve.com", LookAlike: true, Scripts: []string{"Cyrillic", "Latin"}}},
		{"AllCyrillic", "ааа.com", HostCheck{Host: "ааа.com", ASCII: "xn--80aaa.com", LookAlike: true}},
		{"LatinWithDiacritic", "münchen.de", HostCheck{Host: "münchen.de", ASCII: "xn--mnchen-3ya.de", LookAlike: true}},
		{"UpperCase", "Bücher.example", HostCheck{Host: "Bücher.example", ASCII: "xn--bcher-kva.example", LookAlike: true}},
		{"Greek", "gοogle.com", HostCheck{Host: "gοogle.com", ASCII: "xn--gogle-rce.com", LookAlike: true, Scripts: []string{"Greek", "Latin"}}},
		{"ZeroWidth", "pay\u200bpal.com", HostCheck{Host: "pay\u200bpal.com", ASCII: "xn--paypal-df0c.com", LookAlike: true}},
		{"Japanese", "ドメイン名例.jp", HostCheck{Host: "ドメイン名例.jp", ASCII: "xn--eckwd4c7cu47r2wf.jp", LookAlike: true, Scripts: []string{"Han", "Katakana"}}},
		{"Arabic", "ليهمابتكلموشعربي؟", HostCheck{Host: "ليهمابتكلموشعربي؟", ASCII: "xn--egbpdaj6bu4bxfgehfvwxn", LookAlike: true}},
		{"Empty", "", HostCheck{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CheckHost(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("CheckHost(%q)\n got %+v\nwant %+v", tt.in, got, tt.want)
			}
		})
	}
}
