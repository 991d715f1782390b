package approval

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"unicode/utf16"

	"github.com/go-json-experiment/json/jsontext"
)

// Canonical is the form an argument text is digested in: RFC 8785 (JCS) —
// object members sorted by the UTF-16 code units of their names, strings
// in their shortest escaped form, no insignificant whitespace — except
// that every number is kept exactly as written. RFC 8785 writes numbers as
// IEEE-754 doubles, which would give 12345678901234567891 and
// 12345678901234567000 one text; here they stay two, as do 1 and 1.0, 0
// and -0, 1e400 and 1e401. Key order and whitespace never change the
// result, so the same call always has the same digest.
//
// raw must be one JSON value: valid UTF-8, no duplicate names, nothing
// after it.
func Canonical(raw []byte) ([]byte, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	out, err := canonicalValue(dec, nil)
	if err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("approval: canonical: more than one JSON value")
	}
	return out, nil
}

func canonicalValue(dec *jsontext.Decoder, dst []byte) ([]byte, error) {
	switch dec.PeekKind() {
	case '{':
		return canonicalObject(dec, dst)
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		dst = append(dst, '[')
		for first := true; dec.PeekKind() != ']'; first = false {
			if !first {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = canonicalValue(dec, dst); err != nil {
				return nil, err
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		return append(dst, ']'), nil
	case '"':
		v, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		s := v.Clone()
		if err := s.Canonicalize(); err != nil { // a string alone: RFC 8785's string form
			return nil, err
		}
		return append(dst, s...), nil
	case '0', 't', 'f', 'n':
		// Numbers as written: the decoder has checked the grammar; the
		// text is not converted to a double and back.
		v, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		return append(dst, v...), nil
	}
	_, err := dec.ReadToken() // the syntax error, or io.ErrUnexpectedEOF
	if err == nil || err == io.EOF {
		err = errors.New("approval: canonical: not a JSON value")
	}
	return nil, err
}

type canonicalMember struct {
	name  string
	key   []uint16 // the name's UTF-16 code units: RFC 8785 sorts by them
	value []byte
}

func canonicalObject(dec *jsontext.Decoder, dst []byte) ([]byte, error) {
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	var members []canonicalMember
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		name := tok.String()
		value, err := canonicalValue(dec, nil)
		if err != nil {
			return nil, err
		}
		members = append(members, canonicalMember{name, utf16.Encode([]rune(name)), value})
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	slices.SortFunc(members, func(a, b canonicalMember) int { return slices.Compare(a.key, b.key) })
	dst = append(dst, '{')
	for i, m := range members {
		if i > 0 {
			dst = append(dst, ',')
		}
		name, err := jsontext.AppendQuote(nil, m.name)
		if err != nil {
			return nil, err
		}
		v := jsontext.Value(name)
		if err := v.Canonicalize(); err != nil {
			return nil, err
		}
		dst = append(append(append(dst, v...), ':'), m.value...)
	}
	return append(dst, '}'), nil
}
