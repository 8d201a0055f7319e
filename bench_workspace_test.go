package ccrun_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkWorkspaceBeforeAfter measures the workspace tier's cost, as
// cmd/ccrun's BenchmarkWorkspace does (`ccrun exec --approve once
// --shell 'true'` and `… 'make -v'` in the tier against the same with
// "shell": {"sandbox": "off"}), for two builds side by side in one run:
// CCRUN_BENCH_BIN (this one) and CCRUN_BENCH_BASE (another, for a
// before/after), each a front with its ccrun-full beside it, every
// variant in turn within an iteration in a rotating order. X-cost-ms is
// the median of tier − off over the iterations (issue 23's goal: at most
// 1 ms). Skipped without both.
func BenchmarkWorkspaceBeforeAfter(b *testing.B) {
	bins := map[string]string{"new": os.Getenv("CCRUN_BENCH_BIN"), "base": os.Getenv("CCRUN_BENCH_BASE")}
	if bins["new"] == "" || bins["base"] == "" {
		b.Skip("CCRUN_BENCH_BIN and CCRUN_BENCH_BASE name the two builds")
	}
	for k, bin := range bins { // a relative path is the repository's: the commands run elsewhere
		abs, err := filepath.Abs(bin)
		if err != nil {
			b.Fatal(err)
		}
		bins[k] = abs
	}
	dir := b.TempDir()
	if out, err := exec.Command("git", "-C", dir, "init", "-q").CombinedOutput(); err != nil {
		b.Fatalf("git init: %v: %s", err, out)
	}
	off, on := b.TempDir(), b.TempDir()
	if err := os.MkdirAll(filepath.Join(off, "ccrun"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(off, "ccrun", "config.json"), []byte(`{"shell": {"sandbox": "off"}}`), 0o644); err != nil {
		b.Fatal(err)
	}
	type variant struct {
		name string
		env  string
		argv []string
	}
	var vs []variant
	for _, build := range []string{"new", "base"} {
		for _, cmd := range []string{"true", "make -v"} {
			name := build + "-" + map[string]string{"true": "true", "make -v": "make"}[cmd]
			vs = append(vs,
				variant{name + "-tier", "XDG_CONFIG_HOME=" + on, []string{bins[build], "exec", "--approve", "once", "--shell", cmd}},
				variant{name + "-off", "XDG_CONFIG_HOME=" + off, []string{bins[build], "exec", "--approve", "once", "--shell", cmd}})
		}
	}
	wall := make([][]time.Duration, len(vs))
	for i := 0; i < b.N; i++ {
		for j := range vs {
			v := (i + j) % len(vs)
			cmd := exec.Command(vs[v].argv[0], vs[v].argv[1:]...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), vs[v].env)
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%s: %v\n%s", vs[v].name, err, out)
			}
			wall[v] = append(wall[v], time.Since(start))
		}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	med := func(ds []time.Duration) time.Duration {
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	for k := 0; k < len(vs); k += 2 {
		var d []time.Duration
		for i := range wall[k] {
			d = append(d, wall[k][i]-wall[k+1][i])
		}
		b.ReportMetric(ms(med(wall[k])), vs[k].name+"-ms")
		b.ReportMetric(ms(med(d)), vs[k].name[:len(vs[k].name)-len("-tier")]+"-cost-ms")
	}
}
