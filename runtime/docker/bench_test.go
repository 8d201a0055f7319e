package docker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ccrun/ccrun/runtime/job"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
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

// step is one command of a side-by-side benchmark. after, when set, runs
// untimed right after it, and its time is reported apart, as afterName.
type step struct {
	name      string
	run       func()
	after     func()
	afterName string
}

// sideBySide runs every step once in each iteration of b, in an order that
// rotates from one iteration to the next so that the load of a noisy
// machine falls on all alike, and reports the median of each (NAME-ms, and
// the after's). It returns the medians, in the order of steps, and the
// number of iterations. Medians: on a shared machine a few runs stall for
// seconds, and a mean would report the stalls.
func sideBySide(b *testing.B, steps []step) (med []time.Duration, n int) {
	b.Helper()
	took := make([][]time.Duration, len(steps))
	after := make([][]time.Duration, len(steps))
	for b.Loop() {
		for j := range steps {
			i := (n + j) % len(steps)
			t0 := time.Now()
			steps[i].run()
			took[i] = append(took[i], time.Since(t0))
			if steps[i].after != nil {
				b.StopTimer()
				t1 := time.Now()
				steps[i].after()
				after[i] = append(after[i], time.Since(t1))
				b.StartTimer()
			}
		}
		n++
	}
	median := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for i, st := range steps {
		med = append(med, median(took[i]))
		b.ReportMetric(ms(med[i]), st.name+"-ms")
		if st.after != nil {
			b.ReportMetric(ms(median(after[i])), st.afterName+"-ms")
		}
	}
	return med, n
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
		return command(b, "", nil, docker, append(append([]string{"run", "--rm"}, flags...), testImage, "/bin/busybox", "true")...)
	}
	med, n := sideBySide(b, []step{
		{name: "cold", run: func() { benchRun(b, e, cold) }},
		{name: "cli", run: cli("--network", "none")},
		{name: "hardened-cli", run: cli(hardenedFlags...)},
		// The pooled run's background work: refill, removal.
		{name: "pool", run: func() { benchRun(b, e, pool) }, after: e.bgWork.Wait, afterName: "pool-bg"},
	})
	if pooled := e.pooledRuns.Load(); pooled < int64(n) {
		b.Fatalf("%d of %d pooled runs found an idle container", pooled, n)
	}
	ratio := func(x, y int) float64 { return float64(med[x]) / float64(med[y]) }
	b.ReportMetric(ratio(0, 1), "cold/cli")
	b.ReportMetric(ratio(3, 1), "pool/cli")
	b.ReportMetric(ratio(0, 2), "cold/hardened-cli")
}

// BenchmarkCLISideBySide times whole `ccrun exec` processes, the figures a
// user gets without flags, against `docker run --rm --network none`, in
// every iteration in an order that rotates from one to the next:
//
//   - cli: `docker run --rm --network none IMG /bin/busybox true`;
//   - cold: `ccrun exec --approve once --docker IMG -- /bin/busybox true`;
//   - pool: `ccrun exec --approve once bench-pool`, a capability with
//     "pool": true in a temporary project, each run finding the idle
//     container its previous run's refiller made (waited for outside the
//     timing, and reported apart as pool-wait);
//   - exec: `docker exec` of the same program into a started container as
//     hardened as a pooled one, the floor of a pooled run.
//
// The ccrun binary is $CCRUN_BIN (`make bench-docker` builds it and sets
// it); without it the benchmark skips. With $CCRUN_BIN_BASE too (another
// build, say of the last commit), its cold and pooled runs are interleaved
// with the rest as base-cold and base-pool. Each binary's pool lives under
// a cache directory of its own (XDG_CACHE_HOME), so it finds only its own
// containers; they are removed at the end. It reports each median and
// cold/cli, pool/cli, exec/cli (and base-cold/cli, base-pool/cli).
func BenchmarkCLISideBySide(b *testing.B) {
	bin := os.Getenv("CCRUN_BIN")
	if bin == "" {
		b.Skip("CCRUN_BIN not set: the path of the ccrun binary to time (make bench-docker sets it)")
	}
	executor(b) // skips without an engine
	docker, err := exec.LookPath("docker")
	if err != nil {
		b.Skip("no docker CLI")
	}
	var pe *Executor // the first binary's pool, for the exec floor
	ccrun := func(prefix, bin string) []step {
		cache, proj := b.TempDir(), b.TempDir()
		capDir := filepath.Join(proj, ".ccrun", "capabilities", "bench-pool")
		if err := os.MkdirAll(capDir, 0o755); err != nil {
			b.Fatal(err)
		}
		manifest := fmt.Sprintf(`{"name": "bench-pool", "description": "true, pooled", "environment": "@docker", "pool": true,
  "entry": {"image": %q, "command": ["/bin/busybox", "true"]}}`, testImage)
		if err := os.WriteFile(filepath.Join(capDir, "capability.json"), []byte(manifest), 0o644); err != nil {
			b.Fatal(err)
		}
		e, err := New(context.Background(), WithPoolDir(filepath.Join(cache, "ccrun")))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { e.DrainPool(context.Background()); e.Close() })
		if pe == nil {
			pe = e
		}
		env := append(os.Environ(), "XDG_CACHE_HOME="+cache)
		pooled := command(b, proj, env, bin, "exec", "--approve", "once", "bench-pool")
		last := ""
		waitIdle := func() { last = waitPoolIdle(b, e, cache, last) }
		pooled() // fill the pool
		waitIdle()
		return []step{
			{name: prefix + "cold", run: command(b, proj, env, bin, "exec", "--approve", "once", "--docker", testImage, "--", "/bin/busybox", "true")},
			{name: prefix + "pool", run: pooled, after: waitIdle, afterName: prefix + "pool-wait"},
		}
	}
	steps := []step{{name: "cli", run: command(b, "", nil, docker, "run", "--rm", "--network", "none", testImage, "/bin/busybox", "true")}}
	steps = append(steps, ccrun("", bin)...)
	base := os.Getenv("CCRUN_BIN_BASE")
	if base != "" {
		steps = append(steps, ccrun("base-", base)...)
	}
	// The floor: an exec into a started container, hardened as a pooled one.
	prog, err := pe.onceFile()
	if err != nil {
		b.Skip("no warm-pool program here: ", err)
	}
	cfg, hc := poolConfig(Spec{Image: testImage}, job.Limits{}.WithDefaults(), prog, pe.labels())
	id, err := pe.create(context.Background(), cfg, hc, "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pe.remove(context.Background(), id) })
	if err := pe.eng.ContainerStart(context.Background(), id, container.StartOptions{}); err != nil {
		b.Fatal(err)
	}
	steps = append(steps, step{name: "exec", run: command(b, "", nil, docker, "exec", "-u", DefaultUser, id, "/bin/busybox", "true")})

	med, _ := sideBySide(b, steps)
	for i, st := range steps[1:] {
		b.ReportMetric(float64(med[i+1])/float64(med[0]), st.name+"/cli")
	}
}

// command returns a function that runs name with args in dir (default:
// this process's) with env (default: this process's), failing b when it
// fails.
func command(b *testing.B, dir string, env []string, name string, args ...string) func() {
	return func() {
		c := exec.Command(name, args...)
		c.Dir, c.Env = dir, env
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("%s %v: %v: %s", name, args, err, out)
		}
	}
}

// waitPoolIdle waits until the pool of the ccrun whose cache directory is
// cache has an idle container other than last (which the pooled run that
// just ended must have used), and none used left (the refiller removes the
// used one), and returns its id. In use or used: named as claimed, or with
// a claim marker.
func waitPoolIdle(b *testing.B, e *Executor, cache, last string) string {
	b.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		list, err := e.eng.ContainerList(context.Background(), container.ListOptions{All: true,
			Filters: filters.NewArgs(filters.Arg("label", LabelPool))})
		if err != nil {
			b.Fatal(err)
		}
		var idleIDs []string
		usedN := 0
		for _, c := range list {
			ours := false
			for _, m := range c.Mounts {
				ours = ours || strings.HasPrefix(m.Source, cache)
			}
			_, err := os.Stat(filepath.Join(cache, "ccrun", "claims", c.ID))
			switch {
			case !ours:
			case idle(c) && err != nil && c.ID != last:
				idleIDs = append(idleIDs, c.ID)
			default:
				usedN++
			}
		}
		if len(idleIDs) > 0 && usedN == 0 {
			return idleIDs[0]
		}
		if time.Now().After(deadline) {
			b.Fatalf("no fresh idle pooled container after a minute (%d idle, %d used or in use; the last run's %.12s still idle means it ran cold)", len(idleIDs), usedN, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkArm64SideBySide is BenchmarkSideBySide for an arm64 engine,
// here under emulation (qemu-user-static by binfmt_misc; see arm64Image):
// in every iteration, in a rotating order, a cold Run and a pooled Run
// (refilled outside the timing) of the arm64 test image with once taken
// to be arm64's, as an arm64 machine's engine says (all of the
// container's code emulated, as all of it is arm64 code there), `docker
// run --rm --network none --platform linux/arm64` of the same, and a
// pooled Run of this engine's own once in the arm64 image
// (pool-native-once). Emulated absolute times are not comparable to
// native ones; the ratios are: pool/cold, pool/cli (goal at most 0.15, as
// natively), cold/cli.
func BenchmarkArm64SideBySide(b *testing.B) {
	img := arm64Image(b)
	e := executor(b, withEngineArch("aarch64"))
	native := executor(b)
	docker, err := exec.LookPath("docker")
	if err != nil {
		b.Skip("no docker CLI")
	}
	cold := Spec{Image: img, Cmd: trueCmd}
	pool := Spec{Image: img, Cmd: trueCmd, Pool: true}
	b.Cleanup(func() { e.DrainPool(context.Background()); native.DrainPool(context.Background()) })
	for _, x := range []*Executor{e, native} {
		benchRun(b, x, pool)
		x.bgWork.Wait()
	}
	med, n := sideBySide(b, []step{
		{name: "cold", run: func() { benchRun(b, e, cold) }},
		{name: "cli", run: command(b, "", nil, docker, "run", "--rm", "--network", "none", "--platform", "linux/arm64", img, "/bin/busybox", "true")},
		{name: "pool", run: func() { benchRun(b, e, pool) }, after: e.bgWork.Wait, afterName: "pool-bg"},
		{name: "pool-native-once", run: func() { benchRun(b, native, pool) }, after: native.bgWork.Wait, afterName: "pool-native-once-bg"},
	})
	if e.pooledRuns.Load() < int64(n) || native.pooledRuns.Load() < int64(n) {
		b.Fatalf("%d and %d of %d pooled runs found an idle container", e.pooledRuns.Load(), native.pooledRuns.Load(), n)
	}
	ratio := func(x, y int) float64 { return float64(med[x]) / float64(med[y]) }
	b.ReportMetric(ratio(2, 0), "pool/cold")
	b.ReportMetric(ratio(2, 1), "pool/cli")
	b.ReportMetric(ratio(0, 1), "cold/cli")
	b.ReportMetric(ratio(3, 1), "pool-native-once/cli")
}
