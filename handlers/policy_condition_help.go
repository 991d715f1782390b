package handlers

import (
	"regexp"
	"strings"

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
// conditions written with them, each saying what it does: one per
// argument, the ones whose names say what they hold first.
func conditionHelp(keys []db.ArgumentKey) ([]views.ArgumentName, []views.ConditionExample) {
	names := make([]views.ArgumentName, 0, len(keys))
	var named, plain []views.ConditionExample
	for _, k := range keys {
		ref := argRef(k.Name)
		names = append(names, views.ArgumentName{Name: k.Name, Ref: ref, Kind: k.Kind})
		if ex, ok := namedExample(k, ref); ok {
			named = append(named, ex)
		} else {
			plain = append(plain, kindExample(k, ref))
		}
	}
	examples := append(named, plain...)
	if len(examples) > 4 {
		examples = examples[:4]
	}
	if len(keys) > 0 {
		examples = append(examples, views.ConditionExample{Expr: quoteCEL(keys[0].Name) + " in args", Says: "asks only when the call sends " + keys[0].Name})
	}
	return names, examples
}

// namedExample is an example for an argument whose name says what it
// holds: addresses, web addresses, paths, commands.
func namedExample(k db.ArgumentKey, ref string) (views.ConditionExample, bool) {
	n := strings.ToLower(k.Name)
	has := func(words ...string) bool {
		for _, w := range words {
			if n == w || strings.Contains(n, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("to", "cc", "bcc", "recipient", "email", "attendee", "address") && k.Kind == "list":
		return views.ConditionExample{Expr: ref + `.exists(a, !a.endsWith("@example.com"))`,
			Says: "asks when any of " + k.Name + " is outside example.com"}, true
	case has("to", "cc", "bcc", "recipient", "email", "attendee", "address") && k.Kind == "text":
		return views.ConditionExample{Expr: "!" + ref + `.endsWith("@example.com")`, Says: "asks unless " + k.Name + " is at example.com"}, true
	case has("url", "link", "href", "uri") && k.Kind == "text":
		return views.ConditionExample{Expr: "!" + ref + `.startsWith("https://intranet.example.com/")`,
			Says: "asks unless " + k.Name + " is on intranet.example.com"}, true
	case has("path", "file", "dir", "folder") && k.Kind == "text":
		return views.ConditionExample{Expr: "!" + ref + `.startsWith("/tmp/")`, Says: "asks unless " + k.Name + " is under /tmp/"}, true
	case has("command", "cmd", "script") && k.Kind == "text":
		// shell_commands reads every simple command, chained or nested, so
		// "git status && rm -rf ~" is not taken for git status.
		return views.ConditionExample{Expr: "!shell_commands(" + ref + `).all(c, c[0] in ["git", "ls"])`,
			Says: "asks unless every command in " + k.Name + " (chained, piped or nested) is git or ls"}, true
	case has("query", "sql") && k.Kind == "text":
		return views.ConditionExample{Expr: ref + `.contains("rm ")`, Says: "asks when " + k.Name + ` contains "rm "`}, true
	}
	return views.ConditionExample{}, false
}

// kindExample is an example for an argument by the kind of its value.
func kindExample(k db.ArgumentKey, ref string) views.ConditionExample {
	switch k.Kind {
	case "list":
		return views.ConditionExample{Expr: "size(" + ref + ") > 1", Says: "asks when " + k.Name + " has more than one item"}
	case "number":
		return views.ConditionExample{Expr: ref + " > 100", Says: "asks when " + k.Name + " is over 100"}
	case "bool":
		return views.ConditionExample{Expr: ref + " == true", Says: "asks when " + k.Name + " is true"}
	case "object":
		return views.ConditionExample{Expr: "size(" + ref + ") > 0", Says: "asks when " + k.Name + " has any field"}
	}
	return views.ConditionExample{Expr: "size(" + ref + ") > 1000", Says: "asks when " + k.Name + " is longer than 1,000 characters"}
}
