//go:build linux

package confine

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// leaveEnv: this test binary, run in the workspace tier, tries to leave
// the run's mount namespace (setns to PID 1's, by pidfd: /proc is hidden)
// and then to write the protected file its value names.
const leaveEnv = "CCRUN_CONFINE_TEST_LEAVE"

// leaveMain prints "setns: ok" or "setns: fail: ERR", then "write: ok" or
// "write: fail: ERR".
func leaveMain(file string) int {
	err := func() error {
		fd, err := unix.PidfdOpen(1, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Setns(fd, unix.CLONE_NEWNS)
	}()
	say := func(what string, err error) {
		if err != nil {
			fmt.Printf("%s: fail: %v\n", what, err)
		} else {
			fmt.Printf("%s: ok\n", what)
		}
	}
	say("setns", err)
	say("write", os.WriteFile(file, []byte("#!/bin/sh\ntouch pwned\n"), 0o755))
	return 0
}

// TestWorkspaceRootLeavesNoNamespace: a program run as root in the
// workspace tier with no network list keeps root's capabilities (only a
// network-limited run drops them), yet cannot join PID 1's mount
// namespace, where the project's protected paths are not bound
// read-only: setns by a pidfd needs ptrace access to the process, which
// Landlock refuses for any process outside the run's domain, and every
// process inside it is in the run's namespace. So it writes no hook.
func TestWorkspaceRootLeavesNoNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: an ordinary user's program holds no capability of the host's namespaces")
	}
	w := newWorld(t)
	git(t, w.project, "init", "-q")
	rs := w.workspace(t, t.TempDir())
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	hook := w.project + "/.git/hooks/pre-commit"
	cmd := exec.Command(self)
	cmd.Dir = w.project
	cmd.Env = []string{leaveEnv + "=" + hook}
	out, err := startWait(t, rs, cmd)
	if err != nil {
		t.Fatalf("the probe: %v\n%s", err, out)
	}
	if !strings.Contains(out, "setns: fail") || !strings.Contains(out, "write: fail") {
		t.Errorf("the probe left the run's mount namespace:\n%s", out)
	}
	if _, err := os.Lstat(hook); err == nil {
		t.Errorf("%s was made", hook)
	}
}
