package ccrun_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/permission"
)

func benchRuntime(b *testing.B) *ccrun.Runtime {
	b.Helper()
	rt, err := ccrun.New(engines.Wasm(), ccrun.WithProjectDir(b.TempDir()), ccrun.WithAuditLog(""),
		ccrun.WithApprover(permission.ApproverFunc(func(context.Context, *permission.Prompt) (ceiling.Grant, error) {
			return ceiling.AlwaysThisSession, nil
		})))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	return rt
}

// reportP50 runs f b.N times and reports the median as p50-ns.
func reportP50(b *testing.B, f func()) {
	times := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t0 := time.Now()
		f()
		times = append(times, time.Since(t0))
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	if len(times) > 0 {
		b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
	}
}

// BenchmarkExecWasmHello: one whole call of a Go-built hello module through
// the library (validate, gate, run), warm: issue 4's in-process p50.
func BenchmarkExecWasmHello(b *testing.B) {
	b.Setenv("XDG_CACHE_HOME", b.TempDir())
	_, self, _, _ := runtime.Caller(0)
	mod := filepath.Join(b.TempDir(), "hello.wasm")
	cmd := exec.Command("go", "build", "-o", mod, ".")
	cmd.Dir = filepath.Join(filepath.Dir(self), "testdata", "wasm", "hello")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	rt := benchRuntime(b)
	run := func() {
		out, err := rt.Exec(context.Background(), &ccrun.Call{Module: mod})
		if err != nil || !out.Result.OK() {
			b.Fatal(err, out.Result)
		}
	}
	run() // compile once
	reportP50(b, run)
}

// BenchmarkExecShellTrue: one whole call of `true` through the library.
func BenchmarkExecShellTrue(b *testing.B) {
	rt := benchRuntime(b)
	reportP50(b, func() {
		if _, err := rt.Exec(context.Background(), &ccrun.Call{Command: "true"}); err != nil {
			b.Fatal(err)
		}
	})
}
