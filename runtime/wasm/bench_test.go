package wasm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ccrun/ccrun/runtime/job"
)

// The figures of docs/wasm.md: go test -run '^$' -bench . -benchtime 20x ./runtime/wasm/

func benchExecutor(b *testing.B, opts ...Option) *Executor {
	b.Helper()
	e, err := New(context.Background(), append([]Option{WithCacheDir(sharedCache)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close(context.Background()) })
	return e
}

func workerOpt(b *testing.B) Option {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	return WithWorkerProcess(exe)
}

// runTimed runs s b.N times (after one warm-up run) and reports the median.
func runTimed(b *testing.B, e *Executor, s Spec) {
	b.Helper()
	if res, err := e.Run(context.Background(), s); err != nil || !res.OK() {
		b.Fatalf("warm-up: %v %+v", err, res)
	}
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t := time.Now()
		res, err := e.Run(context.Background(), s)
		ds = append(ds, time.Since(t))
		if err != nil || !res.OK() {
			b.Fatalf("%v %+v", err, res)
		}
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
}

// BenchmarkHello is one warm run of the Go-built hello module.
func BenchmarkHello(b *testing.B) {
	b.Run("in-process", func(b *testing.B) { runTimed(b, benchExecutor(b), Spec{Module: guests["hello"]}) })
	b.Run("in-process-path", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "hello.wasm")
		if err := os.WriteFile(path, guests["hello"], 0o644); err != nil {
			b.Fatal(err)
		}
		runTimed(b, benchExecutor(b), Spec{Path: path})
	})
	b.Run("worker", func(b *testing.B) { runTimed(b, benchExecutor(b, workerOpt(b)), Spec{Module: guests["hello"]}) })
}

// BenchmarkParallel is runs per second of the hello module on every core.
func BenchmarkParallel(b *testing.B) {
	e := benchExecutor(b)
	s := Spec{Module: guests["hello"]}
	if _, err := e.Run(context.Background(), s); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if res, err := e.Run(context.Background(), s); err != nil || !res.OK() {
				b.Errorf("%v %+v", err, res)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
}

// BenchmarkCPU is a CPU-bound guest (spin 20000: 20 million xorshift
// rounds): unenforced (no interrupt checks, cannot be stopped), enforced
// by wazero's checks, and enforced by a killable worker process.
func BenchmarkCPU(b *testing.B) {
	s := probe("spin", "20000")
	b.Run("unenforced", func(b *testing.B) { runTimed(b, benchExecutor(b, WithInterrupt(false)), s) })
	b.Run("interrupt-checks", func(b *testing.B) { runTimed(b, benchExecutor(b), s) })
	b.Run("worker", func(b *testing.B) { runTimed(b, benchExecutor(b, workerOpt(b)), s) })
}

// BenchmarkCPULong is a ten times longer CPU-bound guest, where the
// worker's fixed start-up cost weighs less.
func BenchmarkCPULong(b *testing.B) {
	s := probe("spin", "200000")
	b.Run("unenforced", func(b *testing.B) { runTimed(b, benchExecutor(b, WithInterrupt(false)), s) })
	b.Run("worker", func(b *testing.B) { runTimed(b, benchExecutor(b, workerOpt(b)), s) })
}

// BenchmarkEnforcedRatio runs the long CPU-bound guest unenforced and in
// a worker (which enforces the timeout) one after the other in every
// iteration, and reports the ratio of their medians: the goal is
// at most 1.5.
func BenchmarkEnforcedRatio(b *testing.B) {
	s := probe("spin", "200000")
	free, worker := benchExecutor(b, WithInterrupt(false)), benchExecutor(b, workerOpt(b))
	var a, w []time.Duration
	for b.Loop() {
		for _, r := range []struct {
			e  *Executor
			ds *[]time.Duration
		}{{free, &a}, {worker, &w}} {
			t := time.Now()
			res, err := r.e.Run(context.Background(), s)
			*r.ds = append(*r.ds, time.Since(t))
			if err != nil || !res.OK() {
				b.Fatalf("%v %+v", err, res)
			}
		}
	}
	median := func(ds []time.Duration) time.Duration { slices.Sort(ds); return ds[len(ds)/2] }
	b.ReportMetric(float64(median(w))/float64(median(a)), "worker/unenforced")
}

// BenchmarkTimeout measures how long past its 200ms timeout a guest
// looping forever runs before Run returns.
func BenchmarkTimeout(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts func(*testing.B) []Option
	}{
		{"interrupt-checks", func(*testing.B) []Option { return nil }},
		{"worker", func(b *testing.B) []Option { return []Option{workerOpt(b)} }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			e := benchExecutor(b, tc.opts(b)...)
			s := probe("forever")
			s.Limits.Timeout = 200 * time.Millisecond
			var worst time.Duration
			for b.Loop() {
				res, err := e.Run(context.Background(), s)
				if err != nil || res.Reason != job.Timeout {
					b.Fatalf("%v %+v", err, res)
				}
				worst = max(worst, res.Duration-s.Limits.Timeout)
			}
			b.ReportMetric(float64(worst.Microseconds())/1000, "worst-overshoot-ms")
		})
	}
}

// writeLoopFiles is how many files BenchmarkWriteLoop writes per run.
const writeLoopFiles = 10_000

// BenchmarkWriteLoop is the @wasm write path: one run of a guest writing
// writeLoopFiles small files (100 directories of 100) through a writable
// mount, every open resolved and checked against the protected paths.
// "create" starts from an empty mount; "overwrite" writes the same files
// again. The figure of docs/wasm.md ("Writable mounts"):
//
//	go test -run '^$' -bench WriteLoop -benchtime 10x ./runtime/wasm/
func BenchmarkWriteLoop(b *testing.B) {
	e := benchExecutor(b)
	spec := func(dir string) Spec {
		return Spec{Module: guests["probe"], Name: "probe", Args: []string{"write", fmt.Sprint(writeLoopFiles), "/w"},
			Mounts: []job.Mount{{Host: dir, Guest: "/w", Writable: true}}}
	}
	run := func(b *testing.B, s Spec) time.Duration {
		t := time.Now()
		res, err := e.Run(context.Background(), s)
		d := time.Since(t)
		if err != nil || !res.OK() {
			b.Fatalf("%v %+v %s", err, res, res.Stdout)
		}
		return d
	}
	if res, err := e.Run(context.Background(), probe("args")); err != nil || !res.OK() {
		b.Fatalf("warm-up: %v %+v", err, res)
	}
	for _, tc := range []struct {
		name  string
		fresh bool // a new, empty mount for each run
	}{{"create", true}, {"overwrite", false}} {
		b.Run(tc.name, func(b *testing.B) {
			dir := b.TempDir()
			if !tc.fresh {
				run(b, spec(dir))
			}
			var ds []time.Duration
			for b.Loop() {
				d := dir
				if tc.fresh {
					b.StopTimer()
					d = b.TempDir()
					b.StartTimer()
				}
				ds = append(ds, run(b, spec(d)))
			}
			slices.Sort(ds)
			b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/writeLoopFiles/1000, "µs/file")
		})
	}
}
