//go:build linux

package wasm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ccrun/ccrun/runtime/job"
)

// raceDuration is how long each swap race runs: long enough for thousands
// of writes by the guest and hundreds of thousands of swaps.
const raceDuration = 10 * time.Second

// newRaceTree makes, under a fresh directory, the repository whose .git
// the races aim at (dir/.git/config, dir/.git/hooks/) and the ordinary
// directory x/ with a hooks/ of its own beside it.
func newRaceTree(t *testing.T, dir string) {
	t.Helper()
	for _, err := range []error{
		os.MkdirAll(filepath.Join(dir, ".git", "hooks"), 0o755),
		os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("ORIGINAL"), 0o644),
		os.WriteFile(filepath.Join(dir, ".git", "hooks", "pre-push"), []byte("ORIGINAL"), 0o755),
		os.MkdirAll(filepath.Join(dir, "x", "hooks"), 0o755),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// raceCounts parses the race-write guest's "DONE: wrote N refused M".
func raceCounts(t *testing.T, out string) (wrote, refused int) {
	t.Helper()
	if _, err := fmt.Sscanf(out, "DONE: wrote %d refused %d", &wrote, &refused); err != nil {
		t.Fatalf("guest: %q: %v", out, err)
	}
	return wrote, refused
}

// checkRace fails when anything under dir/.git changed, or when no write
// reached the ordinary directory (x, or y after a swap).
func checkRace(t *testing.T, dir string, before map[string]string, wrote, refused int) {
	t.Helper()
	if d := diff(before, snapshot(t, filepath.Join(dir, ".git"))); d != "" {
		t.Errorf(".git changed (%d writes landed, %d refused):\n%s", wrote, refused, d)
	}
	if wrote+refused < 2000 {
		t.Errorf("only %d writes tried in %s, want thousands", wrote+refused, raceDuration)
	}
	if wrote == 0 {
		t.Errorf("no write landed (%d refused): ordinary writes must still work", refused)
	}
	landed := false
	for _, d := range []string{"x", "y", "z"} {
		real := filepath.Join(dir, d)
		if st, err := os.Lstat(real); err != nil || !st.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(real, "config"))
		_, herr := os.Stat(filepath.Join(real, "hooks", "pre-commit"))
		landed = err == nil && string(b) == "PLANTED\n" && herr == nil
	}
	if !landed {
		t.Errorf("the writes did not land in the ordinary directory")
	}
	t.Logf("%d writes landed in the ordinary directory, %d refused", wrote, refused)
}

// TestSwapRace: a guest writes x/config and creates x/hooks/pre-commit
// through a writable mount over and over while another writer swaps the
// directory x with a link y -> .git. Each open is resolved component by
// component from the mount's root and checked on what that walk reached,
// so no write lands in .git, whatever the other writer does between the
// check and the open; the writes to x still land.
func TestSwapRace(t *testing.T) {
	t.Parallel()

	// The other writer is a host thread the mount's lock does not cover,
	// swapping atomically with renameat2(RENAME_EXCHANGE): x is always
	// either the directory or the link, never missing.
	t.Run("host process", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		newRaceTree(t, dir)
		if err := os.Symlink(".git", filepath.Join(dir, "y")); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, filepath.Join(dir, ".git"))
		x, y := filepath.Join(dir, "x"), filepath.Join(dir, "y")
		var stop atomic.Bool
		var swaps int
		var swapErr error
		var wg sync.WaitGroup
		wg.Go(func() {
			for !stop.Load() {
				if err := unix.Renameat2(unix.AT_FDCWD, x, unix.AT_FDCWD, y, unix.RENAME_EXCHANGE); err != nil {
					swapErr = err
					return
				}
				swaps++
			}
		})
		res, err := shared.Run(context.Background(), Spec{Module: guests["escape"], Name: "escape",
			Args:   []string{"race-write", "/m", fmt.Sprint(raceDuration.Seconds())},
			Mounts: []job.Mount{{Host: dir, Guest: "/m", Writable: true}}})
		stop.Store(true)
		wg.Wait()
		if swapErr != nil {
			t.Fatalf("swap: %v", swapErr)
		}
		if err != nil || res.Reason != job.Exit || res.ExitCode != 0 {
			t.Fatalf("run: %v %+v %s", err, res, res.Stderr)
		}
		wrote, refused := raceCounts(t, strings.TrimSpace(string(res.Stdout)))
		t.Logf("%d swaps", swaps)
		checkRace(t, dir, before, wrote, refused)
	})

	// The other writer is a second ccrun sandbox, in a worker process,
	// run at the same time with the inner directory sub mounted writable:
	// its mount's lock is not the first one's, and it swaps with WASI
	// renames (x to z, the link y to x, back). The first sandbox has the
	// outer directory and writes sub/x/...; the target is sub/.git.
	t.Run("second sandbox", func(t *testing.T) {
		t.Parallel()
		top := t.TempDir()
		dir := filepath.Join(top, "sub")
		newRaceTree(t, dir)
		before := snapshot(t, filepath.Join(dir, ".git"))
		other := newWorkerExecutor(t)
		var swapRes *job.Result
		var swapErr error
		var wg sync.WaitGroup
		wg.Go(func() {
			swapRes, swapErr = other.Run(context.Background(), Spec{Module: guests["escape"], Name: "escape",
				Args:   []string{"race-swap", "/s", fmt.Sprint(raceDuration.Seconds()), ".git"},
				Mounts: []job.Mount{{Host: dir, Guest: "/s", Writable: true}}})
		})
		res, err := shared.Run(context.Background(), Spec{Module: guests["escape"], Name: "escape",
			Args:   []string{"race-write", "/m/sub", fmt.Sprint(raceDuration.Seconds())},
			Mounts: []job.Mount{{Host: top, Guest: "/m", Writable: true}}})
		wg.Wait()
		if swapErr != nil || swapRes.Reason != job.Exit || swapRes.ExitCode != 0 ||
			!strings.HasPrefix(string(swapRes.Stdout), "DONE") {
			t.Fatalf("the swapping sandbox: %v %+v %s", swapErr, swapRes, swapRes.Stderr)
		}
		if err != nil || res.Reason != job.Exit || res.ExitCode != 0 {
			t.Fatalf("run: %v %+v %s", err, res, res.Stderr)
		}
		wrote, refused := raceCounts(t, strings.TrimSpace(string(res.Stdout)))
		t.Logf("the swapping sandbox: %s", strings.TrimSpace(string(swapRes.Stdout)))
		checkRace(t, dir, before, wrote, refused)
	})
}
