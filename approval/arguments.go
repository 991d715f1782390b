package approval

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/big"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Limits on the arguments a model may send.
const (
	MaxArgumentsSize  = 1 << 20 // bytes of JSON text
	MaxArgumentsDepth = 32      // nesting of objects and arrays
)

// Member is one top-level key of the arguments, with its raw JSON value.
type Member struct {
	Key   string
	Value jsontext.Value
}

// Arguments is the model's argument text as Countersign understands it.
// When the text is not a single JSON object within the limits, Parsed is
// false, Problem says why, and the call can only be decided by a person.
type Arguments struct {
	Raw     string
	Size    int    // bytes
	Digest  string // "sha256:" + hex; see Digest
	Parsed  bool
	Problem string
	Members []Member // top-level keys in the order sent (Parsed only)
}

// ParseArguments reads the model's JSON text. It never fails: problems make
// an unparsed result, which fails closed downstream.
func ParseArguments(raw string) Arguments {
	a := Arguments{Raw: raw, Size: len(raw)}
	a.Members, a.Problem = parseObject(raw)
	a.Parsed = a.Problem == ""
	if !a.Parsed {
		a.Members = nil
	}
	// A text parseObject accepted has the shape digest checks for (exact
	// numbers are a stricter rule than its), so it is not walked again.
	a.Digest = digestShaped(raw, a.Parsed)
	return a
}

// Digest is the identity of an argument text that an approval binds to:
// "sha256:" and the hex SHA-256 of its Canonical form — RFC 8785 with every
// number kept as written. A text that is not one JSON object within the
// limits (size, depth, no duplicate names) is digested as it was sent, byte
// for byte. So two texts with different meanings never share a digest, and
// the same call in any key order or spacing always has the same one.
func Digest(raw string) string {
	return digest(raw)
}

// digest is Digest. Only a valid arguments object is canonicalised (see
// validate); numbers too large or too precise for a double are no reason to
// digest the text as sent, since Canonical keeps them as written — though
// ParseArguments still marks such a text unparsed for conditions.
func digest(raw string) string { return digestShaped(raw, false) }

// digestShaped is digest for a text known to be a valid arguments object
// when shaped is set.
func digestShaped(raw string, shaped bool) string {
	payload := []byte(raw)
	if shaped || len(raw) <= MaxArgumentsSize && strings.TrimSpace(raw) != "" && validateShape(raw, false) == "" {
		if c, err := Canonical(payload); err == nil {
			payload = c
		}
	}
	sum := sha256.Sum256(payload)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// parseObject validates raw as one JSON object within the limits and
// returns its top-level members, or a problem in plain words.
func parseObject(raw string) ([]Member, string) {
	switch {
	case len(raw) > MaxArgumentsSize:
		return nil, "larger than 1 MiB"
	case strings.TrimSpace(raw) == "":
		return nil, "empty"
	}
	if problem := validate(raw); problem != "" {
		return nil, problem
	}
	dec := jsontext.NewDecoder(strings.NewReader(raw))
	if _, err := dec.ReadToken(); err != nil { // '{'
		return nil, "not valid JSON"
	}
	var members []Member
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, "not valid JSON"
		}
		key := name.String() // read before the next call voids the token
		val, err := dec.ReadValue()
		if err != nil {
			return nil, "not valid JSON"
		}
		members = append(members, Member{Key: key, Value: val.Clone()})
	}
	return members, ""
}

// validate walks every token: one object, no duplicate names, valid UTF-8,
// depth within the limit, numbers RFC 8785 keeps exactly, nothing after the
// object.
func validate(raw string) string { return validateShape(raw, true) }

// validateShape is validate; numbers are checked only when exact is set.
func validateShape(raw string, exact bool) string {
	dec := jsontext.NewDecoder(strings.NewReader(raw))
	first, done := true, false
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF {
			return ""
		}
		if done {
			return "not a single JSON value"
		}
		if err != nil {
			if strings.Contains(err.Error(), "duplicate") {
				return "has a duplicate key"
			}
			return "not valid JSON"
		}
		if first && tok.Kind() != '{' {
			return "not a JSON object"
		}
		first = false
		if dec.StackDepth() > MaxArgumentsDepth {
			return "nested deeper than 32 levels"
		}
		if exact && tok.Kind() == '0' && !ExactNumber(tok.String()) {
			return "has a number too large or too precise to verify"
		}
		done = dec.StackDepth() == 0
	}
}

// ExactNumber reports whether the JSON number s means exactly the double
// that RFC 8785 will write for it, so that canonicalisation cannot make two
// different numbers look the same (9007199254740993 would become ...992).
// Argument digests and playbook fingerprints both rely on it.
func ExactNumber(s string) bool {
	if len(s) > 64 {
		return false
	}
	// An integer of at most 15 digits is below 2^53, so a double holds it
	// exactly, and its shortest form is the same number.
	if digits := strings.TrimPrefix(s, "-"); len(digits) > 0 && len(digits) <= 15 && strings.Trim(digits, "0123456789") == "" {
		return true
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || exp > 400 || exp < -400 {
			return false
		}
	}
	return exactRational(s)
}

// exactRational is ExactNumber's rule itself: the number as written equals,
// as a rational, the shortest form of the double it parses to.
func exactRational(s string) bool {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return false
	}
	want, ok1 := new(big.Rat).SetString(s)
	got, ok2 := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	return ok1 && ok2 && want.Cmp(got) == 0
}
