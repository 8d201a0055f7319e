package docker

import (
	"context"
	"os/exec"
	"slices"
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
	e.bgWork.Wait()
	b.ResetTimer()
	for b.Loop() {
		benchRun(b, e, s)
		b.StopTimer()
		e.bgWork.Wait()
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
	e.bgWork.Wait()
	b.ResetTimer()
	for b.Loop() {
		benchRun(b, e, s)
		e.bgWork.Wait()
	}
}

// hardenedFlags make `docker run` as hardened as Run's defaults, for the
// like-for-like peer.
var hardenedFlags = []string{
	"--network", "none", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
	"-u", DefaultUser, "--init", "--pids-limit", "256", "-m", "256m", "--memory-swap", "256m", "--cpus", "1",
	"--tmpfs", "/tmp:rw,nosuid,nodev,size=64m,mode=1777", "--log-driver", "none",
}

// BenchmarkSideBySide interleaves, in every iteration, one cold Run, one
// `docker run --rm --network none` (the peer of the goal), one `docker run
// --rm` with Run's hardening flags (the like-for-like peer) and one pooled
// Run (the pool refilled outside the timing), in an order that rotates from
// one iteration to the next, so that the load of a noisy machine falls on
// all alike. It reports each median and the ratios of the medians: cold/cli
// (goal at most 1.0), pool/cli (goal at most 0.3), cold/hardened-cli; and
// pool-bg, the median time the pooled run's background work (refill,
// removal of the used container) went on after Run returned, which is at
// most what a ccrun process's Close waits for.
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
	e.bgWork.Wait()
	cli := func(flags ...string) func() {
		args := append(append([]string{"run", "--rm"}, flags...), testImage, "/bin/busybox", "true")
		return func() {
			if out, err := exec.Command(docker, args...).CombinedOutput(); err != nil {
				b.Fatalf("docker %v: %v: %s", args, err, out)
			}
		}
	}
	steps := []struct {
		name string
		run  func()
		took []time.Duration
	}{
		{"cold", func() { benchRun(b, e, cold) }, nil},
		{"cli", cli("--network", "none"), nil},
		{"hardened-cli", cli(hardenedFlags...), nil},
		{"pool", func() { benchRun(b, e, pool) }, nil},
	}
	var after []time.Duration // the pooled run's background work: refill, removal
	n := 0
	for b.Loop() {
		for j := range steps {
			st := &steps[(n+j)%len(steps)]
			t0 := time.Now()
			st.run()
			st.took = append(st.took, time.Since(t0))
			if st.name == "pool" {
				b.StopTimer()
				t1 := time.Now()
				e.bgWork.Wait()
				after = append(after, time.Since(t1))
				b.StartTimer()
			}
		}
		n++
	}
	if pooled := e.pooledRuns.Load(); pooled < int64(n) {
		b.Fatalf("%d of %d pooled runs found an idle container", pooled, n)
	}
	// Medians: on a shared machine a few runs stall for seconds, and a mean
	// would report the stalls.
	med := make([]time.Duration, len(steps))
	for i, st := range steps {
		slices.Sort(st.took)
		med[i] = st.took[len(st.took)/2]
		b.ReportMetric(float64(med[i].Microseconds())/1000, st.name+"-ms")
	}
	slices.Sort(after)
	b.ReportMetric(float64(after[len(after)/2].Microseconds())/1000, "pool-bg-ms")
	ratio := func(x, y int) float64 { return float64(med[x]) / float64(med[y]) }
	b.ReportMetric(ratio(0, 1), "cold/cli")
	b.ReportMetric(ratio(3, 1), "pool/cli")
	b.ReportMetric(ratio(0, 2), "cold/hardened-cli")
}
