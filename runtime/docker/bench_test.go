package docker

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// The side-by-side figures of docs/docker.md; `make bench-docker` runs
// them and prints the ratios. Each iteration runs `true` in the test image
// and removes its container.

var trueCmd = []string{"/bin/busybox", "true"}

func benchRun(b *testing.B, e *Executor, s Spec) {
	b.Helper()
	res, err := e.Run(context.Background(), s)
	if err != nil {
		b.Fatal(err)
	}
	if !res.OK() {
		b.Fatalf("ended %s %d: %q", res.Reason, res.ExitCode, res.Stderr)
	}
}

// BenchmarkRunCold: Run creating its container, as `ccrun exec --docker`
// does without a pool.
func BenchmarkRunCold(b *testing.B) {
	e := executor(b)
	s := Spec{Image: testImage, Cmd: trueCmd}
	for b.Loop() {
		benchRun(b, e, s)
	}
}

// BenchmarkDockerCLI: the peer, `docker run --rm --network none`.
func BenchmarkDockerCLI(b *testing.B) {
	executor(b) // skips without an engine
	docker, err := exec.LookPath("docker")
	if err != nil {
		b.Skip("no docker CLI")
	}
	for b.Loop() {
		out, err := exec.Command(docker, "run", "--rm", "--network", "none", testImage, "/bin/busybox", "true").CombinedOutput()
		if err != nil {
			b.Fatalf("docker run: %v: %s", err, out)
		}
	}
}

// BenchmarkRunPool: Run claiming a pooled container that was refilled
// while the caller was away (between the timed runs): the latency a
// long-lived process, or a CLI run some time after the last one, sees.
func BenchmarkRunPool(b *testing.B) {
	e := executor(b)
	s := Spec{Image: testImage, Cmd: trueCmd, Pool: true}
	b.Cleanup(func() { e.DrainPool(context.Background()) })
	benchRun(b, e, s) // fill the pool
	e.refills.Wait()
	b.ResetTimer()
	for b.Loop() {
		benchRun(b, e, s)
		b.StopTimer()
		e.refills.Wait()
		b.StartTimer()
	}
}

// BenchmarkRunPoolBackToBack: pooled runs one right after the other, each
// also paying for the refill it started (what a `ccrun exec` process pays
// before it exits, since Close waits for the refill).
func BenchmarkRunPoolBackToBack(b *testing.B) {
	e := executor(b)
	s := Spec{Image: testImage, Cmd: trueCmd, Pool: true}
	b.Cleanup(func() { e.DrainPool(context.Background()) })
	benchRun(b, e, s)
	e.refills.Wait()
	b.ResetTimer()
	for b.Loop() {
		benchRun(b, e, s)
		e.refills.Wait()
	}
}

// BenchmarkSideBySide interleaves, in every iteration, one cold Run, one
// `docker run --rm --network none` and one pooled Run (the pool refilled
// outside the timing), so that the load of a noisy machine falls on all
// three alike. It reports each one's mean and the two ratios of the goal:
// cold/cli (goal at most 1.0) and pool/cli (goal at most 0.3).
func BenchmarkSideBySide(b *testing.B) {
	e := executor(b)
	docker, err := exec.LookPath("docker")
	if err != nil {
		b.Skip("no docker CLI")
	}
	cold := Spec{Image: testImage, Cmd: trueCmd}
	pool := Spec{Image: testImage, Cmd: trueCmd, Pool: true}
	b.Cleanup(func() { e.DrainPool(context.Background()) })
	benchRun(b, e, pool)
	e.refills.Wait()
	var tCold, tCLI, tPool time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		benchRun(b, e, cold)
		t1 := time.Now()
		if out, err := exec.Command(docker, "run", "--rm", "--network", "none", testImage, "/bin/busybox", "true").CombinedOutput(); err != nil {
			b.Fatalf("docker run: %v: %s", err, out)
		}
		t2 := time.Now()
		benchRun(b, e, pool)
		t3 := time.Now()
		e.refills.Wait()
		tCold, tCLI, tPool = tCold+t1.Sub(t0), tCLI+t2.Sub(t1), tPool+t3.Sub(t2)
		n++
	}
	ms := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(n) }
	b.ReportMetric(ms(tCold), "cold-ms")
	b.ReportMetric(ms(tCLI), "cli-ms")
	b.ReportMetric(ms(tPool), "pool-ms")
	b.ReportMetric(float64(tCold)/float64(tCLI), "cold/cli")
	b.ReportMetric(float64(tPool)/float64(tCLI), "pool/cli")
}
