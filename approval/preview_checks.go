package approval

import (
	"encoding/json"
	"net/mail"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// destinationKeys are argument names that usually say where data goes, or
// what a call writes.
var destinationKeys = []string{"to", "recipient", "recipients", "url", "destination", "channel", "host", "email", "cc", "bcc", "path",
	"urls", "hosts", "paths", "file_path", "notebook_path", "endpoint", "webhook_url"}

// mailKeys are the destination keys whose text is a list of mail addresses.
var mailKeys = []string{"to", "recipient", "recipients", "email", "cc", "bcc"}

// Limits on what the preview keeps of destinations.
const (
	PreviewDestinationItems = 200 // items kept across all destinations of a call
	PreviewDestinationChars = 512 // characters kept of one item
)

// Destination is one argument that says where a call sends data or what it
// writes, with every item it names (each recipient, each host, each path),
// read from the whole value, shown or folded.
type Destination struct {
	Key   string   `json:"key"`
	Items []string `json:"items"`
	// More counts the items beyond PreviewDestinationItems, not kept.
	More int `json:"more,omitempty"`
}

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
	kept := 0
	for i, m := range members {
		if !IsDestinationKey(m.Key) {
			continue
		}
		if items := destinationItems(m.Key, m.Value); len(items) > 0 {
			key, _, _ := shorten(m.Key, PreviewKeyChars)
			d := Destination{Key: key, Items: items[:min(len(items), PreviewDestinationItems-kept)]}
			d.More, kept = len(items)-len(d.Items), kept+len(d.Items)
			p.Destinations = append(p.Destinations, d)
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

// destinationItems lists what one destination-like value names, in order
// and without repeats: each item of a list, each address of a mail
// address list, the host of a URL, or else the text itself.
func destinationItems(key string, v jsontext.Value) []string {
	var texts []string
	if v.Kind() == '[' {
		var elems []json.RawMessage
		if json.Unmarshal(v, &elems) != nil {
			return nil
		}
		for _, e := range elems {
			texts = append(texts, valueText(jsontext.Value(e)))
		}
	} else {
		texts = []string{valueText(v)}
	}
	var out []string
	seen := map[string]bool{}
	for _, t := range texts {
		for _, it := range itemsOfText(key, t) {
			if it = keepItem(it); it != "" && !seen[it] {
				seen[it] = true
				out = append(out, it)
			}
		}
	}
	return out
}

// itemsOfText splits one text into what it names: a URL by its host, a
// mail key's text into its addresses (when it reads as an address list).
func itemsOfText(key, t string) []string {
	t = strings.TrimSpace(t)
	if h, _, ok := splitURL(t); ok {
		if u := tokenHost(h); u != "" {
			return []string{u}
		}
	}
	for _, k := range mailKeys {
		if !strings.EqualFold(key, k) {
			continue
		}
		list, err := mail.ParseAddressList(t)
		if err != nil {
			// Many tools take "a@x; b@y" as well.
			list, err = mail.ParseAddressList(strings.ReplaceAll(t, ";", ","))
		}
		if err == nil && len(list) > 1 {
			out := make([]string, len(list))
			for i, a := range list {
				out[i] = a.Address
				if a.Name != "" {
					// The name a mail client shows, and the address it goes to.
					out[i] = strconvQuote(a.Name) + " <" + a.Address + ">"
				}
			}
			return out
		}
	}
	return []string{t}
}

// strconvQuote puts a display name in double quotes, so that a name that
// looks like an address is read as a name.
func strconvQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// keepItem makes one item safe to store and bounded: a long item keeps its
// beginning and its end around an ellipsis.
func keepItem(s string) string {
	head, tail, _, folded := fold(printable(s), PreviewDestinationChars)
	if folded {
		return head + "…" + tail
	}
	return head
}
