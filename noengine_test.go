package ccrun_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/permission"
)

// TestNoEngineFailsClosed: the root links no engine of @wasm or @docker,
// so a Runtime not given them (package engines) refuses their calls —
// ad-hoc, a capability, a tool call, Check, a sub-agent's — before anyone
// is asked and before anything runs, with an error of class
// ErrUnavailable naming the environment, those the Runtime has a backend
// for, and the option that adds it. The environments keep their ceiling:
// only the backend is missing.
func TestNoEngineFailsClosed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := capabilities.Scaffold(dir, "hello", ceiling.Wasm); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "m.wasm"), capabilities.HelloWasm(), 0o644); err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	approver := ccrun.WithApprover(permission.ApproverFunc(func(context.Context, *permission.Prompt) (ceiling.Grant, error) {
		asked.Add(1)
		return ceiling.AlwaysThisProject, nil
	}))
	base := []ccrun.Option{ccrun.WithProjectDir(dir), ccrun.WithAuditLog(""), ccrun.WithTrustDir(t.TempDir()), approver}
	shellOnly, err := ccrun.New(base...)
	if err != nil {
		t.Fatal(err)
	}
	defer shellOnly.Close()
	wasmOnly, err := ccrun.New(append(base, engines.Wasm())...)
	if err != nil {
		t.Fatal(err)
	}
	defer wasmOnly.Close()
	sub, err := shellOnly.SubAgent()
	if err != nil {
		t.Fatal(err)
	}
	tool, err := shellOnly.CallFromTool("run_wasm", []byte(`{"module": "m.wasm"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		rt   *ccrun.Runtime
		call *ccrun.Call
		want []string
	}{
		{"module", shellOnly, &ccrun.Call{Module: "m.wasm"}, []string{"@wasm", "(it has one for @shell)", "engines.Wasm"}},
		{"capability", shellOnly, &ccrun.Call{Capability: "hello"}, []string{"@wasm", "engines.Wasm"}},
		{"tool call", shellOnly, tool, []string{"@wasm", "engines.Wasm"}},
		{"image", shellOnly, &ccrun.Call{Image: "busybox"}, []string{"@docker", "engines.Docker"}},
		{"image, @wasm given", wasmOnly, &ccrun.Call{Image: "busybox"}, []string{"@docker", "(it has one for @shell, @wasm)", "engines.Docker"}},
		{"sub-agent", sub, &ccrun.Call{Module: "m.wasm"}, []string{"@wasm", "engines.Wasm"}},
	} {
		_, err := tc.rt.Exec(context.Background(), tc.call)
		_, cerr := tc.rt.Check(context.Background(), tc.call)
		for what, err := range map[string]error{"Exec": err, "Check": cerr} {
			if !errors.Is(err, ccrun.ErrUnavailable) {
				t.Errorf("%s: %s: %v; want ErrUnavailable", tc.name, what, err)
				continue
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: %s: %q does not say %q", tc.name, what, err, w)
				}
			}
		}
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("asked %d times; a call with no backend is refused before the gate", n)
	}
	if got := shellOnly.Environments().Of(ceiling.Wasm); got != ceiling.AlwaysThisProject {
		t.Errorf("@wasm's ceiling without its engine: %s, want AlwaysThisProject", got)
	}
	// The shell still runs.
	if out, err := shellOnly.Exec(context.Background(), &ccrun.Call{Command: "true"}); err != nil || !out.Result.OK() {
		t.Errorf("@shell without the engines: %v", err)
	}
}

// TestToolsListWhatRuns: a Runtime lists only the tools it can run. One
// without the engines lists no run_wasm or run_docker, and a @wasm
// capability is left out with an error beside the list saying which
// option adds its engine; one given @wasm's engine lists run_wasm and the
// capability, and still no run_docker.
func TestToolsListWhatRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := capabilities.Scaffold(dir, "hello", ceiling.Wasm); err != nil {
		t.Fatal(err)
	}
	base := []ccrun.Option{ccrun.WithProjectDir(dir), ccrun.WithAuditLog(""), ccrun.WithTrustDir(t.TempDir())}
	for _, tc := range []struct {
		name     string
		opts     []ccrun.Option
		want     []string
		errNames string // what the one error beside the list says; "" none
	}{
		{"no engine", nil, []string{"run_command"}, "engines.Wasm"},
		{"@wasm's engine", []ccrun.Option{engines.Wasm()}, []string{"run_command", "run_wasm", "hello"}, ""},
		{"both engines", engines.All(), []string{"run_command", "run_wasm", "run_docker", "hello"}, ""},
	} {
		rt, err := ccrun.New(append(slices.Clone(base), tc.opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		tools, errs := rt.Tools()
		var names []string
		for _, tl := range tools {
			names = append(names, tl.Name)
		}
		if !slices.Equal(names, tc.want) {
			t.Errorf("%s: Tools lists %q; want %q", tc.name, names, tc.want)
		}
		switch {
		case tc.errNames == "" && len(errs) > 0:
			t.Errorf("%s: errors %v; want none", tc.name, errs)
		case tc.errNames != "" && (len(errs) != 1 || !errors.Is(errs[0], ccrun.ErrUnavailable) || !strings.Contains(errs[0].Error(), tc.errNames) || !strings.Contains(errs[0].Error(), "hello")):
			t.Errorf("%s: errors %v; want one of class ErrUnavailable naming hello and %s", tc.name, errs, tc.errNames)
		}
	}
}
