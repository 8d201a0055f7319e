package ccrun_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/engines"
)

// TestSubscriberCancelsItself: a subscriber that stops itself from inside
// its callback neither deadlocks nor sees a later event; the others go on.
func TestSubscriberCancelsItself(t *testing.T) {
	t.Parallel()
	rt, _, _ := newRuntime(t, ccrun.WithApprover(grant(ceiling.Once)))
	var once, all int
	var cancel func()
	cancel = rt.Subscribe(func(ccrun.Event) {
		once++
		cancel()
	})
	rt.Subscribe(func(ccrun.Event) { all++ })
	// one that subscribes another from inside its callback, once
	var added bool
	rt.Subscribe(func(ccrun.Event) {
		if !added {
			added = true
			rt.Subscribe(func(ccrun.Event) {})
		}
	})
	for range 2 {
		if _, err := rt.Exec(context.Background(), &ccrun.Call{Command: "touch x"}); err != nil {
			t.Fatal(err)
		}
	}
	if once != 1 {
		t.Errorf("the subscriber that cancelled itself saw %d events, want 1", once)
	}
	if all < 2*3 { // validating, scheduled, executing, success: at least three a call
		t.Errorf("the other subscriber saw %d events, want every event of two calls", all)
	}
}

// TestSubAgentCallIDs: a sub-agent's calls are numbered with its parent's,
// whose audit log they share, so no id repeats.
func TestSubAgentCallIDs(t *testing.T) {
	t.Parallel()
	rt, _, _ := newRuntime(t)
	sub, err := rt.SubAgent()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i, r := range []*ccrun.Runtime{rt, sub, rt, sub} {
		// the sub-agent's call is denied (outside its scope), and numbered
		out, _ := r.Exec(context.Background(), &ccrun.Call{Command: "ls"})
		if out == nil || out.ID == "" {
			t.Fatalf("call %d: no id", i)
		}
		if prev, ok := seen[out.ID]; ok {
			t.Fatalf("call %d has id %s, as call %d did", i, out.ID, prev)
		}
		seen[out.ID] = i
	}
}

// TestCheckContext: a cancelled context ends Check's image lookup, the one
// step that reaches an engine; the decision is still taken and says so.
func TestCheckContext(t *testing.T) {
	t.Parallel()
	rt, _, _ := newRuntime(t, engines.Docker())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err := rt.Check(ctx, &ccrun.Call{Image: "busybox", Args: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Decision == nil {
		t.Fatal("no decision")
	}
	found := false
	for _, d := range out.Decision.Diagnostics {
		found = found || strings.Contains(d, "image not resolved")
	}
	if !found {
		t.Errorf("diagnostics %q, want one saying the image was not resolved", out.Decision.Diagnostics)
	}
}
