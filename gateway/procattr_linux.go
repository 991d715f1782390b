package gateway

import "syscall"

// childProcAttr makes the kernel send the child SIGTERM when the gateway
// dies, even by SIGKILL: no orphaned upstream servers.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
