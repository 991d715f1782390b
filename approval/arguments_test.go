package approval

import (
	"strings"
	"testing"
)

func TestParseArguments(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 33) + "1" + strings.Repeat("}", 33)
	okDeep := strings.Repeat(`{"a":`, 32) + "1" + strings.Repeat("}", 32)
	cases := []struct {
		name    string
		raw     string
		parsed  bool
		problem string
		keys    []string
	}{
		{"OK", `{"to":"a@b.c","n":1}`, true, "", []string{"to", "n"}},
		{"OKOrderKept", `{"z":1,"a":2,"m":3}`, true, "", []string{"z", "a", "m"}},
		{"OKEmpty", `{}`, true, "", nil},
		{"OKWhitespace", " \n{\"a\": [1, 2]}\n ", true, "", []string{"a"}},
		{"OKDepth32", okDeep, true, "", []string{"a"}},
		{"ErrMalformed", `{"a":`, false, "not valid JSON", nil},
		{"ErrArray", `[1,2]`, false, "not a JSON object", nil},
		{"ErrScalar", `"hello"`, false, "not a JSON object", nil},
		{"ErrNumber", `42`, false, "not a JSON object", nil},
		{"ErrNaN", `{"a":NaN}`, false, "not valid JSON", nil},
		{"ErrInfinity", `{"a":Infinity}`, false, "not valid JSON", nil},
		{"ErrDuplicateKey", `{"a":1,"a":2}`, false, "has a duplicate key", nil},
		{"ErrNestedDuplicateKey", `{"a":{"b":1,"b":2}}`, false, "has a duplicate key", nil},
		{"ErrTooDeep", deep, false, "nested deeper than 32 levels", nil},
		{"ErrTooLarge", `{"a":"` + strings.Repeat("x", MaxArgumentsSize) + `"}`, false, "larger than 1 MiB", nil},
		{"ErrTwoObjects", `{}{}`, false, "not a single JSON value", nil},
		{"ErrTrailing", `{"a":1} 2`, false, "not a single JSON value", nil},
		{"ErrTrailingComma", `{"a":1,}`, false, "not valid JSON", nil},
		{"ErrEmpty", ``, false, "empty", nil},
		{"ErrInvalidUTF8", "{\"a\":\"\xff\"}", false, "not valid JSON", nil},
		{"ErrLoneSurrogate", `{"a":"\ud800"}`, false, "not valid JSON", nil},
		{"ErrImpreciseInt", `{"amount":9007199254740993}`, false, "has a number too large or too precise to verify", nil},
		{"ErrHugeExponent", `{"a":1e400}`, false, "has a number too large or too precise to verify", nil},
		{"OKDecimal", `{"amount":0.1,"big":9007199254740992,"e":1.5e3}`, true, "", []string{"amount", "big", "e"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := ParseArguments(c.raw)
			if a.Parsed != c.parsed || a.Problem != c.problem {
				t.Fatalf("parsed=%v problem=%q, want %v %q", a.Parsed, a.Problem, c.parsed, c.problem)
			}
			if a.Size != len(c.raw) || !strings.HasPrefix(a.Digest, "sha256:") || len(a.Digest) != 71 {
				t.Fatalf("size %d digest %q", a.Size, a.Digest)
			}
			var keys []string
			for _, m := range a.Members {
				keys = append(keys, m.Key)
			}
			if strings.Join(keys, ",") != strings.Join(c.keys, ",") {
				t.Fatalf("keys %v, want %v", keys, c.keys)
			}
		})
	}
}

func TestDigest(t *testing.T) {
	// Key order and whitespace don't matter, whatever the numbers.
	same := [][]string{
		{`{"b":2,"a":1}`, `{ "a" : 1 , "b" : 2 }`, "{\"a\":1,\n\"b\":2}"},
		{`{"n":12345678901234567891,"m":[1e400,-0]}`, `{ "m" : [ 1e400 , -0 ] , "n" : 12345678901234567891 }`},
		{`{"a":"\u00e9\/","\u0062":1}`, `{"b":1,"a":"é/"}`}, // strings compared as RFC 8785 writes them
		{`{"\ud83d\ude00":1,"\uffff":2}`, `{"\uffff":2,"😀":1}`},
	}
	for _, group := range same {
		for _, s := range group[1:] {
			if Digest(s) != Digest(group[0]) {
				t.Errorf("digest of %s differs from %s", s, group[0])
			}
		}
	}
	different := [][2]string{
		{`{"amount":100}`, `{"amount":1000}`},
		{`{"to":"a@example.com"}`, `{"to":"b@example.com"}`},
		{`{"a":"\u00e9"}`, `{"a":"e\u0301"}`}, // no Unicode normalisation
		{`{"a":1}`, `{"a":"1"}`},
		{`not json`, `not json `}, // unparsed text: byte for byte
		// Numbers are kept as written: RFC 8785's doubles would merge each pair.
		{`{"n":9007199254740993}`, `{"n":9007199254740992}`},
		{`{"n":12345678901234567891}`, `{"n":12345678901234567000}`},
		{`{"n":12345678901234567891}`, `{"n":12345678901234567892}`},
		{`{"n":1e400}`, `{"n":1e401}`},
		{`{"n":1e400}`, `{"n":1E400}`},
		{`{"n":-0}`, `{"n":0}`},
		{`{"n":1.0}`, `{"n":1}`},
		{`{"n":[2.50]}`, `{"n":[2.5]}`},
	}
	for _, d := range different {
		if Digest(d[0]) == Digest(d[1]) {
			t.Errorf("%s and %s share a digest", d[0], d[1])
		}
	}
	if Digest(`{"a":1}`) != "sha256:015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862" {
		t.Fatalf("digest of {\"a\":1} is %s", Digest(`{"a":1}`))
	}
}

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		`{ "b" : [ 1 , 2.50 , -0 , 1e400 ] , "a" : { "y" : null , "x" : true } }`: `{"a":{"x":true,"y":null},"b":[1,2.50,-0,1e400]}`,
		`{"n":12345678901234567891}`:      `{"n":12345678901234567891}`,
		`{"s":"\u0041\n\u2028<&>\u001f"}`: "{\"s\":\"A\\n\u2028<&>\\u001f\"}",
		// UTF-16 order: U+FFFF sorts after U+1F600 (a surrogate pair, 0xD83D…).
		`{"\uffff":1,"😀":2,"a":3}`: `{"a":3,"😀":2,"` + "\uffff" + `":1}`,
		`[]`:                       `[]`,
	} {
		got, err := Canonical([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("Canonical(%s) = %s %v, want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{`{"a":1,"a":2}`, `{"a":1} {}`, `{"a":01}`, `{"a":NaN}`, `{"a":1,}`, `{"a":"\ud800"}`, `{`, ``, "{\"a\":\"\xff\"}"} {
		if got, err := Canonical([]byte(bad)); err == nil {
			t.Errorf("Canonical(%q) = %s, want an error", bad, got)
		}
	}
}
