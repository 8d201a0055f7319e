package shell

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// The in-process cost of a run, side by side with what it replaces:
//
//	go test -run '^$' -bench . -benchtime 200x ./runtime/shell/
//
// BenchmarkRunTrue runs the builtin true (no process at all);
// BenchmarkRunBinTrue starts /bin/true, so it pays for a process and for the
// walk of /proc that makes sure nothing outlived it; BenchmarkShTrue is
// os/exec running `sh -c true`, the baseline, and BenchmarkExecBinTrue is
// os/exec running /bin/true, so RunBinTrue - ExecBinTrue is the executor's
// own cost for a run that starts one program.
//
// Besides ns/op (wall clock, which a loaded machine inflates), each reports
// cpu-ns/op: the CPU time this process spent (user+system, children not
// included), which is what the executor adds.

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func loop(b *testing.B, f func()) {
	b.ResetTimer()
	start := cpuTime()
	n := 0
	for b.Loop() {
		f()
		n++
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(n), "cpu-ns/op")
}

func benchRun(b *testing.B, src string) {
	e := newExecutor(b)
	s := Spec{Script: parse(b, src), Dir: b.TempDir()}
	ctx := context.Background()
	loop(b, func() {
		res, err := e.Run(ctx, s)
		if err != nil || !res.OK() {
			b.Fatalf("got %v, %v", res, err)
		}
	})
}

func BenchmarkRunTrue(b *testing.B)    { benchRun(b, "true") }
func BenchmarkRunBinTrue(b *testing.B) { benchRun(b, "/bin/true") }

func BenchmarkShTrue(b *testing.B) {
	loop(b, func() {
		if err := exec.Command("sh", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkExecBinTrue(b *testing.B) {
	loop(b, func() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	})
}
