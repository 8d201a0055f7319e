package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCheckOptions: the command line becomes checkOptions, and nothing
// else is done with it (runF is given them instead of runCheck).
func TestCheckOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want checkOptions
	}{
		{[]string{"--shell", "git push"}, checkOptions{call: callFlags{shell: "git push"}, args: []string{}, dash: -1}},
		{[]string{"--json", "--session-allow", "run_command:git", "--session-allow", "run_command:ls", "--mode", "plan", "--shell", "ls"},
			checkOptions{call: callFlags{shell: "ls", mode: "plan"}, args: []string{}, dash: -1, json: true, sessionAllow: []string{"run_command:git", "run_command:ls"}}},
		{[]string{"fmt", "--input", `{"x": 1}`, "--", "-v"}, checkOptions{call: callFlags{input: `{"x": 1}`}, args: []string{"fmt", "-v"}, dash: 1}},
		{[]string{"--wasm", "m.wasm", "--mount", "a:/b", "--deny", "run_wasm:*"}, checkOptions{call: callFlags{wasmFile: "m.wasm", mounts: []string{"a:/b"}, deny: []string{"run_wasm:*"}}, args: []string{}, dash: -1}},
	} {
		var got *checkOptions
		a := &app{eng: testEngines, io: stdio{strings.NewReader(""), io.Discard, io.Discard}}
		c := a.checkCommand(func(_ context.Context, o *checkOptions) error { got = o; return nil })
		c.SetArgs(tc.args)
		if err := c.Execute(); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if diff := cmp.Diff(tc.want, *got, cmp.AllowUnexported(checkOptions{}, callFlags{})); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.args, diff)
		}
	}
}

// TestRunCheck calls check's run function as a test of a front end would,
// without cobra: the decision, as JSON and as text; a session grant of
// --session-allow; nothing run, nothing written.
func TestRunCheck(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CCRUN_SESSION", "")
	t.Setenv("CCRUN_SESSION_DIR", filepath.Join(t.TempDir(), "sessions"))
	for _, tc := range []struct {
		o        checkOptions
		decision string
		text     string
	}{
		{checkOptions{call: callFlags{shell: "git status"}, dash: -1, json: true}, "allow", ""},
		{checkOptions{call: callFlags{shell: "touch made"}, dash: -1, json: true}, "ask", ""},
		{checkOptions{call: callFlags{shell: "git push"}, dash: -1, json: true, sessionAllow: []string{"run_command:git"}}, "allow", ""},
		{checkOptions{call: callFlags{shell: "touch made", deny: []string{"run_command:touch"}}, dash: -1, json: true}, "deny", ""},
		{checkOptions{call: callFlags{shell: "touch made"}, dash: -1}, "", "decision:    ask\n"},
	} {
		var out, errb bytes.Buffer
		a := &app{eng: testEngines, io: stdio{strings.NewReader(""), &out, &errb}, projectDir: dir}
		if err := a.runCheck(context.Background(), &tc.o); err != nil {
			t.Fatalf("%+v: %v; %s", tc.o, err, errb.String())
		}
		if tc.text != "" {
			if !strings.HasPrefix(out.String(), tc.text) {
				t.Errorf("%+v: %q, want it to begin with %q", tc.o, out.String(), tc.text)
			}
			continue
		}
		var r checkReport
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatalf("%q: %v", out.String(), err)
		}
		if r.Decision != tc.decision {
			t.Errorf("%+v: %s (%s: %s), want %s", tc.o, r.Decision, r.Layer, r.Reason, tc.decision)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "made")); err == nil {
		t.Error("check ran a command")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("check wrote into the project: %v", entries)
	}
	// What the flags would refuse, the run refuses too.
	a := &app{eng: testEngines, io: stdio{strings.NewReader(""), io.Discard, io.Discard}, projectDir: dir}
	for _, o := range []checkOptions{
		{dash: -1}, // nothing to check
		{call: callFlags{shell: "ls"}, dash: -1, sessionAllow: []string{"bad key!!"}},
		{call: callFlags{shell: "ls", allow: []string{"bad key!!"}}, dash: -1},
	} {
		if err := a.runCheck(context.Background(), &o); exitCode(nil, err) != exitUsage {
			t.Errorf("%+v: %v, want a usage error", o, err)
		}
	}
}
