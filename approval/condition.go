package approval

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

// Condition limits.
const (
	MaxConditionLength = 2000
	// ConditionCostLimit bounds one evaluation (CEL's cost units); an
	// expression that would exceed it stops and the call asks a person.
	ConditionCostLimit = 100000
)

var (
	celEnvOnce sync.Once
	celEnv     *cel.Env
	celEnvErr  error
	programs   sync.Map // expression → cel.Program
)

func conditionEnv() (*cel.Env, error) {
	celEnvOnce.Do(func() {
		celEnv, celEnvErr = cel.NewEnv(cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)), shellCommandsFunction())
	})
	return celEnv, celEnvErr
}

// CompileCondition checks a policy condition: a CEL expression over `args`
// (the call's arguments as a map) that must be a bool. The error, for an
// admin, is the compiler's message.
func CompileCondition(expr string) error {
	_, err := conditionProgram(expr)
	return err
}

func conditionProgram(expr string) (cel.Program, error) {
	if p, ok := programs.Load(expr); ok {
		return p.(cel.Program), nil
	}
	if strings.TrimSpace(expr) == "" {
		return nil, fmt.Errorf("the condition is empty")
	}
	if len(expr) > MaxConditionLength {
		return nil, fmt.Errorf("the condition is longer than %d characters", MaxConditionLength)
	}
	env, err := conditionEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, iss.Err()
	}
	if ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
		return nil, fmt.Errorf("the condition must be true or false, not %s", ast.OutputType())
	}
	prg, err := env.Program(ast, cel.CostLimit(ConditionCostLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, err
	}
	programs.Store(expr, prg)
	return prg, nil
}

// EvaluateCondition runs a policy condition over parsed arguments. Only a
// clean false lets a call run without a person: unparsed arguments, a
// missing key, a type error, a non-bool result or the cost limit all mean
// "ask" (ConditionError).
func EvaluateCondition(expr string, args Arguments) ConditionResult {
	res, _ := EvaluateConditionDetail(expr, args)
	return res
}

// EvaluateConditionDetail is EvaluateCondition with the reason an
// evaluation failed, for the policy form's test box.
func EvaluateConditionDetail(expr string, args Arguments) (ConditionResult, error) {
	if expr == "" {
		return NoCondition, nil
	}
	if !args.Parsed {
		return ConditionError, fmt.Errorf("the arguments are not a JSON object (%s)", args.Problem)
	}
	prg, err := conditionProgram(expr)
	if err != nil {
		return ConditionError, err
	}
	m := make(map[string]any, len(args.Members))
	for _, mem := range args.Members {
		var v any
		if err := json.Unmarshal(mem.Value, &v); err != nil {
			return ConditionError, err
		}
		m[mem.Key] = v
	}
	out, _, err := prg.Eval(map[string]any{"args": m})
	if err != nil {
		return ConditionError, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return ConditionError, fmt.Errorf("the condition gave %v, not true or false", out)
	}
	if b {
		return ConditionTrue, nil
	}
	return ConditionFalse, nil
}
