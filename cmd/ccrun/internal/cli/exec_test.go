package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExecOptions: exec's command line becomes execOptions, and nothing
// else is done with it.
func TestExecOptions(t *testing.T) {
	t.Parallel()
	a := &app{eng: testEngines, io: stdio{strings.NewReader(""), io.Discard, io.Discard}}
	var got *execOptions
	c := a.execCommand(func(_ context.Context, o *execOptions) error { got = o; return nil })
	c.SetArgs([]string{"--approve", "unconfined", "--events", "json", "--timeout", "2s", "--env", "A=1", "--shell", "make", "--", "x"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	want := execOptions{call: callFlags{shell: "make", env: []string{"A=1"}, timeout: 2e9}, args: []string{"x"}, dash: 0, approve: "unconfined", events: "json"}
	if diff := cmp.Diff(want, *got, cmp.AllowUnexported(execOptions{}, callFlags{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestRunExec calls exec's run function without cobra: a command runs and
// its exit code is the result's; with nobody to ask it is denied, says
// how to allow it, and does not run.
func TestRunExec(t *testing.T) {
	t.Setenv("CCRUN_SESSION", "")
	t.Setenv("CCRUN_SESSION_DIR", filepath.Join(t.TempDir(), "sessions"))
	dir := t.TempDir()
	var out, errb bytes.Buffer
	a := &app{eng: testEngines, io: stdio{strings.NewReader(""), &out, &errb}, projectDir: dir}
	err := a.runExec(context.Background(), &execOptions{call: callFlags{shell: `echo "$1"; exit 3`}, args: []string{"hi"}, dash: 0, approve: "once"})
	if err != nil || out.String() != "hi\n" || exitCode(a.result, err) != 3 {
		t.Errorf("exec: %v, %q, exit %d; %s", err, out.String(), exitCode(a.result, err), errb.String())
	}
	a = &app{eng: testEngines, io: stdio{strings.NewReader(""), &out, &errb}, projectDir: dir}
	err = a.runExec(context.Background(), &execOptions{call: callFlags{shell: "touch made"}, dash: -1})
	if exitCode(a.result, err) != exitDenied || !strings.Contains(err.Error(), "to allow it, answer once or session when asked") {
		t.Errorf("nobody to ask: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "made")); err == nil {
		t.Error("a denied command ran")
	}
}
