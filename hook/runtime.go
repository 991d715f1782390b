package hook

import (
	"os"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
)

// runtimeOf is what the hook says about the agent it runs for: the agent's
// name (neither agent puts its version in the hook input or the hook's
// environment, so none is claimed), this machine's host name, and the
// working directory the input names. A text the check would refuse (a
// control character, too long) is left out rather than fail the call.
func runtimeOf(a agent, in Input) *client.Runtime {
	host, _ := os.Hostname()
	r := approval.Runtime{Client: a.displayName, Host: host, WorkingDirectory: in.Cwd}
	if approval.CheckRuntime(approval.Runtime{Host: r.Host}) != nil {
		r.Host = ""
	}
	if approval.CheckRuntime(approval.Runtime{WorkingDirectory: r.WorkingDirectory}) != nil {
		r.WorkingDirectory = ""
	}
	return &client.Runtime{Client: r.Client, Host: r.Host, WorkingDirectory: r.WorkingDirectory}
}
