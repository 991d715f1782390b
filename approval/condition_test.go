package approval

import (
	"strings"
	"testing"
)

func TestConditions(t *testing.T) {
	cases := []struct {
		name, expr, args string
		want             ConditionResult
	}{
		{"True", `size(args.to) > 1 || args.amount > 100`, `{"to":["a","b"],"amount":5}`, ConditionTrue},
		{"False", `size(args.to) > 1 || args.amount > 100`, `{"to":["a"],"amount":5}`, ConditionFalse},
		{"AmountTrue", `args.amount > 100`, `{"amount":250.5}`, ConditionTrue},
		{"NestedFalse", `args.opts.public == true`, `{"opts":{"public":false}}`, ConditionFalse},
		{"HasMacro", `has(args.cc)`, `{"to":"x"}`, ConditionFalse},
		{"MissingKeyAsks", `args.amount > 100`, `{"to":"x"}`, ConditionError},
		{"TypeErrorAsks", `args.amount > 100`, `{"amount":"lots"}`, ConditionError},
		{"UnparsedAsks", `args.amount > 100`, `{"amount": 5,}`, ConditionError},
		{"NonBoolAsks", `args.amount`, `{"amount":5}`, ConditionError},
		{"CostLimitAsks", `args.list.all(x, args.list.all(y, args.list.all(z, x + y + z >= 0)))`, `{"list":[` + strings.TrimSuffix(strings.Repeat("1,", 200), ",") + `]}`, ConditionError},
		{"NoCondition", ``, `{}`, NoCondition},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := EvaluateCondition(c.expr, ParseArguments(c.args)); got != c.want {
				_, err := EvaluateConditionDetail(c.expr, ParseArguments(c.args))
				t.Fatalf("got %v, want %v (%v)", got, c.want, err)
			}
		})
	}
}

func TestCompileCondition(t *testing.T) {
	if err := CompileCondition(`size(args.to) > 1 || args.amount > 100`); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`args.amount >`, `"text"`, `1 + 2`, `unknown_var > 1`, ``, strings.Repeat("a", MaxConditionLength+1)} {
		if err := CompileCondition(bad); err == nil {
			t.Errorf("%q compiled", bad)
		}
	}
}
