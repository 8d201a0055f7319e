package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ccrun/ccrun/cmd/ccrun/internal/handoff"
)

// benchPair is the front and the whole ccrun to measure: CCRUN_BENCH_BIN,
// a front with its ccrun-full beside it (make bench-shell gives make
// build's), else builtPair's. A before/after (CCRUN_BENCH_BASE) differs
// by ~0.3 ms between two copies of one binary here: the order the commands
// run in weighs that much.
func benchPair(b *testing.B) (front, full string) {
	if bin := os.Getenv("CCRUN_BENCH_BIN"); bin != "" {
		return bin, filepath.Join(filepath.Dir(bin), handoff.FullName)
	}
	return builtPair(b)
}

// BenchmarkShellTrue compares, side by side in one run, a whole
// `ccrun exec --shell true` process (parse, key, gate, audit, run) with
// `sh -c true`, `ccrun version` (what starting the process costs), and a
// command the front hands over (`ccrun capability list`), for what `make
// build` gives: the front (bin/ccrun, cmd/ccrun/front) and the whole ccrun
// (bin/ccrun-full, what `go install` gives). They run in turn within each
// iteration, in a rotating order, so that a change of the machine's load
// hits them alike; each is reported as its median wall time (…-ms).
// overhead-ms is the median of the front's exec − sh over the iterations
// (issue 15's goal: at most 3 ms), whole-overhead-ms the same for the
// whole ccrun, handoff-ms the median of the front's capability list − the
// whole ccrun's (what the hand-over costs). CCRUN_BENCH_BASE names another
// build of the front (its ccrun-full beside it), run in turn with the
// others: base-overhead-ms and base-handoff-ms. The front measured is
// benchPair's.
func BenchmarkShellTrue(b *testing.B) {
	front, full := benchPair(b)
	dir := b.TempDir()
	type variant struct {
		name string
		argv []string
	}
	variants := []variant{
		{"ccrun-exec", []string{front, "exec", "--approve", "once", "--shell", "true"}},
		{"sh-c", []string{"sh", "-c", "true"}},
		{"ccrun-version", []string{front, "version"}},
		{"whole-exec", []string{full, "exec", "--approve", "once", "--shell", "true"}},
		{"whole-version", []string{full, "version"}},
		{"ccrun-handed", []string{front, "capability", "list"}},
		{"whole-handed", []string{full, "capability", "list"}},
	}
	if base := os.Getenv("CCRUN_BENCH_BASE"); base != "" { // another build, for a before/after
		variants = append(variants,
			variant{"base-exec", []string{base, "exec", "--approve", "once", "--shell", "true"}},
			variant{"base-handed", []string{base, "capability", "list"}})
	}
	wall := make([][]time.Duration, len(variants))
	for i := 0; i < b.N; i++ {
		for j := range variants {
			v := (i + j) % len(variants)
			cmd := exec.Command(variants[v].argv[0], variants[v].argv[1:]...)
			cmd.Dir = dir
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%q: %v\n%s", cmd.Args, err, out)
			}
			wall[v] = append(wall[v], time.Since(start))
		}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	diff := func(a, o int) float64 {
		var d []time.Duration
		for i := range wall[a] {
			d = append(d, wall[a][i]-wall[o][i])
		}
		return ms(median(d))
	}
	b.ReportMetric(diff(0, 1), "overhead-ms")
	b.ReportMetric(diff(3, 1), "whole-overhead-ms")
	b.ReportMetric(diff(5, 6), "handoff-ms")
	if len(variants) > 7 {
		b.ReportMetric(diff(7, 1), "base-overhead-ms")
		b.ReportMetric(diff(8, 6), "base-handoff-ms")
	}
	for v := range variants {
		b.ReportMetric(ms(median(slices.Clone(wall[v]))), variants[v].name+"-ms")
	}
}

// BenchmarkGitStatus measures what the kernel layer costs a read-only
// command: `ccrun exec --shell 'git status'` confined (Landlock, the
// default for a command nobody approved as such), the same with the kernel
// layer off (CCRUN_LANDLOCK=off; an allow rule lets it run, since without
// the kernel layer git is asked), `sh -c 'git status'`, and `ccrun exec
// --shell true` (builtins only: it builds no ruleset). The four run in
// turn within each iteration, in a rotating order, so that a change of the
// machine's load hits them alike; each is reported as its median wall time
// (…-ms) and its median CPU time, children included (…-cpu-ms).
// layer-ms is the median of confined − unconfined over the iterations,
// the ruleset's cost per run (issue 10's goal: at most 1 ms); layer-cpu-ms
// the same in CPU time, which the load disturbs less.
func BenchmarkGitStatus(b *testing.B) {
	bin, _ := benchPair(b)
	dir := b.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "--allow-empty", "-m", "x"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	gitStatus := []string{bin, "exec", "--allow", "run_command:git:status", "--shell", "git status"}
	variants := []struct {
		name string
		env  []string
		argv []string
	}{
		{"confined", nil, gitStatus},
		{"unconfined", []string{"CCRUN_LANDLOCK=off"}, gitStatus},
		{"sh-c", nil, []string{"sh", "-c", "git status"}},
		{"true", nil, []string{bin, "exec", "--shell", "true"}},
	}
	wall := make([][]time.Duration, len(variants))
	cpu := make([][]time.Duration, len(variants))
	for i := 0; i < b.N; i++ {
		for j := range variants {
			v := (i + j) % len(variants)
			cmd := exec.Command(variants[v].argv[0], variants[v].argv[1:]...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), variants[v].env...)
			start := time.Now()
			out, err := cmd.CombinedOutput()
			if err != nil {
				b.Fatalf("%s: %q: %v\n%s", variants[v].name, cmd.Args, err, out)
			}
			wall[v] = append(wall[v], time.Since(start))
			// wait4's rusage counts the children ccrun waited for (git)
			cpu[v] = append(cpu[v], cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
		}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for v := range variants {
		b.ReportMetric(ms(median(wall[v])), variants[v].name+"-ms")
		b.ReportMetric(ms(median(cpu[v])), variants[v].name+"-cpu-ms")
	}
	diff := func(xs [][]time.Duration) time.Duration {
		var d []time.Duration
		for i := range xs[0] {
			d = append(d, xs[0][i]-xs[1][i])
		}
		return median(d)
	}
	b.ReportMetric(ms(diff(wall)), "layer-ms")
	b.ReportMetric(ms(diff(cpu)), "layer-cpu-ms")
}

// median of ds (which it sorts).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// BenchmarkWorkspace measures what the workspace tier costs an approved
// command: `ccrun exec --approve once --shell 'true'` and `… 'make -v'`
// in the tier (the default) against the same with "shell": {"sandbox":
// "off"} in the user's settings, in a git repository, side by side in a
// rotating order. true-tier-ms and make-tier-ms are the medians of
// tier − off over the iterations (issue 23's goal: at most 1 ms each).
func BenchmarkWorkspace(b *testing.B) {
	bin, _ := benchPair(b)
	dir := b.TempDir()
	if out, err := exec.Command("git", "-C", dir, "init", "-q").CombinedOutput(); err != nil {
		b.Fatalf("git init: %v: %s", err, out)
	}
	off := b.TempDir()
	if err := os.MkdirAll(filepath.Join(off, "ccrun"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(off, "ccrun", "config.json"), []byte(`{"shell": {"sandbox": "off"}}`), 0o644); err != nil {
		b.Fatal(err)
	}
	on := b.TempDir()
	variants := []struct {
		name string
		env  []string
		argv []string
	}{
		{"true-tier", []string{"XDG_CONFIG_HOME=" + on}, []string{bin, "exec", "--approve", "once", "--shell", "true"}},
		{"true-off", []string{"XDG_CONFIG_HOME=" + off}, []string{bin, "exec", "--approve", "once", "--shell", "true"}},
		{"make-tier", []string{"XDG_CONFIG_HOME=" + on}, []string{bin, "exec", "--approve", "once", "--shell", "make -v"}},
		{"make-off", []string{"XDG_CONFIG_HOME=" + off}, []string{bin, "exec", "--approve", "once", "--shell", "make -v"}},
	}
	wall := make([][]time.Duration, len(variants))
	for i := 0; i < b.N; i++ {
		for j := range variants {
			v := (i + j) % len(variants)
			cmd := exec.Command(variants[v].argv[0], variants[v].argv[1:]...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), variants[v].env...)
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%s: %v\n%s", variants[v].name, err, out)
			}
			wall[v] = append(wall[v], time.Since(start))
		}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	diff := func(a, o int) time.Duration {
		var d []time.Duration
		for i := range wall[a] {
			d = append(d, wall[a][i]-wall[o][i])
		}
		return median(d)
	}
	for v := range variants {
		b.ReportMetric(ms(median(slices.Clone(wall[v]))), variants[v].name+"-ms")
	}
	b.ReportMetric(ms(diff(0, 1)), "true-cost-ms")
	b.ReportMetric(ms(diff(2, 3)), "make-cost-ms")
}

// BenchmarkWorkspaceGoBuild measures what the workspace tier costs a build:
// `ccrun exec --approve once --shell 'go build -o /dev/null .'` of a
// module of 50 files (one package, 20 functions each) in the tier, with
// the Go build cache named writable in the user's settings ("shell":
// {"writable": [CACHE]}), against the same with "shell": {"sandbox":
// "off"}, side by side in a rotating order. Before each build a file of
// the package changes, so that every build compiles the package and
// links (the standard library comes from the cache, warmed first). ratio
// is the median of tier / off over the iterations (goal: at most 1.03),
// tier-ms and off-ms the medians of each, and …-cpu-ms the CPU time,
// children included. Skipped where no go command is found.
func BenchmarkWorkspaceGoBuild(b *testing.B) {
	bin, _ := benchPair(b)
	goCmd, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go command on PATH")
	}
	dir := b.TempDir()
	if out, err := exec.Command("git", "-C", dir, "init", "-q").CombinedOutput(); err != nil {
		b.Fatalf("git init: %v: %s", err, out)
	}
	files := map[string]string{"go.mod": "module example.com/m\n\ngo 1.22\n"}
	for i := range 50 {
		var src strings.Builder
		src.WriteString("package main\n\n")
		for j := range 20 {
			fmt.Fprintf(&src, "func f%d_%d(x int) int {\n\ts := 0\n\tfor k := 0; k < x; k++ {\n\t\ts += k * %d\n\t}\n\treturn s + %d\n}\n\n", i, j, j, i)
		}
		if i == 0 {
			src.WriteString("func main() { println(f0_1(3), v) }\n")
		}
		files[fmt.Sprintf("p%d.go", i)] = src.String()
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cache := b.TempDir()
	settings := map[string]string{
		"tier": fmt.Sprintf(`{"shell": {"writable": [%q]}}`, cache),
		"off":  `{"shell": {"sandbox": "off"}}`,
	}
	config := map[string]string{}
	for name, s := range settings {
		config[name] = b.TempDir()
		if err := os.MkdirAll(filepath.Join(config[name], "ccrun"), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(config[name], "ccrun", "config.json"), []byte(s), 0o644); err != nil {
			b.Fatal(err)
		}
		// no telemetry counters written beside the settings in one
		// variant and refused in the other
		tel := exec.Command(goCmd, "telemetry", "off")
		tel.Env = append(os.Environ(), "XDG_CONFIG_HOME="+config[name])
		_ = tel.Run()
	}
	names := []string{"tier", "off"}
	build := 0
	run := func(name string) (wall, cpu time.Duration) {
		build++
		if err := os.WriteFile(filepath.Join(dir, "v.go"), fmt.Appendf(nil, "package main\n\nconst v = %d\n", build), 0o644); err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(bin, "exec", "--approve", "once", "--shell", "go build -o /dev/null .")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+config[name], "XDG_CACHE_HOME="+cache)
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", name, err, out)
		}
		return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	for _, name := range names {
		run(name) // the standard library into the cache
	}
	wall := map[string][]time.Duration{}
	cpu := map[string][]time.Duration{}
	var ratios []float64
	for i := 0; i < b.N; i++ {
		got := map[string]time.Duration{}
		for j := range names {
			name := names[(i+j)%len(names)]
			w, c := run(name)
			got[name] = w
			wall[name] = append(wall[name], w)
			cpu[name] = append(cpu[name], c)
		}
		ratios = append(ratios, float64(got["tier"])/float64(got["off"]))
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for _, name := range names {
		b.ReportMetric(ms(median(wall[name])), name+"-ms")
		b.ReportMetric(ms(median(cpu[name])), name+"-cpu-ms")
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "ratio")
}
