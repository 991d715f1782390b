package approval

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// shellCommandsFunction is the policy conditions' shell_commands(s): the
// simple commands of a command line as lists of words, every nested one
// included (pipes, &&, ;, ||, subshells, substitutions, here-documents,
// bash -c and eval strings). A literal word is its value without quotes
// or escapes; any other word is as written, with its $ or backticks, so a
// computed name never equals a plain one. A command that does not parse,
// or whose nested string cannot be read, is an evaluation error: the call
// asks.
func shellCommandsFunction() cel.EnvOption {
	return cel.Function("shell_commands",
		cel.Overload("shell_commands_string", []*cel.Type{cel.StringType}, cel.ListType(cel.ListType(cel.StringType)),
			cel.UnaryBinding(func(v ref.Val) ref.Val {
				s, ok := v.(types.String)
				if !ok {
					return types.MaybeNoSuchOverloadErr(v)
				}
				return shellCommandsValue(string(s))
			})))
}

func shellCommandsValue(s string) ref.Val {
	view := ParseShell(s, "")
	if !view.Parsed {
		return types.NewErr("shell_commands: the command could not be parsed: %s", view.Problem)
	}
	if view.Incomplete {
		return types.NewErr("shell_commands: a command string inside the command could not be read")
	}
	out := make([][]string, len(view.Commands))
	for i, c := range view.Commands {
		out[i] = c.Values()
	}
	return types.DefaultTypeAdapter.NativeToValue(out)
}
