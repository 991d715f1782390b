package approval

// ShellPlace says where a nested command sits.
type ShellPlace string

// Places of nested commands.
const (
	PlaceTop          ShellPlace = ""
	PlaceSubshell     ShellPlace = "subshell"     // ( … )
	PlaceGroup        ShellPlace = "group"        // { …; }
	PlaceSubstitution ShellPlace = "substitution" // $( … ) or backticks
	PlaceProcess      ShellPlace = "process"      // <( … ) or >( … )
	PlaceHereDoc      ShellPlace = "here-doc"     // in a here-document's body
	PlacePayload      ShellPlace = "shell -c"     // bash -c '…' and the like
	PlaceEval         ShellPlace = "eval"         // eval '…'
	PlaceControl      ShellPlace = "control"      // if, while, for, case
	PlaceFunction     ShellPlace = "function"     // a function's body
)

// Words names a place for a reviewer.
func (p ShellPlace) Words() string {
	switch p {
	case PlaceSubshell:
		return "in a subshell ( … )"
	case PlaceGroup:
		return "in a group { … }"
	case PlaceSubstitution:
		return "inside a command substitution $( … ), run first"
	case PlaceProcess:
		return "inside a process substitution <( … )"
	case PlaceHereDoc:
		return "inside a here-document"
	case PlacePayload:
		return "in a command string given to a shell (-c)"
	case PlaceEval:
		return "in a string given to eval"
	case PlaceControl:
		return "inside if, while, for, case, [[ ]] or (( ))"
	case PlaceFunction:
		return "in a function's body"
	}
	return ""
}
