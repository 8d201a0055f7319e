package ctr

import (
	"os/exec"
	"testing"
)

// TestAlive: this process is alive; a child that exited is not, nor is a
// live pid with another start time.
func TestAlive(t *testing.T) {
	if !Self().Alive() {
		t.Error("this process is not alive")
	}
	child := exec.Command("/bin/true")
	if err := child.Run(); err != nil {
		t.Skip(err)
	}
	if Alive(child.Process.Pid, "") {
		t.Error("an exited child is alive")
	}
	if (Owner{PID: Self().PID, Start: "1"}).Alive() {
		t.Error("another start time passes for this process")
	}
}
