package remote

import "syscall"

// workerProcAttr makes a worker die with the thread that started it: the
// kernel sends it SIGKILL (Pdeathsig).
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
