//go:build linux

package shell

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ccrun/ccrun/internal/confine"
)

// BenchmarkNetStart: a workspace-tier run of /bin/true with a network
// allowlist (its namespace and proxy made, and closed, for the run) and
// without one, side by side, the order alternating; the p50 of each, and
// what the allowlist adds at p50:
//
//	go test -run '^$' -bench NetStart -benchtime 200x ./runtime/shell/
func BenchmarkNetStart(b *testing.B) {
	if _, err := ConfineAvailable(); err != nil {
		b.Skipf("no landlock: %v", err)
	}
	if ns, err := confine.NewNetNS(); err != nil {
		b.Skipf("no network namespace here: %v", err)
	} else {
		ns.Close()
	}
	e := newExecutor(b)
	home, project := b.TempDir(), b.TempDir()
	c, _, err := WorkspaceConfinement(home, project, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Discard)
	with := *c
	with.Net = &Net{Allow: []string{"registry.npmjs.org"}}
	script := parse(b, "/bin/true")
	times := map[string][]time.Duration{}
	run := func(name string, conf *Confinement) {
		start := time.Now()
		res, err := e.Run(context.Background(), Spec{Script: script, Dir: project, Confine: conf})
		if err != nil || !res.OK() {
			b.Fatalf("%s: %v, %v", name, res, err)
		}
		times[name] = append(times[name], time.Since(start))
	}
	for i := 0; b.Loop(); i++ {
		without := *c // a copy each: a run removes its Temp, none is set here
		without.Temp, with.Temp = "", ""
		if i%2 == 0 {
			run("without", &without)
			run("with", &with)
		} else {
			run("with", &with)
			run("without", &without)
		}
	}
	p50 := func(name string) float64 {
		ts := times[name]
		slices.Sort(ts)
		return float64(ts[len(ts)/2].Microseconds())
	}
	b.ReportMetric(p50("without"), "without-p50-µs")
	b.ReportMetric(p50("with"), "with-p50-µs")
	b.ReportMetric(p50("with")-p50("without"), "added-p50-µs")
}
