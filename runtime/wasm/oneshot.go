package wasm

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ccrun/ccrun/runtime/job"
)

// OneShotGrace is how long after a run WithOneShot left running the
// process may take to end by itself before its exit function is called.
const OneShotGrace = 2 * time.Second

// WithOneShot is for a process that exists to run a guest and ends soon
// after (the ccrun CLI: one call, then exit). Guests run in process
// without interrupt checks, at full speed, and the limits still hold:
//
//   - While a guest runs, the garbage collector is off (and GOMAXPROCS at
//     least 2), so that nothing ever waits for the world to stop while the
//     guest is in compiled code, which cannot be stopped. The host's
//     garbage is collected from inside the guest's own calls to the host
//     (output, stdin, sleeps), where the world can stop; a run whose calls
//     make the host allocate over 512 MiB between two such points is
//     stopped as Memory.
//   - A limit (the timeout, the output cap, a cancelled ctx) ends Run at
//     once with its Result, while the guest, which nothing can stop, keeps
//     its thread until the process exits; its output from then on is
//     dropped. The Executor then takes no more runs, Close frees nothing
//     (the guest still uses its memory and code), and the collector stays
//     off.
//   - The process must then end (ccrun: report, audit, os.Exit). If it has
//     not ended OneShotGrace after Run returned, exit is called, from
//     another goroutine, with the Result (without its output), and must end
//     the process with the exit code that Result means.
//
// Not for a process that lives on after a stopped run. Default: off (runs
// in process use interrupt checks: WithInterrupt).
func WithOneShot(exit func(*job.Result)) Option {
	return func(c *config) error {
		if exit == nil {
			return fmt.Errorf("wasm: one-shot without an exit function: %w", ErrInvalidSpec)
		}
		c.oneShot = exit
		c.interrupt = false
		return nil
	}
}

// The host's allocations between two collections in a one-shot run: past
// gcSoft the next call of the guest into the host collects; past gcHard
// the run is stopped.
const (
	gcSoft = 64 << 20
	gcHard = 512 << 20
)

// unchecked is the process-wide state of one-shot runs: the collector is
// off while any runs.
var unchecked struct {
	mu        sync.Mutex
	active    map[*uncheckedRun]bool
	abandoned bool // a guest was left running: the collector stays off
	percent   int
	limit     int64
	stop      chan struct{} // ends the monitor
	procsSet  bool
	lastGC    atomic.Uint64 // /gc/heap/allocs:bytes at the last collection
	wantGC    atomic.Bool
}

// uncheckedRun is one guest running without interrupt checks.
type uncheckedRun struct {
	stop    func()      // stops the run for the host's memory
	stopped atomic.Bool // left running: drop its output, no collections from it
	left    bool        // it left the active runs; guarded by unchecked.mu
}

func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// enterUnchecked turns the collector off for the run (when it is the
// first) and starts the monitor of the host's allocations, which calls
// stop when the host allocated too much.
func enterUnchecked(stop func()) *uncheckedRun {
	r := &uncheckedRun{stop: stop}
	u := &unchecked
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.procsSet {
		// One P for the guest, at least one for everything else (the
		// timer that ends the run); setting it also stops the runtime
		// from changing it later, which would stop the world.
		runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0)))
		u.procsSet = true
	}
	if len(u.active) == 0 && !u.abandoned {
		u.percent = debug.SetGCPercent(-1)
		u.limit = debug.SetMemoryLimit(math.MaxInt64)
		u.lastGC.Store(heapAllocs())
		u.stop = make(chan struct{})
		go monitor(u.stop)
	}
	if u.active == nil {
		u.active = map[*uncheckedRun]bool{}
	}
	u.active[r] = true
	return r
}

// leave ends a run whose guest returned; abandoned says it was left
// running instead. Only the first call counts.
func (r *uncheckedRun) leave(abandoned bool) {
	u := &unchecked
	u.mu.Lock()
	defer u.mu.Unlock()
	if r.left {
		return
	}
	r.left = true
	delete(u.active, r)
	if abandoned {
		r.stopped.Store(true)
		u.abandoned = true
	}
	if len(u.active) == 0 && u.stop != nil {
		close(u.stop)
		u.stop = nil
		if !u.abandoned {
			debug.SetGCPercent(u.percent)
			debug.SetMemoryLimit(u.limit)
		}
	}
}

// monitor watches the host's allocations while the collector is off.
func monitor(stop chan struct{}) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		grown := heapAllocs() - unchecked.lastGC.Load()
		if grown > gcSoft {
			unchecked.wantGC.Store(true)
		}
		if grown > gcHard {
			unchecked.mu.Lock()
			for r := range unchecked.active {
				r.stop()
			}
			unchecked.mu.Unlock()
		}
	}
}

// point is called on the guest's goroutine, inside its calls to the host
// (Go code, where the world can stop): when the host has allocated enough,
// and this is the only guest running (another could be in compiled code),
// it collects.
func (r *uncheckedRun) point() {
	if !unchecked.wantGC.Load() || r.stopped.Load() {
		return
	}
	unchecked.mu.Lock()
	alone := len(unchecked.active) == 1 && unchecked.active[r]
	unchecked.mu.Unlock()
	if !alone {
		return
	}
	unchecked.wantGC.Store(false)
	runtime.GC()
	unchecked.lastGC.Store(heapAllocs())
}

// pointWriter is a guest's output stream in a one-shot run.
type pointWriter struct {
	r *uncheckedRun
	w io.Writer
}

func (p pointWriter) Write(b []byte) (int, error) {
	if p.r.stopped.Load() {
		return len(b), nil // left running: its output goes nowhere
	}
	p.r.point()
	return p.w.Write(b)
}

// pointReader is a guest's stdin in a one-shot run.
type pointReader struct {
	r  *uncheckedRun
	in io.Reader
}

func (p pointReader) Read(b []byte) (int, error) {
	p.r.point()
	return p.in.Read(b)
}

const hostMemoryDetail = "the host allocated over 512 MiB for the guest's calls between two collections"

// abandon leaves the guest of the one-shot run u running, stopped by a
// limit with the Result r (without its output): its output is dropped from
// now on (pointWriter), the Executor takes no more runs, and the exit
// function is armed.
func (e *Executor) abandon(u *uncheckedRun, r job.Result) {
	u.leave(true)
	e.mu.Lock()
	e.abandoned = true
	e.mu.Unlock()
	time.AfterFunc(OneShotGrace, func() { e.oneShot(&r) })
	// A write already past pointWriter's check holds its stream: the
	// Supervisor's Fill then waits for it, which the exit function's
	// deadline bounds.
}
