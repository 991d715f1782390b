package approval

import (
	"net/url"
	"sort"
	"strings"
	"unicode"
)

// HostCheck is what a reviewer should know about the host name a call
// sends data to.
type HostCheck struct {
	Host string `json:"host"` // the host name as sent
	// ASCII is the host's ASCII form as browsers and mail servers use it
	// (each label with non-ASCII characters in punycode, "xn--…").
	ASCII string `json:"ascii"`
	// LookAlike is set when the host holds anything but ASCII: such a name
	// can imitate another one letter for letter (Cyrillic "а" for "a").
	LookAlike bool `json:"-"`
	// Scripts names the writing systems mixed within one label, when they
	// are; empty otherwise.
	Scripts []string `json:"scripts,omitempty"`
}

// DestinationHosts finds the host names in an argument value that names
// destinations, in order and without repeats: the host of each http(s)
// URL, the domain of each mail address, and each bare word that looks like
// a host name. Values may list several ("a@x.example, b@y.example", or a
// JSON array), so every one is found, not just the first.
func DestinationHosts(value string) []string {
	var out []string
	seen := map[string]bool{}
	for _, tok := range strings.FieldsFunc(value, isHostListSeparator) {
		if h := tokenHost(tok); h != "" && !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

// isHostListSeparator splits a list of addresses or URLs into its items.
func isHostListSeparator(r rune) bool {
	return unicode.IsSpace(r) || strings.ContainsRune(",;\"'<>()[]{}", r)
}

// tokenHost is the host one address or URL names, or "".
func tokenHost(tok string) string {
	if u, err := url.Parse(tok); err == nil && u.Host != "" && (u.Scheme == "http" || u.Scheme == "https") {
		return u.Hostname()
	}
	if strings.Contains(tok, "://") {
		return ""
	}
	if i := strings.LastIndexByte(tok, '@'); i >= 0 {
		tok = tok[i+1:]
	}
	tok = strings.TrimRightFunc(tok, isDot)
	if tok == "" || strings.ContainsAny(tok, "/\\:@") || strings.IndexFunc(tok, isDot) < 0 {
		return ""
	}
	return tok
}

// CheckHost looks for look-alike characters in a host name.
func CheckHost(host string) HostCheck {
	c := HostCheck{Host: host, ASCII: host}
	if isASCII(host) {
		return c
	}
	c.LookAlike = true
	labels := strings.FieldsFunc(host, isDot)
	seen := map[string]bool{}
	for i, l := range labels {
		scripts := labelScripts(l)
		if len(scripts) > 1 {
			for _, s := range scripts {
				if !seen[s] {
					seen[s] = true
					c.Scripts = append(c.Scripts, s)
				}
			}
		}
		if !isASCII(l) {
			labels[i] = "xn--" + punycode(strings.ToLower(l))
		}
	}
	c.ASCII = strings.Join(labels, ".")
	return c
}

// isDot is a label separator: IDNA treats the ideographic and full-width
// full stops as dots too.
func isDot(r rune) bool { return r == '.' || r == '\u3002' || r == '\uFF0E' || r == '\uFF61' }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// labelScripts lists, sorted, the scripts of the letters in one label
// (digits, hyphens and combining marks belong to none).
func labelScripts(label string) []string {
	set := map[string]bool{}
	for _, r := range label {
		if !unicode.IsLetter(r) {
			continue
		}
		for name, table := range unicode.Scripts {
			if name != "Common" && name != "Inherited" && unicode.Is(table, r) {
				set[name] = true
				break
			}
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
