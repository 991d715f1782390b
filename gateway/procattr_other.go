//go:build !linux

package gateway

import "syscall"

func childProcAttr() *syscall.SysProcAttr { return nil }
