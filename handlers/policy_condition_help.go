package handlers

import (
	"regexp"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/views"
)

// celIdent is a name CEL can write as args.NAME; any other key is written
// args["NAME"].
var celIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// argRef is how a condition names the argument key.
func argRef(key string) string {
	if celIdent.MatchString(key) {
		return "args." + key
	}
	b := []byte(`args[`)
	b = append(b, quoteCEL(key)...)
	return string(append(b, ']'))
}

// quoteCEL writes s as a CEL string literal.
func quoteCEL(s string) string {
	out := []byte{'"'}
	for _, r := range s {
		switch r {
		case '"', '\\':
			out = append(out, '\\', byte(r))
		case '\n':
			out = append(out, '\\', 'n')
		default:
			out = append(out, string(r)...)
		}
	}
	return string(append(out, '"'))
}

// conditionHelp lists the tool's known argument names and a few example
// conditions written with them, each saying what it does.
func conditionHelp(keys []db.ArgumentKey) ([]views.ArgumentName, []views.ConditionExample) {
	names := make([]views.ArgumentName, 0, len(keys))
	var examples []views.ConditionExample
	seen := map[string]bool{}
	for _, k := range keys {
		ref := argRef(k.Name)
		names = append(names, views.ArgumentName{Name: k.Name, Ref: ref, Kind: k.Kind})
		var ex views.ConditionExample
		switch k.Kind {
		case "list":
			ex = views.ConditionExample{Expr: "size(" + ref + ") > 1", Says: "asks when " + k.Name + " has more than one item"}
		case "number":
			ex = views.ConditionExample{Expr: ref + " > 100", Says: "asks when " + k.Name + " is over 100"}
		case "bool":
			ex = views.ConditionExample{Expr: ref + " == true", Says: "asks when " + k.Name + " is true"}
		case "object":
			ex = views.ConditionExample{Expr: "size(" + ref + ") > 0", Says: "asks when " + k.Name + " has any field"}
		default:
			ex = views.ConditionExample{Expr: "!" + ref + `.endsWith("@example.com")`, Says: "asks unless " + k.Name + " ends with @example.com"}
		}
		if !seen[k.Kind] && len(examples) < 4 {
			seen[k.Kind] = true
			examples = append(examples, ex)
		}
	}
	if len(keys) > 0 {
		examples = append(examples, views.ConditionExample{Expr: quoteCEL(keys[0].Name) + " in args", Says: "asks only when the call sends " + keys[0].Name})
	}
	return names, examples
}
