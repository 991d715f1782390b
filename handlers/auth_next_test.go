package handlers_test

import (
	"testing"

	"github.com/countersign/countersign/handlers"
)

func TestSafeNext(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"OKPath", "/playbooks", "/playbooks"},
		{"OKQueryAndFragment", "/ok?x=1#y", "/ok?x=1#y"},
		{"OKApproval", "/approvals/0b6e?tab=args", "/approvals/0b6e?tab=args"},
		{"OKEscapedUnicode", "/caf%C3%A9", "/caf%C3%A9"},
		{"OKRoot", "/", "/"},
		{"ErrEmpty", "", "/"},
		{"ErrTabDecoded", "/\t/evil.example/x", "/"},
		{"ErrTabEncoded", "/%09/evil.example", "/"},
		{"ErrNewline", "/\n/evil.example", "/"},
		{"ErrCRLFHeader", "/x\r\nSet-Cookie: a=b", "/"},
		{"ErrProtocolRelative", "//evil", "/"},
		{"ErrTripleSlash", "///evil", "/"},
		{"ErrBackslash", "/\\evil", "/"},
		{"ErrBackslashEncoded", "/%5Cevil", "/"},
		{"ErrBackslashOnly", "\\\\evil", "/"},
		{"ErrAbsoluteURL", "https://evil", "/"},
		{"ErrSchemeOnePath", "http:/evil", "/"},
		{"ErrEncodedSlashes", "/%2F%2Fevil", "/"},
		{"ErrEncodedSlashAfterSlash", "/%2Fevil", "/"},
		{"ErrIdeographicSpace", "/\u3000/evil", "/"},
		{"ErrIdeographicSpaceEncoded", "/%E3%80%80/evil", "/"},
		{"ErrNoBreakSpaceEncoded", "/%C2%A0/evil", "/"},
		{"ErrLineSeparator", "/\u2028/evil", "/"},
		{"ErrBidiOverrideEncoded", "/%E2%80%AEevil", "/"},
		{"ErrZeroWidthEncoded", "/%E2%80%8B/evil", "/"},
		{"ErrSpace", "/ /evil", "/"},
		{"ErrLeadingSpace", " /x", "/"},
		{"ErrNUL", "/%00/evil", "/"},
		{"ErrJavascript", "javascript:alert(1)", "/"},
		{"ErrJavascriptPathless", "javascript://%0aalert(1)", "/"},
		{"ErrRelative", "evil.example", "/"},
		{"ErrUserinfo", "//user@evil", "/"},
		{"ErrDotSegments", "/..//evil", "/"},
		{"ErrEncodedDotSegments", "/%2e%2e/%2fevil", "/"},
		{"ErrAuthLoop", "/auth/logout", "/"},
		{"ErrInvalidEscape", "/%zz", "/"},
		{"ErrInvalidUTF8", "/%ff", "/"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := handlers.SafeNext(c.in); got != c.want {
				t.Fatalf("SafeNext(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}
