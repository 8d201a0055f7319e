package docker

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
)

// pooled lists the containers of the pool for key, idle or not.
func pooled(t *testing.T, e *Executor, key string) (idleIDs, busy []string) {
	t.Helper()
	list, err := e.eng.ContainerList(context.Background(), container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", LabelPool+"="+key)),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		if idle(c) {
			idleIDs = append(idleIDs, c.ID)
		} else {
			busy = append(busy, c.ID)
		}
	}
	return idleIDs, busy
}

func keyOf(t *testing.T, e *Executor, s Spec) string {
	t.Helper()
	cfg, hc := s.config(s.Limits.WithDefaults(), nil)
	key, err := e.poolKey(context.Background(), s, cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func TestPool(t *testing.T) {
	dir := t.TempDir()
	first := executor(t, WithPoolDir(dir))
	marker := fmt.Sprintf("pool-%d-%s", os.Getpid(), randHex(4))
	s := Spec{Image: testImage, Cmd: sh("echo " + marker), Pool: true}
	key := keyOf(t, first, s)
	t.Cleanup(func() { first.DrainPool(context.Background()) })

	// Cold: nothing waits; the run leaves one idle container behind.
	if res := run(t, first, s); string(res.Stdout) != marker+"\n" {
		t.Fatalf("cold pooled run: stdout %q", res.Stdout)
	}
	first.refills.Wait()
	idle1, busy := pooled(t, first, key)
	if len(idle1) != 1 || len(busy) != 0 {
		t.Fatalf("after the first run: idle %v, busy %v; want 1 idle, none busy", idle1, busy)
	}

	// A second Executor (another ccrun process, as far as the pool can
	// tell) claims it, and leaves a fresh one.
	second := executor(t, WithPoolDir(dir))
	if res := run(t, second, s); string(res.Stdout) != marker+"\n" {
		t.Fatalf("warm run: stdout %q", res.Stdout)
	}
	second.refills.Wait()
	idle2, busy := pooled(t, second, key)
	if len(idle2) != 1 || len(busy) != 0 || idle2[0] == idle1[0] {
		t.Fatalf("after the warm run: idle %v (was %v), busy %v; want 1 fresh idle, none busy", idle2, idle1, busy)
	}

	// GC leaves the idle container; DrainPool removes it.
	if removed, err := second.GC(context.Background()); err != nil || contains(removed, idle2[0]) {
		t.Fatalf("GC = %v, %v; want the idle pool container kept", removed, err)
	}
	if removed, err := second.DrainPool(context.Background()); err != nil || !contains(removed, idle2[0]) {
		t.Fatalf("DrainPool = %v, %v; want %s removed", removed, err, idle2[0])
	}
}

// TestPoolHammer: concurrent runs of one pooled Spec each run exactly once
// in a container of their own.
func TestPoolHammer(t *testing.T) {
	e := executor(t)
	t.Parallel()
	marker := fmt.Sprintf("hammer-%d-%s", os.Getpid(), randHex(4))
	s := Spec{Image: testImage, Cmd: sh("echo " + marker + " $(hostname)"), Pool: true}
	key := keyOf(t, e, s)
	t.Cleanup(func() { e.DrainPool(context.Background()) })
	const n = 8
	var wg sync.WaitGroup
	hosts := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.Run(context.Background(), s)
			if err != nil {
				t.Error(err)
				return
			}
			f := strings.Fields(string(res.Stdout))
			if len(f) != 2 || f[0] != marker {
				t.Errorf("stdout %q", res.Stdout)
				return
			}
			hosts[i] = f[1]
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, h := range hosts {
		if h != "" && seen[h] {
			t.Errorf("two runs shared container %s", h)
		}
		seen[h] = true
	}
	e.refills.Wait()
	if _, busy := pooled(t, e, key); len(busy) != 0 {
		t.Errorf("%d pooled containers left besides the idle ones", len(busy))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
