package kube

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ccrun/ccrun/internal/registrytest"
	"k8s.io/client-go/rest"
)

// countingTransport counts the requests an Executor makes.
type countingTransport struct {
	n    atomic.Int64
	next http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// counted is an Executor whose API requests are counted: requests
// returns the requests made so far (attach and exec sessions included) and
// reset starts the count again.
func counted(b *testing.B, opts ...Option) (e *Executor, requests func() int64, reset func()) {
	e0 := newTest(b, opts...)
	ct := &countingTransport{}
	cfg := rest.CopyConfig(e0.cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { ct.next = rt; return ct })
	e, err := New(context.Background(), append([]Option{WithNamespace(testNamespace), withConfigWrap(cfg, e0.cfg)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e, func() int64 { return ct.n.Load() + e.sessions.Load() }, func() { ct.n.Store(0); e.sessions.Store(0) }
}

// kubectl is the kubectl built with the test cluster, else the one on PATH.
func kubectl() string {
	dir := os.Getenv("CCRUN_K8S_DIR")
	if dir == "" {
		dir = "/var/tmp/ccrun-k8s"
	}
	if p := filepath.Join(dir, "bin", "kubectl"); fileExists(p) {
		return p
	}
	return "kubectl"
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// BenchmarkColdVsKubectl: a cold call `true` against `kubectl run --rm -i
// --restart=Never` of the same image on the same cluster (goal: at most
// 0.8 of it). Reports ms of each, the ratio and API requests per call.
func BenchmarkColdVsKubectl(b *testing.B) {
	e, reqs, reset := counted(b)
	s := spec("true")
	if _, err := e.Run(context.Background(), s); err != nil { // the ConfigMap, the policy
		b.Fatal(err)
	}
	reset()
	var cold, cli time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		r, err := e.Run(context.Background(), s)
		if err != nil || !r.OK() {
			b.Fatalf("%v %+v", err, r)
		}
		cold += time.Since(t0)
		t1 := time.Now()
		out, err := exec.Command(kubectl(), "--kubeconfig", kubeconfig(b), "-n", testNamespace, "run", "bench-"+randHex(3),
			"--rm", "-i", "--restart=Never", "--image="+testRef, "--image-pull-policy=Never", "--quiet", "--command", "--", busybox, "true").CombinedOutput()
		if err != nil {
			b.Fatalf("kubectl run: %v %s", err, out)
		}
		cli += time.Since(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(cold.Milliseconds())/n, "cold-ms")
	b.ReportMetric(float64(cli.Milliseconds())/n, "kubectl-ms")
	b.ReportMetric(float64(cold)/float64(cli), "cold/kubectl")
	b.ReportMetric(float64(reqs())/n, "requests/call")
}

// BenchmarkWarm: p50 and p99 of warm-pool calls `true`, one after the
// other (the refill has the time of a call to catch up: the pool is 4).
func BenchmarkWarm(b *testing.B) {
	e, reqs, reset := counted(b, WithPool(4))
	s := spec("true")
	s.Pool = true
	s.Limits.Memory, s.Limits.CPUs = 16<<20, 0.1
	ctx := context.Background()
	if err := e.Warm(ctx, s); err != nil {
		b.Fatal(err)
	}
	wp := e.warmPool(s, s.Limits.WithDefaults())
	const calls = 200
	var ds []time.Duration
	warm := e.pooledRuns.Load()
	reset()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < calls; j++ {
			t0 := time.Now()
			r, err := e.Run(ctx, s)
			if err != nil || !r.OK() {
				b.Fatalf("%v %+v", err, r)
			}
			ds = append(ds, time.Since(t0))
			// Each call finds the pool full: wait (uncounted) for the refill.
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				n := 0
				for _, p := range ownPods(b, LabelTemplate+"="+wp.t.key+","+LabelPool+"="+poolWarm) {
					if ready(&p) {
						n++
					}
				}
				if n >= 4 {
					break
				}
			}
		}
	}
	b.StopTimer()
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(e.pooledRuns.Load()-warm)/float64(len(ds)), "warm-fraction")
	b.ReportMetric(float64(reqs())/float64(len(ds)), "requests/call")
	e.DrainPool(ctx)
}

// BenchmarkThroughput: the warm pool's capacity. For each number of
// callers in CCRUN_BENCH_CALLERS (a comma-separated list, default 8), a
// sub-benchmark callers=N runs N callers at once, each calling `true`
// (pooled, 16 MiB, 0.1 CPU) back to back for CCRUN_BENCH_SECONDS
// (default 10) on a pool of CCRUN_BENCH_POOL (default 8) warm pods, filled
// before the clock starts. It reports the calls completed per second, the
// fraction a warm pod served (the rest ran cold: no warm pod was ready),
// the p50 and p99 of a call, the warm pods the refill created per second
// (pods are single-use, so warm calls per second cannot outrun it for
// long), the calls that failed, and API requests per call. The pool is
// drained after each.
func BenchmarkThroughput(b *testing.B) {
	callers := benchInts(b, "CCRUN_BENCH_CALLERS", "8")
	pool := benchInts(b, "CCRUN_BENCH_POOL", "8")[0]
	secs := benchInts(b, "CCRUN_BENCH_SECONDS", "10")[0]
	for _, n := range callers {
		b.Run(fmt.Sprintf("callers=%d", n), func(b *testing.B) {
			e, reqs, reset := counted(b, WithPool(pool))
			s := spec("true")
			s.Pool = true
			s.Limits.Memory, s.Limits.CPUs = 16<<20, 0.1
			ctx := context.Background()
			if err := e.Warm(ctx, s); err != nil {
				b.Fatal(err)
			}
			defer e.DrainPool(ctx)
			for i := 0; i < b.N; i++ {
				reset()
				warm, made := e.pooledRuns.Load(), e.warmMade.Load()
				var (
					mu     sync.Mutex
					ds     []time.Duration
					failed atomic.Int64
				)
				b.ResetTimer()
				t0 := time.Now()
				stop := t0.Add(time.Duration(secs) * time.Second)
				var wg sync.WaitGroup
				for w := 0; w < n; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for time.Now().Before(stop) {
							c0 := time.Now()
							r, err := e.Run(ctx, s)
							d := time.Since(c0)
							if err != nil || !r.OK() {
								failed.Add(1)
								continue
							}
							mu.Lock()
							ds = append(ds, d)
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				el := time.Since(t0)
				b.StopTimer()
				if len(ds) == 0 {
					b.Fatalf("no call completed in %s (%d failed)", el, failed.Load())
				}
				sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
				done := float64(len(ds))
				b.ReportMetric(done/el.Seconds(), "calls/s")
				b.ReportMetric(float64(e.pooledRuns.Load()-warm)/done, "warm-fraction")
				b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(e.warmMade.Load()-made)/el.Seconds(), "refills/s")
				b.ReportMetric(float64(failed.Load()), "failed")
				b.ReportMetric(float64(reqs())/done, "requests/call")
			}
		})
	}
}

// benchInts reads the environment variable name (default def): positive
// whole numbers, comma-separated.
func benchInts(b *testing.B, name, def string) []int {
	v := os.Getenv(name)
	if v == "" {
		v = def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: want positive whole numbers, comma-separated", name, v)
		}
		out = append(out, n)
	}
	return out
}

// BenchmarkColdRegistryVsKubectl: a cold call `true` of an image by tag
// from the registry the test serves on 127.0.0.1, that no node has pulled
// (each call a new image: its manifest and configuration; the busybox
// layer is the nodes' after the first), resolved in the registry once
// allowed (Resolve, PullMissing) and run by digest, against `kubectl run
// --rm -i` of another such image by its tag, side by side (goal: at most
// 0.5 of it). Reports ms of each, the ratio, and the registry's requests
// per call of each.
func BenchmarkColdRegistryVsKubectl(b *testing.B) {
	reg := registrytest.Start(b, registryAddr(b))
	e := newTest(b)
	if _, err := e.Run(context.Background(), spec("true")); err != nil { // the ConfigMap, the policy
		b.Fatal(err)
	}
	repo := reg.Host + "/ccrun-bench-" + randHex(3)
	push := func(i int, who string) string {
		ref := fmt.Sprintf("%s:%s-%d", repo, who, i)
		reg.Push(b, ref, registrytest.BusyboxImage(b, []string{"PATH=/bin", "CCRUN_BENCH=" + ref}, nil))
		return ref
	}
	reg.Push(b, repo+":warmup", registrytest.BusyboxImage(b, nil, nil)) // the layer, on every node after the first pulls
	var cold, cli time.Duration
	var coldReqs, cliReqs int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ours, theirs := push(i, "ccrun"), push(i, "kubectl")
		reg.Reset()
		b.StartTimer()
		t0 := time.Now()
		pinned, err := e.Resolve(context.Background(), ours, PullMissing)
		if err != nil {
			b.Fatal(err)
		}
		r, err := e.Run(context.Background(), Spec{Image: pinned, Cmd: []string{"busybox", "true"}, Pull: PullMissing})
		if err != nil || !r.OK() {
			b.Fatalf("%v %+v", err, r)
		}
		cold += time.Since(t0)
		coldReqs += len(reg.Requests())
		reg.Reset()
		t1 := time.Now()
		out, err := exec.Command(kubectl(), "--kubeconfig", kubeconfig(b), "-n", testNamespace, "run", "bench-"+randHex(3),
			"--rm", "-i", "--restart=Never", "--image="+theirs, "--image-pull-policy=IfNotPresent", "--quiet", "--command", "--", busybox, "true").CombinedOutput()
		if err != nil {
			b.Fatalf("kubectl run: %v %s", err, out)
		}
		cli += time.Since(t1)
		cliReqs += len(reg.Requests())
	}
	n := float64(b.N)
	b.ReportMetric(float64(cold.Milliseconds())/n, "cold-ms")
	b.ReportMetric(float64(cli.Milliseconds())/n, "kubectl-ms")
	b.ReportMetric(float64(cold)/float64(cli), "cold/kubectl")
	b.ReportMetric(float64(coldReqs)/n, "registry-requests/call")
	b.ReportMetric(float64(cliReqs)/n, "kubectl-registry-requests/call")
}
