package approval

import "strings"

// destinationKeys are argument names that usually say where data goes.
var destinationKeys = []string{"to", "recipient", "recipients", "url", "destination", "channel", "host", "email", "cc", "bcc", "path"}

// DestinationKeys lists, in order of preference, the argument names that
// usually say where a call sends data.
func DestinationKeys() []string { return append([]string(nil), destinationKeys...) }

// IsDestinationKey reports whether an argument named key usually says where
// a call sends data.
func IsDestinationKey(key string) bool {
	for _, k := range destinationKeys {
		if strings.EqualFold(key, k) {
			return true
		}
	}
	return false
}

// LookAlikeHostsIn lists the host names with look-alike characters in the
// text of a destination-like value, without repeats.
func LookAlikeHostsIn(value string) []HostCheck {
	var out []HostCheck
	for _, h := range DestinationHosts(value) {
		if hc := CheckHost(h); hc.LookAlike {
			out = append(out, hc)
		}
	}
	return out
}

// checkWhole fills in what the preview must say about the arguments as a
// whole, not only about the lines it keeps: whether keys beyond the shown
// lines hold hidden characters, every look-alike host in any
// destination-like value read in full, and the destination-like keys that
// are not shown. A shortened preview must never hide a warning.
func checkWhole(p *ArgumentPreview, members []Member) {
	seen := map[string]bool{}
	for i, m := range members {
		if !IsDestinationKey(m.Key) {
			continue
		}
		for _, hc := range LookAlikeHostsIn(valueText(m.Value)) {
			if !seen[hc.Host] {
				seen[hc.Host] = true
				p.LookAlike = append(p.LookAlike, hc)
			}
		}
		if i >= PreviewMaxLines {
			key, _, _ := shorten(m.Key, PreviewKeyChars)
			p.MoreDestinations = append(p.MoreDestinations, key)
		}
	}
	for _, m := range members[min(len(members), PreviewMaxLines):] {
		if HasHidden(m.Key, SingleLine) || HasHidden(valueText(m.Value), MultiLine) {
			p.MoreHidden = true
			break
		}
	}
}
