package mountlock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun/runtime/job"
)

func rw(dirs ...string) []job.Mount {
	var ms []job.Mount
	for i, d := range dirs {
		ms = append(ms, job.Mount{Host: d, Guest: fmt.Sprintf("/m%d", i), Writable: true})
	}
	return ms
}

var limits = job.Limits{Timeout: time.Minute}.WithDefaults()

// mustBegin takes the locks of ms, failing the test when the run would
// wait for them.
func mustBegin(t *testing.T, ms []job.Mount) *Lock {
	t.Helper()
	ctx := WithWaitFunc(context.Background(), func(dir string, waiting bool) {
		if waiting {
			t.Errorf("waits for %s", dir)
		}
	})
	lk, res, err := Begin(ctx, ms, limits, time.Now())
	if lk == nil {
		t.Fatalf("Begin(%v) = %v, %v", ms, res, err)
	}
	t.Cleanup(func() { lk.End(nil, nil) }) // a test that fails holds nothing after
	return lk
}

// blocked reports whether a run with mounts ms waits: it is cancelled as
// soon as it starts waiting, and must then end Cancelled without locks.
func blocked(t *testing.T, ms []job.Mount) (bool, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waitedFor := ""
	ctx = WithWaitFunc(ctx, func(dir string, waiting bool) {
		if waiting {
			waitedFor = dir
			cancel()
		}
	})
	lk, res, err := Begin(ctx, ms, limits, time.Now())
	if err != nil {
		t.Fatalf("Begin(%v): %v", ms, err)
	}
	if lk != nil {
		if _, err := lk.End(nil, nil); err != nil {
			t.Fatal(err)
		}
		return false, ""
	}
	if res.Reason != job.Cancelled || res.ExitCode != job.KilledExitCode || !strings.Contains(res.Detail, waitedFor) {
		t.Errorf("a cancelled wait ended %+v, want Cancelled naming %s", res, waitedFor)
	}
	return true, waitedFor
}

// tree makes p, p/sub, p/a, p/b and q in a new directory, and a link to p.
func tree(t *testing.T) (base string) {
	t.Helper()
	base = t.TempDir()
	for _, d := range []string{"p/sub/deep", "p/a", "p/b", "q"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("p", filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	return base
}

// TestConflicts: while one run writes a directory, which other runs wait.
func TestConflicts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		first       []string // writable mounts of the run that holds
		second      []job.Mount
		wait        bool
		waitFor     string // the directory the second waits for
		firstIsRead bool   // first is read-only
	}{
		{name: "same directory", first: []string{"p"}, second: rw("p"), wait: true, waitFor: "p"},
		{name: "through a link", first: []string{"p"}, second: rw("link"), wait: true, waitFor: "p"},
		{name: "inside it", first: []string{"p"}, second: rw("p/sub"), wait: true, waitFor: "p"},
		{name: "deep inside it", first: []string{"p"}, second: rw("p/sub/deep"), wait: true, waitFor: "p"},
		{name: "above it", first: []string{"p/sub"}, second: rw("p"), wait: true, waitFor: "p"},
		{name: "two levels above", first: []string{"p/sub/deep"}, second: rw("p"), wait: true, waitFor: "p"},
		{name: "one of two mounts", first: []string{"q"}, second: rw("p/a", "q"), wait: true, waitFor: "q"},
		{name: "siblings", first: []string{"p/a"}, second: rw("p/b")},
		{name: "beside it", first: []string{"p"}, second: rw("q")},
		{name: "a child beside a child", first: []string{"p/sub"}, second: rw("p/a")},
		{name: "read-only second", first: []string{"p"}, second: []job.Mount{{Host: "p", Guest: "/m"}}},
		{name: "read-only first", first: []string{"p"}, firstIsRead: true, second: rw("p")},
		{name: "missing directory", first: []string{"p"}, second: rw("nothing")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := tree(t)
			at := func(ms []job.Mount) []job.Mount {
				out := make([]job.Mount, len(ms))
				for i, m := range ms {
					m.Host = filepath.Join(base, m.Host)
					out[i] = m
				}
				return out
			}
			first := at(rw(tc.first...))
			if tc.firstIsRead {
				first[0].Writable = false
			}
			lk := mustBegin(t, first)
			got, dir := blocked(t, at(tc.second))
			if got != tc.wait {
				t.Fatalf("second run waits: %v, want %v", got, tc.wait)
			}
			if want := filepath.Join(base, tc.waitFor); tc.wait && dir != want {
				t.Errorf("waited for %s, want %s", dir, want)
			}
			if _, err := lk.End(nil, nil); err != nil {
				t.Fatal(err)
			}
			// Once the first run is over, the second never waits.
			mustBegin(t, at(tc.second)).End(nil, nil)
		})
	}
}

// TestOwnMounts: a run whose mounts nest, or repeat, does not wait for
// itself.
func TestOwnMounts(t *testing.T) {
	t.Parallel()
	base := tree(t)
	p := filepath.Join(base, "p")
	lk := mustBegin(t, rw(p, filepath.Join(p, "sub"), p, filepath.Join(base, "link")))
	if res, err := lk.End(&job.Result{}, nil); err != nil || res.Detail != "" {
		t.Errorf("End = %+v, %v; want no note", res, err)
	}
}

// TestWaits: a second run waits until the first is over, then runs and
// says it waited.
func TestWaits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := mustBegin(t, rw(dir))
	waiting := make(chan struct{})
	var ended atomic.Bool
	ctx := WithWaitFunc(context.Background(), func(d string, w bool) {
		if w {
			close(waiting)
		} else if !ended.Load() {
			t.Errorf("the wait ended before the first run did")
		}
	})
	type begun struct {
		lk  *Lock
		res *job.Result
		err error
	}
	done := make(chan begun, 1)
	go func() {
		lk, res, err := Begin(ctx, rw(dir), limits, time.Now())
		done <- begun{lk, res, err}
	}()
	select {
	case <-waiting:
	case b := <-done:
		t.Fatalf("the second run got its lock while the first held it: %+v", b)
	}
	ended.Store(true)
	first.End(nil, nil)
	b := <-done
	if b.lk == nil {
		t.Fatalf("second run: %+v, %v", b.res, b.err)
	}
	res, _ := b.lk.End(&job.Result{Reason: job.Exit, Detail: "trap"}, nil)
	if !strings.HasPrefix(res.Detail, "trap; waited ") || !strings.Contains(res.Detail, "another sandboxed run that writes "+dir) {
		t.Errorf("Detail = %q, want the wait after the engine's own note", res.Detail)
	}
	_, err := (&Lock{waited: time.Second, busy: dir}).End(nil, errors.New("boom"))
	if err == nil || !strings.Contains(err.Error(), "boom (waited 1s for another sandboxed run that writes "+dir+")") {
		t.Errorf("with no Result, the note goes to the error: %v", err)
	}
}

// TestCancelPromptly: a waiting run whose context ends returns at once,
// Cancelled, holding nothing.
func TestCancelPromptly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := mustBegin(t, rw(dir))
	defer first.End(nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan struct{})
	ctx = WithWaitFunc(ctx, func(_ string, w bool) {
		if w {
			close(waiting)
		}
	})
	type begun struct {
		lk  *Lock
		res *job.Result
		err error
		at  time.Time
	}
	done := make(chan begun, 1)
	go func() {
		lk, res, err := Begin(ctx, rw(dir), job.Limits{Timeout: -1}, time.Now())
		done <- begun{lk, res, err, time.Now()}
	}()
	select {
	case <-waiting:
	case b := <-done:
		t.Fatalf("the second run did not wait: %+v", b)
	}
	time.Sleep(200 * time.Millisecond) // long enough that the polling is at its slowest
	cancelled := time.Now()
	cancel()
	b := <-done
	if b.lk != nil || b.err != nil || b.res.Reason != job.Cancelled || b.res.ExitCode != job.KilledExitCode {
		t.Fatalf("cancelled wait = %+v, %+v, %v; want a Cancelled Result", b.lk, b.res, b.err)
	}
	if took := b.at.Sub(cancelled); took > time.Second {
		t.Errorf("returned %s after the cancel", took)
	}
	if !strings.Contains(b.res.Detail, "before the program started") || !strings.Contains(b.res.Detail, dir) || b.res.Duration < 200*time.Millisecond {
		t.Errorf("Result = %+v", b.res)
	}
}

// TestWaitBounded: a run waits at most its timeout, then ends Timeout
// without starting.
func TestWaitBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := mustBegin(t, rw(dir))
	defer first.End(nil, nil)
	lim := job.Limits{Timeout: 100 * time.Millisecond}.WithDefaults()
	start := time.Now()
	lk, res, err := Begin(context.Background(), rw(dir), lim, start)
	if lk != nil || err != nil {
		t.Fatalf("Begin = %v, %v; want a Timeout Result", lk, err)
	}
	if res.Reason != job.Timeout || res.ExitCode != job.TimeoutExit || !strings.Contains(res.Detail, "before the program started") || !strings.Contains(res.Detail, dir) {
		t.Errorf("Result = %+v", res)
	}
	if took := time.Since(start); took < lim.Timeout || took > 5*time.Second {
		t.Errorf("waited %s for a timeout of %s", took, lim.Timeout)
	}
}

// TestOtherProcess: a lock held by another process keeps a run waiting,
// until that process lets go.
func TestOtherProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), HoldEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "locked\n" {
		t.Fatalf("child: %q", line)
	}
	if waits, _ := blocked(t, rw(dir)); !waits {
		t.Fatal("a run does not wait for the lock another process holds")
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	mustBegin(t, rw(dir)).End(nil, nil)
}

// TestChangedFromOutside: a mount whose directory is moved, removed or
// replaced during the run, or whose path leads elsewhere at its end, is
// named in the Detail; one left alone is not.
func TestChangedFromOutside(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		change func(base string) error
		want   string // in the Detail; "" none
	}{
		{name: "written inside", change: func(base string) error {
			return os.WriteFile(filepath.Join(base, "p", "f"), []byte("x"), 0o644)
		}},
		{name: "moved away", change: func(base string) error {
			return os.Rename(filepath.Join(base, "p"), filepath.Join(base, "gone"))
		}, want: "moved or removed"},
		{name: "replaced", change: func(base string) error {
			if err := os.Rename(filepath.Join(base, "p"), filepath.Join(base, "old")); err != nil {
				return err
			}
			return os.Mkdir(filepath.Join(base, "p"), 0o755)
		}, want: "changed under the run from outside"},
		{name: "removed", change: func(base string) error {
			return os.RemoveAll(filepath.Join(base, "p"))
		}, want: "changed under the run from outside"},
		{name: "a directory above replaced", change: func(base string) error {
			up := filepath.Join(base, "up")
			if err := os.Rename(up, filepath.Join(base, "up.old")); err != nil {
				return err
			}
			return os.MkdirAll(filepath.Join(up, "p"), 0o755)
		}, want: "was replaced by another"},
		{name: "link changed", change: func(base string) error {
			if err := os.Remove(filepath.Join(base, "link")); err != nil {
				return err
			}
			return os.Symlink("q", filepath.Join(base, "link"))
		}, want: "leads to"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := tree(t)
			if err := os.MkdirAll(filepath.Join(base, "up", "p"), 0o755); err != nil {
				t.Fatal(err)
			}
			ms := rw(filepath.Join(base, "p"))
			switch tc.name {
			case "link changed":
				ms = rw(filepath.Join(base, "link"))
			case "a directory above replaced":
				ms = rw(filepath.Join(base, "up", "p"))
			}
			lk := mustBegin(t, ms)
			if err := tc.change(base); err != nil {
				t.Fatal(err)
			}
			res, _ := lk.End(&job.Result{}, nil)
			if tc.want == "" && res.Detail != "" || !strings.Contains(res.Detail, tc.want) {
				t.Errorf("Detail = %q, want %q", res.Detail, tc.want)
			}
		})
	}
}

// TestMovedAndBack: a mount moved away and back during the run (the path
// leads to the same directory at the end) is seen by the watch.
func TestMovedAndBack(t *testing.T) {
	t.Parallel()
	base := tree(t)
	p := filepath.Join(base, "p")
	lk := mustBegin(t, rw(p))
	if err := os.Rename(p, p+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".away", p); err != nil {
		t.Fatal(err)
	}
	res, _ := lk.End(&job.Result{}, nil)
	if runtime.GOOS == "linux" && !strings.Contains(res.Detail, "was moved or removed during the run") {
		t.Errorf("Detail = %q, want the move", res.Detail)
	}
}

// TestMovedAndBackShared: the runs of one process share one inotify
// instance, and each is told of its own root only: of two runs at once,
// the one whose root was moved away and back says so, the other not; a
// run after both ends, on the moved root again, starts with no move
// (what was queued for the earlier watches is not its). BeginUnwatched's
// run is not told of such a move (documented).
func TestMovedAndBackShared(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("inotify")
	}
	base := tree(t)
	p, q := filepath.Join(base, "p"), filepath.Join(base, "q")
	moveBack := func() {
		if err := os.Rename(p, p+".away"); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p+".away", p); err != nil {
			t.Fatal(err)
		}
	}
	lp, lq := mustBegin(t, rw(p)), mustBegin(t, rw(q))
	moveBack()
	rp, _ := lp.End(&job.Result{}, nil)
	rq, _ := lq.End(&job.Result{}, nil)
	if !strings.Contains(rp.Detail, "was moved or removed during the run") || rq.Detail != "" {
		t.Errorf("moved p: %q; q: %q", rp.Detail, rq.Detail)
	}
	again := mustBegin(t, rw(p))
	if res, _ := again.End(&job.Result{}, nil); res.Detail != "" {
		t.Errorf("a later run of p: %q", res.Detail)
	}
	un, _, err := BeginUnwatched(context.Background(), rw(p), job.Limits{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	moveBack()
	if res, _ := un.End(&job.Result{}, nil); res.Detail != "" {
		t.Errorf("unwatched: %q", res.Detail)
	}
}

// TestLockFileRemoved: a lock file removed while its run holds it (a
// second run can then lock a new one) is named when the first run ends.
func TestLockFileRemoved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lk := mustBegin(t, rw(dir))
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := idOf(fi)
	if err := os.Remove(filepath.Join(Dir(), lockName(id))); err != nil {
		t.Fatal(err)
	}
	second := mustBegin(t, rw(dir)) // locks a new file
	second.End(nil, nil)
	res, _ := lk.End(&job.Result{}, nil)
	if !strings.Contains(res.Detail, "the lock file of "+dir+" was removed or replaced") {
		t.Errorf("Detail = %q", res.Detail)
	}
}

// TestUnsafeDir: a lock directory others may write, or a link, refuses
// the run (ErrPermissionDenied); a run without a writable mount does not
// look at it.
func TestUnsafeDir(t *testing.T) {
	// Not parallel: it changes XDG_STATE_HOME.
	dir := t.TempDir()
	for name, setup := range map[string]func(state string) error{
		"writable by others": func(state string) error {
			if err := os.MkdirAll(filepath.Join(state, "ccrun", "locks"), 0o700); err != nil {
				return err
			}
			return os.Chmod(filepath.Join(state, "ccrun", "locks"), 0o777)
		},
		"a link": func(state string) error {
			if err := os.MkdirAll(filepath.Join(state, "ccrun"), 0o700); err != nil {
				return err
			}
			return os.Symlink(t.TempDir(), filepath.Join(state, "ccrun", "locks"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			state := t.TempDir()
			if err := setup(state); err != nil {
				t.Fatal(err)
			}
			t.Setenv("XDG_STATE_HOME", state)
			lk, res, err := Begin(context.Background(), rw(dir), limits, time.Now())
			if lk != nil || res != nil || !errors.Is(err, errdefs.ErrPermissionDenied) {
				t.Fatalf("Begin = %v, %v, %v; want ErrPermissionDenied", lk, res, err)
			}
			if lk, _, err := Begin(context.Background(), []job.Mount{{Host: dir, Guest: "/m"}}, limits, time.Now()); lk == nil || err != nil {
				t.Fatalf("read-only: Begin = %v, %v", lk, err)
			}
		})
	}
}

// TestHammer: runs over overlapping directories, at random, never write a
// directory while another run writes it, or one inside or above it.
func TestHammer(t *testing.T) {
	t.Parallel()
	base := tree(t)
	dirs := []string{"p", "p/sub", "p/sub/deep", "p/a", "p/b", "q", "link"}
	// writing[d] counts the runs that write d (links resolved).
	var mu sync.Mutex
	writing := map[string]int{}
	real := func(d string) string {
		r, err := filepath.EvalSymlinks(filepath.Join(base, d))
		if err != nil {
			t.Error(err)
		}
		return r
	}
	overlaps := func(a, b string) bool {
		return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 100 {
				var mine []string
				var ms []job.Mount
				for range 1 + r.IntN(2) {
					d := dirs[r.IntN(len(dirs))]
					mine = append(mine, real(d))
					ms = append(ms, rw(filepath.Join(base, d))...)
				}
				lk, res, err := Begin(context.Background(), ms, limits, time.Now())
				if lk == nil {
					t.Errorf("Begin: %v, %v", res, err)
					return
				}
				mu.Lock()
				for _, d := range mine {
					for other, n := range writing {
						if n > 0 && overlaps(d, other) {
							t.Errorf("%s written while another run writes %s", d, other)
						}
					}
				}
				for _, d := range mine {
					writing[d]++
				}
				mu.Unlock()
				time.Sleep(time.Duration(r.IntN(200)) * time.Microsecond)
				mu.Lock()
				for _, d := range mine {
					writing[d]--
				}
				mu.Unlock()
				lk.End(nil, nil)
			}
		}()
	}
	wg.Wait()
}
