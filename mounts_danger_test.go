package ccrun_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/job"
)

// emptyModule is the smallest valid WebAssembly module.
var emptyModule = []byte("\x00asm\x01\x00\x00\x00")

// TestMountsAskedOnce: a mount whose source holds the home directory (or
// is /), a mount reached through a symlink to it, and a manifest that lets
// a writable mount change a protected path are dangerous-path calls:
// asked, Once only, whatever grant exists; the prompt's request lists every
// mount with its source resolved.
func TestMountsAskedOnce(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	dir := filepath.Join(home, "work", "project")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "m.wasm"), emptyModule, 0o644)
	os.Symlink(home, filepath.Join(dir, "up"))
	os.MkdirAll(filepath.Join(dir, "data"), 0o755)
	writeCapability(t, dir, "hooks", `{"name": "hooks", "description": "writes hooks", "environment": "@wasm",
  "entry": {"module": "m.wasm"}, "mounts": [{"host": ".", "guest": "/p", "rw": true, "implants": [".git/hooks"]}]}`)
	os.WriteFile(filepath.Join(dir, ".ccrun", "capabilities", "hooks", "m.wasm"), emptyModule, 0o644)
	rt, err := ccrun.New(engines.Wasm(), ccrun.WithProjectDir(dir), ccrun.WithSettings(&permission.Settings{Origin: permission.OriginFlags, Name: "test",
		Allow: []keys.Pattern{keys.MustParsePattern("run_wasm:*"), keys.MustParsePattern("capability:*")}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, tc := range []struct {
		name string
		call ccrun.Call
		want string // in the mount lines
	}{
		{"home", ccrun.Call{Module: "m.wasm", Mounts: []job.Mount{{Host: home, Guest: "/h"}}}, home + " at /h (ro)"},
		{"root", ccrun.Call{Module: "m.wasm", Mounts: []job.Mount{{Host: "/", Guest: "/r"}}}, "/ at /r (ro)"},
		{"symlink to home", ccrun.Call{Module: "m.wasm", Mounts: []job.Mount{{Host: "up", Guest: "/h"}}}, "up → " + home},
		{"implants", ccrun.Call{Capability: "hooks"}, "may change the protected paths .git/hooks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := rt.Check(context.Background(), &tc.call)
			if err != nil {
				t.Fatal(err)
			}
			d := out.Decision
			if d.Verdict != permission.AskUser || d.Offer != ceiling.Once || d.Layer != permission.LayerDangerous {
				t.Errorf("decision %s at %s offering %s (%s); want ask at dangerous-path offering Once", d.Verdict, d.Layer, d.Offer, d.Reason)
			}
			if !strings.Contains(strings.Join(out.Request.Mounts, "\n"), tc.want) {
				t.Errorf("mounts %q, want %q in them", out.Request.Mounts, tc.want)
			}
		})
	}
	// An ordinary mount inside the project is not dangerous: the allow rule counts.
	out, err := rt.Check(context.Background(), &ccrun.Call{Module: "m.wasm", Mounts: []job.Mount{{Host: "data", Guest: "/d", Writable: true}}})
	if err != nil || out.Decision.Verdict != permission.Allow {
		t.Errorf("ordinary mount: %v %+v", err, out.Decision)
	}
	if got := strings.Join(out.Request.Mounts, "\n"); strings.Contains(got, "git repository") {
		t.Errorf("mounts %q: a directory that is no repository called one", got)
	}
}

// TestMountRepositorySaid: the prompt for a writable mount of a git
// repository (a working tree, or a repository under any name) says that
// its history stays writable; a read-only one, or a directory that is no
// repository, does not.
func TestMountRepositorySaid(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "m.wasm"), emptyModule, 0o644)
	for _, d := range []string{"wt/.git/objects", "wt/.git/refs", "bare/objects", "bare/refs", "plain"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "wt", ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "bare", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	rt, err := ccrun.New(engines.Wasm(), ccrun.WithProjectDir(dir), ccrun.WithSettings(&permission.Settings{Origin: permission.OriginFlags, Name: "test",
		Allow: []keys.Pattern{keys.MustParsePattern("run_wasm:*")}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	const said = "a git repository: its history stays writable"
	for _, tc := range []struct {
		host string
		rw   bool
		want bool
	}{{"wt", true, true}, {"bare", true, true}, {"wt", false, false}, {"plain", true, false}} {
		out, err := rt.Check(context.Background(), &ccrun.Call{Module: "m.wasm", Mounts: []job.Mount{{Host: filepath.Join(dir, tc.host), Guest: "/w", Writable: tc.rw}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(strings.Join(out.Request.Mounts, "\n"), said); got != tc.want {
			t.Errorf("%s rw=%v: mounts %q, saying %q: %v, want %v", tc.host, tc.rw, out.Request.Mounts, said, got, tc.want)
		}
	}
}

func writeCapability(t *testing.T, dir, name, manifest string) {
	t.Helper()
	p := filepath.Join(dir, ".ccrun", "capabilities", name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "capability.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
}
