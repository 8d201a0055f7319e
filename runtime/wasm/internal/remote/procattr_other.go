//go:build !linux

package remote

import "syscall"

// workerProcAttr has no parent-death signal on this OS: a worker relies on
// its own check of its parent (WorkerParentEnv) and on ccrun gc.
func workerProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
