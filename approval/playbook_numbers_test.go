package approval

import (
	"encoding/json"
	"testing"
)

func settingsDef(settings string) Definition {
	return Definition{Name: "Pay", Settings: json.RawMessage(settings), Steps: []Step{{ID: "s", WorkType: WorkType{ID: "w", Version: "1"}}}}
}

// A number RFC 8785 would round is refused, naming its field, so that two
// different settings never share a fingerprint.
func TestDefinitionInexactNumbersRefused(t *testing.T) {
	for _, tc := range []struct{ settings, field string }{
		{`{"pay_to_account":12345678901234567890}`, "settings.pay_to_account"},
		{`{"pay_to_account":12345678901234567999}`, "settings.pay_to_account"},
		{`{"limit":1e400}`, "settings.limit"},
		{`{"a":{"b":[1,2e400]}}`, "settings.a.b.1"},
	} {
		err := settingsDef(tc.settings).Validate()
		e := AsError(err)
		if e == nil || e.Kind != KindInvalid || e.Code != CodeInvalidRequest ||
			e.Message != tc.field+": a number that cannot be represented exactly; send it as a string" {
			t.Errorf("%s: got %v", tc.settings, err)
		}
	}
}

// Distinct exact numbers, and the same digits sent as strings, give
// distinct fingerprints.
func TestDefinitionDistinctNumbersDistinctFingerprints(t *testing.T) {
	seen := map[string]string{}
	for _, s := range []string{`{"n":9007199254740992}`, `{"n":9007199254740994}`, `{"n":1e300}`, `{"n":2e300}`, `{"n":0.1}`,
		`{"n":"12345678901234567890"}`, `{"n":"12345678901234567999"}`} {
		d := settingsDef(s)
		if err := d.Validate(); err != nil {
			t.Fatalf("%s refused: %v", s, err)
		}
		fp, err := d.Fingerprint()
		if err != nil {
			t.Fatal(err)
		}
		if other, ok := seen[fp]; ok {
			t.Fatalf("%s and %s share a fingerprint", s, other)
		}
		seen[fp] = s
	}
}
