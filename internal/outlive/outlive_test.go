package outlive_test

import (
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/internal/outlive"
)

// TestMayOutlive: what a signal's default action could leave behind, by
// the call: a program, a container or a capability may; a script of
// builtins alone and a @wasm run may not.
func TestMayOutlive(t *testing.T) {
	for _, tc := range []struct {
		c    ccrun.Call
		want bool
	}{
		{ccrun.Call{Command: "true"}, false},
		{ccrun.Call{Command: "echo hi; x=1; while false; do :; done"}, false},
		{ccrun.Call{Command: "true > out"}, true},            // a redirection opens a file
		{ccrun.Call{Command: "sleep 60"}, true},              // a program
		{ccrun.Call{Command: "echo $(sleep 60)"}, true},      // one in a substitution
		{ccrun.Call{Command: "eval 'sleep 60'"}, true},       // a builtin that runs its words
		{ccrun.Call{Command: "f() { :; }; f"}, true},         // a function: a word, not a builtin
		{ccrun.Call{Command: "$X"}, true},                    // a word to expand
		{ccrun.Call{Command: "if then fi ("}, true},          // does not parse: cannot run, but say so
		{ccrun.Call{Command: "true\x00; sleep 60"}, true},    // not parsed
		{ccrun.Call{Module: "tool.wasm"}, false},             // the warm server, a worker, the process
		{ccrun.Call{Image: "ccrun-test:busybox"}, true},      // a container
		{ccrun.Call{Capability: "fmt"}, true},                // its environment is read later
		{ccrun.Call{Tool: "lib", Input: []byte("{}")}, true}, // a library tool: whatever it does
	} {
		if got := outlive.May(&tc.c); got != tc.want {
			t.Errorf("outlive.May(%+v) = %v, want %v", tc.c, got, tc.want)
		}
	}
}
