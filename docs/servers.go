package docs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// servedDocs caches the document per base URL (one in practice).
var servedDocs sync.Map

// OpenAPIJSONFor is the document as served by a deployment reached at
// baseURL: its servers list names that one address (the committed
// document's servers name the dev server). An empty baseURL leaves the
// document as committed.
func OpenAPIJSONFor(baseURL string) ([]byte, error) {
	doc, err := OpenAPIJSON()
	if err != nil || baseURL == "" {
		return doc, err
	}
	baseURL = strings.TrimRight(baseURL, "/")
	if b, ok := servedDocs.Load(baseURL); ok {
		return b.([]byte), nil
	}
	// The servers member is replaced in the text, so the rest of the
	// document keeps its order.
	servers, _ := json.Marshal([]map[string]string{{"url": baseURL, "description": "this deployment"}})
	start := bytes.Index(doc, []byte("\n  \"servers\": "))
	if start < 0 {
		return nil, fmt.Errorf("docs: the document has no servers member")
	}
	start += len("\n  \"servers\": ")
	end := bytes.Index(doc[start:], []byte("\n  ],"))
	if end < 0 {
		return nil, fmt.Errorf("docs: the servers member does not end where expected")
	}
	end += start + len("\n  ]")
	out := append(append(append([]byte{}, doc[:start]...), servers...), doc[end:]...)
	if !json.Valid(out) {
		return nil, fmt.Errorf("docs: replacing servers broke the document")
	}
	servedDocs.Store(baseURL, out)
	return out, nil
}
