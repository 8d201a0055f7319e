package kube

import (
	"fmt"
	"os"
	"testing"
)

// TestMain keeps ccrun's state of these tests (the mount locks, the
// engine record: the fake API servers' addresses) out of the real home;
// children inherit it.
func TestMain(m *testing.M) {
	state, err := os.MkdirTemp("", "ccrun-kube-test-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_STATE_HOME", state)
	code := m.Run()
	os.RemoveAll(state)
	os.Exit(code)
}
