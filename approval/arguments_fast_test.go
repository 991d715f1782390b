package approval

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// ExactNumber's shortcut for short integers agrees with the rule at its
// edges and on random integers of every length up to 19 digits.
func TestExactNumberShortcut(t *testing.T) {
	cases := []string{"0", "-0", "7", "-7", "123456789012345", "-999999999999999", "999999999999999",
		"9999999999999999", "9007199254740992", "9007199254740993", "-9007199254740993", "1000000000000001",
		"12345678901234567890"}
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 19; n++ {
		for i := 0; i < 200; i++ {
			var b strings.Builder
			if i%2 == 1 {
				b.WriteByte('-')
			}
			b.WriteByte(byte('1' + r.IntN(9)))
			for j := 1; j < n; j++ {
				b.WriteByte(byte('0' + r.IntN(10)))
			}
			cases = append(cases, b.String())
		}
	}
	for _, s := range cases {
		if got, want := ExactNumber(s), exactRational(s); got != want {
			t.Errorf("ExactNumber(%s) = %v, the rule says %v", s, got, want)
		}
	}
	if ExactNumber("9007199254740993") {
		t.Error("2^53+1 has no double of its own")
	}
}

// ParseArguments digests a text as Digest does, whether or not it parses
// (it skips the shape check for a text it parsed).
func TestParseArgumentsDigestIsDigest(t *testing.T) {
	for _, raw := range []string{`{"n":1}`, `{ "b": [1, 2.50, {"x": "y"}], "a": null }`, `{"n":9007199254740993}`,
		`{"a":1,"a":2}`, `{ "a": 1, "a": 2 }`, `[1]`, `[ 1, 2 ]`, `"a string"`, ` 42 `, `{"a":1} {}`, ``, `   `, `{"s":"\ud800"}`, `{"deep": ` + strings.Repeat("[ ", 40) + strings.Repeat("] ", 40) + `}`,
		`{"e":1e400}`, `{"x":1.0}`, `not json`} {
		if got, want := ParseArguments(raw).Digest, Digest(raw); got != want {
			t.Errorf("%q: ParseArguments digests %s, Digest %s", raw, got, want)
		}
	}
}
