package handlers

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/countersign/countersign/approval"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/labstack/echo/v4"
)

// decodeJSON reads exactly one JSON object into v. Field names must match
// exactly: encoding/json would fold "User" into "user" and keep the last of
// two "user"s, so a body could mean one thing here and another to a proxy
// or a log reader. Unknown fields, duplicate or case-variant names, NUL
// characters, null where the contract does not declare it (nullable) and
// trailing data are refused (400, naming the field).
// mayHoldNUL lists members (as JSON Pointers, e.g. "/arguments") whose text
// is passed on as sent and judged later, so a NUL there is not refused here.
func decodeJSON(c echo.Context, v any, mayHoldNUL ...string) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	// For an object, the decoder refuses what scanBody refuses except a NUL
	// escape and a null, so an object without either is read once; scanBody
	// runs on every other body, and names the problem when the decoder
	// finds one.
	trimmed := bytes.TrimSpace(body)
	scanned := len(trimmed) == 0 || trimmed[0] != '{' || bytes.Contains(body, []byte(`\u0000`)) || bytes.Contains(body, []byte("null"))
	if scanned {
		if err := scanBody(body, mayHoldNUL); err != nil {
			return err
		}
	}
	if err := json.Unmarshal(body, v, json.RejectUnknownMembers(true)); err != nil {
		if !scanned {
			if err := scanBody(body, mayHoldNUL); err != nil {
				return err
			}
		}
		var se *json.SemanticError
		if !errors.As(err, &se) {
			return invalid("The request body is not valid JSON.")
		}
		field := fieldName(se.JSONPointer)
		if errors.Is(err, json.ErrUnknownName) {
			return invalid("Unknown field %s (field names are exact and case-sensitive).", field)
		}
		return invalid("The field %s has the wrong type%s.", field, expected(se.GoType))
	}
	return nil
}

// scanBody checks the body token by token before it is decoded: one JSON
// object, valid UTF-8, no name twice in an object, no NUL in any name or
// string (Postgres cannot store one, and it would cut the text short in C
// tools that read the log).
func scanBody(body []byte, mayHoldNUL []string) error {
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	switch dec.PeekKind() {
	case '{':
	case 0:
		if len(bytes.TrimSpace(body)) == 0 {
			return invalid("The request body is empty; a JSON object is required.")
		}
		return invalid("The request body is not valid JSON.")
	default:
		return invalid("The request body must be a JSON object.")
	}
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return syntaxProblem(err)
		}
		if tok.Kind() == '"' && strings.ContainsRune(tok.String(), 0) {
			if nameToken(dec) {
				return invalid("A field name in the request body holds a NUL character (U+0000), which is not accepted.")
			}
			if ptr := string(dec.StackPointer()); !slices.Contains(mayHoldNUL, ptr) {
				return invalid("The field %s holds a NUL character (U+0000), which is not accepted.", fieldName(dec.StackPointer()))
			}
		}
		if tok.Kind() == 'n' && !nullable(string(dec.StackPointer())) {
			return invalid("The field %s must not be null; leave it out instead.", fieldName(dec.StackPointer()))
		}
		if dec.StackDepth() == 0 {
			if _, err := dec.ReadToken(); err != io.EOF {
				return invalid("The request body must hold one JSON object and nothing after it.")
			}
			return nil
		}
	}
}

// nullable reports whether the member at ptr may be null: only where the
// contract (docs/openapi.yaml) says so — a sync's tools and a playbook
// step's tools ("null or absent is an empty list", as Go clients send an
// empty list) and anything inside a playbook's free-form settings.
// Everywhere else null is refused rather than read as "absent", so a
// client and the server never disagree about what a null meant.
func nullable(ptr string) bool {
	if ptr == "/tools" || strings.HasPrefix(ptr, "/definition/settings/") {
		return true
	}
	step, ok := strings.CutPrefix(ptr, "/definition/steps/")
	n, rest, _ := strings.Cut(step, "/")
	_, err := strconv.Atoi(n)
	return ok && err == nil && rest == "tools"
}

// nameToken reports whether the token just read was an object member's
// name rather than a value: inside an object, names are the odd tokens.
func nameToken(dec *jsontext.Decoder) bool {
	kind, n := dec.StackIndex(dec.StackDepth())
	return kind == '{' && n%2 == 1
}

func syntaxProblem(err error) error {
	var se *jsontext.SyntacticError
	switch {
	case errors.Is(err, jsontext.ErrDuplicateName) && errors.As(err, &se):
		return invalid("The field %s is sent twice.", fieldName(se.JSONPointer))
	case strings.Contains(err.Error(), "invalid UTF-8"):
		return invalid("The request body is not valid UTF-8.")
	}
	return invalid("The request body is not valid JSON.")
}

// fieldName writes a JSON Pointer the way the API documents fields:
// "/tools/0/name" is tools[0].name.
func fieldName(p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if _, err := strconv.Atoi(tok); err == nil && tok != "" && tok[0] != '-' {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	if b.Len() == 0 {
		return "body"
	}
	return b.String()
}

// expected names the JSON a Go type is read from.
func expected(t reflect.Type) string {
	if t == nil {
		return ""
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return " (a string is expected)"
	case reflect.Bool:
		return " (true or false is expected)"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return " (an object is expected)" // raw JSON such as settings
		}
		return " (an array is expected)"
	case reflect.Struct, reflect.Map:
		return " (an object is expected)"
	case reflect.Int, reflect.Int64, reflect.Float64, reflect.Int32, reflect.Float32:
		return " (a number is expected)"
	}
	return ""
}

func invalid(format string, args ...any) error {
	return approval.Errorf(approval.KindInvalid, approval.CodeInvalidRequest, format, args...)
}

// required checks identifiers: present, at most approval.MaxIDChars
// characters, no control characters. The 400 names the first bad field.
func required(fields ...[2]string) error {
	list := make([]approval.Field, 0, len(fields))
	for _, f := range fields {
		list = append(list, approval.Field{Name: f[0], Value: f[1], Rule: approval.RuleID, Required: true})
	}
	return approval.CheckFields(list...)
}

// readBody reads the whole request body; the body limit's 413 passes
// through, any other failure is a 400.
func readBody(c echo.Context) ([]byte, error) {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return nil, he // 413 from the body limit
		}
		return nil, invalid("The request body could not be read.")
	}
	return body, nil
}
