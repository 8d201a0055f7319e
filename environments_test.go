package ccrun_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/backend/toy"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/ccrun/ccrun/permission/keys"
)

// TestEnvironmentsPerRuntime: the environments are each Runtime's own.
// Three Runtimes of one process, made at once: one registers @toy for
// the session, one for once, one not at all. Each sees its own ceiling,
// and the third neither runs, lists nor grants what the others
// registered, and says which environments it runs.
func TestEnvironmentsPerRuntime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.toy"), []byte("a toy\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := capabilities.ScaffoldTarget(dir, "hello", toy.Environment, (&toy.Backend{}).Scaffold("hello")); err != nil {
		t.Fatal(err)
	}
	regs := map[string][]ccrun.Option{
		"session": {ccrun.WithBackend(toy.Environment, ceiling.AlwaysThisSession, toy.New)},
		"once":    {ccrun.WithBackend(toy.Environment, ceiling.Once, toy.New)},
		"none":    nil,
	}
	rts := map[string]*ccrun.Runtime{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, opts := range regs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rt, err := ccrun.New(append([]ccrun.Option{ccrun.WithProjectDir(dir), ccrun.WithAuditLog(""), ccrun.WithTrustDir(t.TempDir()),
				ccrun.WithSession(allowlist.NewSessionAllowlist())}, opts...)...)
			if err != nil {
				t.Error(err)
				return
			}
			t.Cleanup(func() { rt.Close() })
			mu.Lock()
			rts[name] = rt
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	ctx := context.Background()
	adHoc := func() *ccrun.Call { return &ccrun.Call{Environment: toy.Environment, Target: "a.toy"} }
	for name, want := range map[string]ceiling.Grant{"session": ceiling.AlwaysThisSession, "once": ceiling.Once} {
		rt := rts[name]
		sub, err := rt.SubAgent()
		if err != nil {
			t.Fatal(err)
		}
		for who, rt := range map[string]*ccrun.Runtime{name: rt, name + "'s sub-agent": sub} {
			if envs := rt.Environments(); !envs.Has(toy.Environment) || envs.Of(toy.Environment) != want {
				t.Errorf("%s: environments %s, ceiling of @toy %s; want @toy at %s", who, envs, envs.Of(toy.Environment), want)
			}
		}
		out, err := rt.Check(context.Background(), adHoc())
		if err != nil || out.Decision.Verdict != permission.AskUser || out.Decision.Offer != want || out.Decision.Key.String() != "run_toy:a.toy" {
			t.Errorf("%s: Check: %v %+v; want ask run_toy:a.toy, offering %s", name, err, out.Decision, want)
		}
		tools, errs := rt.Tools()
		if len(errs) > 0 || !slices.ContainsFunc(tools, func(tl ccrun.Tool) bool { return tl.Name == "hello" }) {
			t.Errorf("%s: Tools: hello missing, errors %v", name, errs)
		}
		for _, key := range []string{"capability:hello", "run_toy:a.toy", "run_toy:*"} {
			_, err := rt.Grant(ctx, keys.MustParsePattern(key), ceiling.AlwaysThisSession)
			if violation := errors.Is(err, ccrun.ErrCeilingViolation); violation != (want < ceiling.AlwaysThisSession) || (!violation && err != nil) {
				t.Errorf("%s: Grant(%s, session): %v", name, key, err)
			}
			if _, err := rt.Grant(ctx, keys.MustParsePattern(key), ceiling.AlwaysThisProject); !errors.Is(err, ccrun.ErrCeilingViolation) {
				t.Errorf("%s: Grant(%s, project): %v; want a ceiling violation", name, key, err)
			}
		}
	}
	if out, err := rts["session"].Exec(ctx, &ccrun.Call{Capability: "hello"}); err != nil || string(out.Result.Stdout) != "hello from hello\n" {
		t.Errorf("with the session grant: %v %+v", err, out)
	}
	if _, err := rts["once"].Exec(ctx, &ccrun.Call{Capability: "hello"}); !errors.Is(err, ccrun.ErrPermissionDenied) {
		t.Errorf("once, no grant, nobody to ask: %v; want denied", err)
	}

	none := rts["none"]
	if envs := none.Environments(); envs.Has(toy.Environment) || envs.String() != "@shell, @wasm, @docker" {
		t.Errorf("none: environments %s", envs)
	}
	if _, err := none.Check(context.Background(), adHoc()); !errors.Is(err, ceiling.ErrUnknownEnvironment) || !strings.Contains(err.Error(), "(@shell, @wasm, @docker;") {
		t.Errorf("none: Check of @toy: %v; want an unknown environment, listing the built-in ones", err)
	}
	if tools, errs := none.Tools(); slices.ContainsFunc(tools, func(tl ccrun.Tool) bool { return tl.Name == "hello" }) ||
		len(errs) != 1 || !errors.Is(errs[0], ceiling.ErrUnknownEnvironment) {
		t.Errorf("none: Tools: %v; want hello left out, with an unknown environment", errs)
	}
	if _, err := none.Grant(ctx, keys.MustParsePattern("capability:hello"), ceiling.AlwaysThisSession); !errors.Is(err, ceiling.ErrUnknownEnvironment) {
		t.Errorf("none: Grant(capability:hello): %v; want an unknown environment", err)
	}
	if _, err := none.Grant(ctx, keys.MustParsePattern("run_toy:*"), ceiling.AlwaysThisSession); !errors.Is(err, ccrun.ErrUnknownKey) {
		t.Errorf("none: Grant(run_toy:*): %v; want an unknown key", err)
	}
	if _, err := none.Scaffold(ctx, "other", toy.Environment); !errors.Is(err, ceiling.ErrUnknownEnvironment) {
		t.Errorf("none: Scaffold(@toy): %v; want an unknown environment", err)
	}
}
