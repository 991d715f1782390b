package main

import "syscall"

// childProcAttr makes the kernel send the child SIGTERM when this process
// dies, even by SIGKILL.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
