package mountlock_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ccrun/ccrun/internal/mountlock"
	"github.com/ccrun/ccrun/internal/testimage"
	"github.com/ccrun/ccrun/runtime/docker"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm"
)

// The engines' runs of `hold` (testdata/wasm/probe): write started-ID in
// the mount, wait until the test writes go-ID, write ended-ID; exit 3 when
// another run's started-X without its ended-X is there.

// holdScript is hold for a busybox container: $1 is the ID.
const holdScript = `cd /m || exit 1
overlap() {
	for f in started-*; do
		[ -e "$f" ] || continue
		x=${f#started-}
		[ "$x" = "$1" ] || [ -e "ended-$x" ] || { echo "overlap $x"; exit 3; }
	done
}
overlap "$1"
: > "started-$1" || exit 1
while [ ! -e "go-$1" ]; do sleep 0.005; done
overlap "$1"
: > "ended-$1" || exit 1
echo "held $1"`

// engine runs hold with dir mounted rw at /m.
type engine func(ctx context.Context, dir, id string) (*job.Result, error)

var (
	guestOnce sync.Once
	guest     []byte
	guestErr  error
)

func wasmEngine(t *testing.T) engine { return wasmWith(t) }

// wasmWorker runs the guest in a worker process (a child of this test
// binary, TestMain).
func wasmWorker(t *testing.T) engine {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return wasmWith(t, wasm.WithWorkerProcess(exe))
}

// wasmServer runs the guest in a warm server this test binary starts
// (TestMain), on a socket of its own.
func wasmServer(t *testing.T) engine {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "ccrun-sock-") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return wasmWith(t, wasm.WithServer(filepath.Join(dir, "run", "wasm.sock"), exe))
}

func wasmWith(t *testing.T, opts ...wasm.Option) engine {
	t.Helper()
	guestOnce.Do(func() {
		_, self, _, _ := runtime.Caller(0)
		out := filepath.Join(t.TempDir(), "probe.wasm")
		cmd := exec.Command("go", "build", "-o", out, ".")
		cmd.Dir = filepath.Join(filepath.Dir(self), "..", "..", "testdata", "wasm", "probe")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			guestErr = err
			t.Logf("%s", b)
			return
		}
		guest, guestErr = os.ReadFile(out)
	})
	if guestErr != nil {
		t.Fatal(guestErr)
	}
	ctx := context.Background()
	e, err := wasm.New(ctx, append([]wasm.Option{wasm.WithCacheDir(testCache)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(ctx) })
	return func(ctx context.Context, dir, id string) (*job.Result, error) {
		return e.Run(ctx, wasm.Spec{Module: guest, Args: []string{"hold", "/m", id},
			Mounts: []job.Mount{{Host: dir, Guest: "/m", Writable: true}}, Limits: job.Limits{Timeout: 2 * time.Minute}})
	}
}

var (
	dockerOnce sync.Once
	dockerErr  error
)

func dockerEngine(t *testing.T) engine {
	t.Helper()
	dockerOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		dockerErr = testimage.Ensure(ctx)
	})
	if dockerErr != nil {
		testimage.NoEngine(t, dockerErr)
	}
	e, err := docker.New(context.Background(), docker.WithPoolDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return func(ctx context.Context, dir, id string) (*job.Result, error) {
		return e.Run(ctx, docker.Spec{Image: testimage.Name, Cmd: []string{"/bin/busybox", "sh", "-c", holdScript, "sh", id},
			Mounts: []job.Mount{{Host: dir, Guest: "/m", Writable: true}}, Limits: job.Limits{Timeout: 2 * time.Minute}})
	}
}

type ended struct {
	res *job.Result
	err error
}

// start runs hold in the background.
func start(ctx context.Context, run engine, dir, id string) <-chan ended {
	c := make(chan ended, 1)
	go func() {
		res, err := run(ctx, dir, id)
		c <- ended{res, err}
	}()
	return c
}

// mountDir is a new directory a container's user (65534) may write too.
func mountDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

func exists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

// await waits (at most 2 min) until dir/name exists, failing early when
// the run c ends first.
func await(t *testing.T, dir, name string, c <-chan ended) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !exists(dir, name); time.Sleep(5 * time.Millisecond) {
		select {
		case e := <-c:
			t.Fatalf("the run ended before %s appeared: %+v, %v", name, e.res, e.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 2 min", name)
		}
	}
}

func release(t *testing.T, dir, id string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "go-"+id), nil, 0o666); err != nil {
		t.Fatal(err)
	}
}

// held checks that the run c of hold ended well.
func held(t *testing.T, c <-chan ended, id string) *job.Result {
	t.Helper()
	var e ended
	select {
	case e = <-c:
	case <-time.After(2 * time.Minute):
		t.Fatalf("run %s did not end", id)
	}
	if e.err != nil || !e.res.OK() || strings.TrimSpace(string(e.res.Stdout)) != "held "+id {
		t.Fatalf("run %s: %+v (stdout %q, stderr %q), %v", id, e.res, e.res.Stdout, e.res.Stderr, e.err)
	}
	return e.res
}

// engines are the ways to run hold. The WaitFunc of a run in a worker or
// the server is not told (it waits in another process): those hold only.
func engines(t *testing.T) map[string]func(*testing.T) engine {
	return map[string]func(*testing.T) engine{"wasm": wasmEngine, "docker": dockerEngine,
		"wasm-worker": wasmWorker, "wasm-server": wasmServer}
}

// TestEnginesOneWriter: while a run of one engine has a directory mounted
// rw, a run of any engine with the same directory waits, and starts once
// the first has ended. Deterministic: the first run holds until the test
// lets it go, which it does only once the second is seen waiting and not
// started.
func TestEnginesOneWriter(t *testing.T) {
	for _, pair := range [][2]string{{"wasm", "wasm"}, {"wasm", "docker"}, {"docker", "wasm"}, {"docker", "docker"},
		{"wasm-worker", "wasm"}, {"wasm-worker", "docker"}, {"wasm-server", "wasm"}, {"wasm-server", "docker"}} {
		t.Run(pair[0]+"_then_"+pair[1], func(t *testing.T) {
			first, second := engines(t)[pair[0]](t), engines(t)[pair[1]](t)
			dir := mountDir(t)
			a := start(context.Background(), first, dir, "a")
			await(t, dir, "started-a", a)

			waiting := make(chan string, 1)
			ctx := mountlock.WithWaitFunc(context.Background(), func(d string, w bool) {
				if w {
					waiting <- d
				}
			})
			b := start(ctx, second, dir, "b")
			select {
			case d := <-waiting:
				if d != dir {
					t.Errorf("waited for %s, want %s", d, dir)
				}
			case e := <-b:
				t.Fatalf("the second run did not wait: %+v, %v", e.res, e.err)
			case <-time.After(2 * time.Minute):
				t.Fatal("the second run neither waited nor ended")
			}
			if exists(dir, "started-b") {
				t.Fatal("the second run started while the first held the directory")
			}
			release(t, dir, "a")
			held(t, a, "a")
			await(t, dir, "started-b", b)
			release(t, dir, "b")
			res := held(t, b, "b")
			if !strings.Contains(res.Detail, "waited ") || !strings.Contains(res.Detail, dir) {
				t.Errorf("the second run's Detail = %q, want the wait", res.Detail)
			}
		})
	}
}

// TestEnginesApart: runs with different directories mounted rw run at
// once: the second starts and ends while the first holds its own.
func TestEnginesApart(t *testing.T) {
	for _, pair := range [][2]string{{"wasm", "wasm"}, {"wasm", "docker"}, {"docker", "wasm"}} {
		t.Run(pair[0]+"_and_"+pair[1], func(t *testing.T) {
			first, second := engines(t)[pair[0]](t), engines(t)[pair[1]](t)
			one, two := mountDir(t), mountDir(t)
			a := start(context.Background(), first, one, "a")
			await(t, one, "started-a", a)
			ctx := mountlock.WithWaitFunc(context.Background(), func(d string, w bool) {
				if w {
					t.Errorf("a run of another directory waits for %s", d)
				}
			})
			b := start(ctx, second, two, "b")
			await(t, two, "started-b", b)
			release(t, two, "b")
			if res := held(t, b, "b"); strings.Contains(res.Detail, "waited") {
				t.Errorf("Detail = %q", res.Detail)
			}
			select {
			case e := <-a:
				t.Fatalf("the first run ended before it was let go: %+v, %v", e.res, e.err)
			default:
			}
			release(t, one, "a")
			held(t, a, "a")
		})
	}
}

// TestEnginesCancelWaiter: a run waiting for another's directory whose
// caller gives up returns at once, Cancelled, its program never started.
func TestEnginesCancelWaiter(t *testing.T) {
	for _, name := range []string{"wasm", "docker"} {
		t.Run(name, func(t *testing.T) {
			holder, waiter := wasmEngine(t), engines(t)[name](t)
			dir := mountDir(t)
			a := start(context.Background(), holder, dir, "a")
			await(t, dir, "started-a", a)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var cancelled time.Time
			ctx = mountlock.WithWaitFunc(ctx, func(_ string, w bool) {
				if w {
					cancelled = time.Now()
					cancel()
				}
			})
			res, err := waiter(ctx, dir, "b")
			took := time.Since(cancelled)
			if err != nil || res.Reason != job.Cancelled || !strings.Contains(res.Detail, "before the program started") {
				t.Errorf("cancelled waiter: %+v, %v; want Cancelled before the program started", res, err)
			}
			if took > 2*time.Second {
				t.Errorf("returned %s after the cancel", took)
			}
			if exists(dir, "started-b") {
				t.Error("the cancelled run's program started")
			}
			release(t, dir, "a")
			held(t, a, "a")
		})
	}
}

// TestEnginesMountMoved: a @wasm run whose mount is moved away from
// outside while it runs says so in its Detail.
func TestEnginesMountMoved(t *testing.T) {
	run := wasmEngine(t)
	base := t.TempDir()
	dir := filepath.Join(base, "p")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	a := start(context.Background(), run, dir, "a")
	await(t, dir, "started-a", a)
	moved := filepath.Join(base, "moved")
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	release(t, moved, "a") // the guest's mount went with the directory
	res := held(t, a, "a")
	if !strings.Contains(res.Detail, "changed under the run from outside") {
		t.Errorf("Detail = %q, want the change", res.Detail)
	}
}
