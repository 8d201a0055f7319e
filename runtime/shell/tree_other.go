//go:build !linux

package shell

import (
	"errors"
	"os"
	"syscall"
)

// becomeSubreaper does nothing outside Linux.
func becomeSubreaper() error { return nil }

// procAttr puts each program in a process group of its own, or a session
// when ccrun has a controlling terminal (see tree_linux.go).
func procAttr(detach bool) *syscall.SysProcAttr {
	if detach {
		return &syscall.SysProcAttr{Setsid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true}
}

// hasTerminal reports whether this process has a controlling terminal.
func hasTerminal() bool {
	f, err := os.Open("/dev/tty")
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// killGroup kills a process group.
func killGroup(pgid int) error {
	err := syscall.Kill(-pgid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// groupGone reports whether process group pgid has no process left.
func groupGone(pgid int) bool {
	return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

// killTree kills the run's process groups. Outside Linux a process that
// left its group is not found. It cannot count, and returns 0.
func killTree(children, groups []int, marker string) int {
	for _, g := range groups {
		_ = killGroup(g)
	}
	return 0
}
