package ccrun_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/internal/testimage"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/runtime/job"
)

var (
	probeOnce sync.Once
	probePath string
	probeErr  error
)

// probe builds testdata/wasm/probe for wasip1, once per test binary.
func probe(t *testing.T) string {
	t.Helper()
	probeOnce.Do(func() {
		_, self, _, _ := runtime.Caller(0)
		dir, err := os.MkdirTemp("", "ccrun-probe")
		if err != nil {
			probeErr = err
			return
		}
		probePath = filepath.Join(dir, "probe.wasm")
		cmd := exec.Command("go", "build", "-o", probePath, ".")
		cmd.Dir = filepath.Join(filepath.Dir(self), "testdata", "wasm", "probe")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			probeErr = err
			t.Logf("%s", out)
		}
	})
	if probeErr != nil {
		t.Fatal(probeErr)
	}
	return probePath
}

// dockerOrSkip skips when no Docker Engine answers, unless
// CCRUN_REQUIRE_DOCKER=1, which makes that a failure.
func dockerOrSkip(t *testing.T) {
	t.Helper()
	testimage.Need(t)
}

// TestExecutorsAgree runs one table of behaviours through every
// environment, with the real executors: the result must be the same
// whichever environment the tool declares.
func TestExecutorsAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("real executors")
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	mod := probe(t)
	type form struct{ shell, wasm, docker []string }
	cases := []struct {
		name   string
		form   form
		stdin  string
		limits job.Limits
		cancel time.Duration
		reason job.Reason
		code   int
		stdout string
		minOut int // at least this much stdout
		maxOut int // at most (0: no check)
	}{
		{name: "exit code", form: form{[]string{"exit 3"}, []string{"exit", "3"}, []string{"/bin/busybox", "sh", "-c", "exit 3"}},
			reason: job.Exit, code: 3},
		{name: "stdin to stdout", form: form{[]string{"cat"}, []string{"cat"}, []string{"/bin/busybox", "cat"}},
			stdin: "hello\n", reason: job.Exit, stdout: "hello\n"},
		{name: "timeout", form: form{[]string{"sleep 30"}, []string{"sleep"}, []string{"/bin/busybox", "sleep", "30"}},
			limits: job.Limits{Timeout: time.Second}, reason: job.Timeout, code: job.TimeoutExit},
		{name: "output flood", form: form{[]string{"yes"}, []string{"flood"}, []string{"/bin/busybox", "yes"}},
			limits: job.Limits{Output: 64 << 10, Timeout: 30 * time.Second}, reason: job.OutputCap, minOut: 64 << 10, maxOut: 64 << 10},
		{name: "cancelled", form: form{[]string{"sleep 30"}, []string{"sleep"}, []string{"/bin/busybox", "sleep", "30"}},
			cancel: 500 * time.Millisecond, reason: job.Cancelled},
	}
	for _, env := range []string{"@shell", "@wasm", "@docker", "@docker/kubernetes"} {
		t.Run(env, func(t *testing.T) {
			var engine []engines.Option
			if env == "@docker" {
				dockerOrSkip(t)
			}
			if env == "@docker/kubernetes" {
				engine = kubeOrSkip(t) // the Kubernetes engine of @docker (kube_test.go)
			}
			rt, err := ccrun.New(append(engines.All(engine...), ccrun.WithProjectDir(t.TempDir()), ccrun.WithApprover(permission.ApproverFunc(
				func(context.Context, *permission.Prompt) (ceiling.Grant, error) { return ceiling.Once, nil })))...)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					c := &ccrun.Call{Limits: tc.limits, Stdin: strings.NewReader(tc.stdin)}
					switch env {
					case "@shell":
						c.Command = tc.form.shell[0]
					case "@wasm":
						c.Module, c.Args = mod, tc.form.wasm
					case "@docker", "@docker/kubernetes":
						c.Image, c.Args = testimage.Name, tc.form.docker
					}
					ctx := context.Background()
					if tc.cancel > 0 {
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, tc.cancel)
						defer cancel()
					}
					out, err := rt.Exec(ctx, c)
					if err != nil {
						t.Fatalf("%v", err)
					}
					r := out.Result
					if r.Reason != tc.reason {
						t.Fatalf("reason %s, want %s (exit %d, detail %q, stderr %q)", r.Reason, tc.reason, r.ExitCode, r.Detail, r.Stderr)
					}
					if tc.reason == job.Exit || tc.reason == job.Timeout {
						if r.ExitCode != tc.code {
							t.Errorf("exit %d, want %d", r.ExitCode, tc.code)
						}
					}
					if tc.stdout != "" && string(r.Stdout) != tc.stdout {
						t.Errorf("stdout %q, want %q", r.Stdout, tc.stdout)
					}
					if len(r.Stdout) < tc.minOut || (tc.maxOut > 0 && len(r.Stdout) > tc.maxOut) {
						t.Errorf("stdout is %d bytes, want %d to %d", len(r.Stdout), tc.minOut, tc.maxOut)
					}
					if tc.reason == job.OutputCap && !r.Truncated {
						t.Error("not marked truncated")
					}
				})
			}
		})
	}
}
