package gateway

import (
	"os"
	"strings"
	"unicode/utf8"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
)

// runtime is what the gateway says about itself with each check:
// "countersign mcp → <server> <version>" as the upstream named itself in
// its initialize answer (the connector's name until it has answered), this
// machine's host name and the gateway's working directory. A text the
// check would refuse is shortened or left out rather than fail the call.
func (g *Gateway) runtime() *client.Runtime {
	upstream := g.opt.Connector
	g.mu.Lock()
	if si := g.serverIni.ServerInfo; si.Name != "" {
		upstream = strings.TrimSpace(si.Name + " " + si.Version)
	}
	g.mu.Unlock()
	host, _ := os.Hostname()
	wd, _ := os.Getwd()
	r := approval.Runtime{Client: clip("countersign mcp → "+upstream, approval.MaxRuntimeClientChars), Host: host, WorkingDirectory: wd}
	if approval.CheckRuntime(approval.Runtime{Client: r.Client}) != nil {
		r.Client = "countersign mcp"
	}
	if approval.CheckRuntime(approval.Runtime{Host: r.Host}) != nil {
		r.Host = ""
	}
	if approval.CheckRuntime(approval.Runtime{WorkingDirectory: r.WorkingDirectory}) != nil {
		r.WorkingDirectory = ""
	}
	return &client.Runtime{Client: r.Client, Host: r.Host, WorkingDirectory: r.WorkingDirectory}
}

// clip keeps the first n characters of s.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
