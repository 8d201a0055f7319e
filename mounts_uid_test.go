package ccrun_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/internal/testimage"
	"github.com/ccrun/ccrun/runtime/job"
)

// TestMountUIDSaid: as root, the prompt for a @docker call with a
// writable mount says that the container writes it as uid 65534, which
// must be allowed to; not for a read-only mount, nor for @wasm (which
// writes as ccrun).
func TestMountUIDSaid(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("as another user @docker writes as that user: nothing to say")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "m.wasm"), emptyModule, 0o644)
	os.Mkdir(filepath.Join(dir, "out"), 0o755)
	rt, err := ccrun.New(engines.Wasm(), engines.Docker(), ccrun.WithProjectDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	const said = "written as uid 65534 on the Docker Engine (ccrun runs as root): it must be writable by uid 65534"
	for _, tc := range []struct {
		name string
		call ccrun.Call
		want bool
	}{
		{"docker rw", ccrun.Call{Image: testimage.Name, Mounts: []job.Mount{{Host: "out", Guest: "/w", Writable: true}}}, true},
		{"docker ro", ccrun.Call{Image: testimage.Name, Mounts: []job.Mount{{Host: "out", Guest: "/w"}}}, false},
		{"wasm rw", ccrun.Call{Module: "m.wasm", Mounts: []job.Mount{{Host: "out", Guest: "/w", Writable: true}}}, false},
	} {
		out, err := rt.Check(context.Background(), &tc.call)
		if errors.Is(err, ccrun.ErrUnavailable) || errors.Is(err, ccrun.ErrNotFound) {
			t.Skipf("%s: no docker engine or test image: %v", tc.name, err)
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := strings.Contains(strings.Join(out.Request.Mounts, "\n"), said); got != tc.want {
			t.Errorf("%s: mounts %q, saying %q: %v, want %v", tc.name, out.Request.Mounts, said, got, tc.want)
		}
	}
}
