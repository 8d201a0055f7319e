package wasm

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm/internal/wasmtest"
)

// TestWASIThroughExecutor runs internal/rootfs's wasiprobe through the
// Executor, with the two writable mounts it expects, and checks the
// answers that need the run's state to be shared by the mounts' file
// systems and the run's WASI calls (the Run that moduleConfig gives the
// mounts and rootfs.WithRun the instance): fd_renumber of standard input
// and over a preopen, and the times of a symbolic link itself.
// internal/rootfs's TestWASIWrappers checks every answer.
func TestWASIThroughExecutor(t *testing.T) {
	t.Parallel()
	bin, err := wasmtest.WASIProbe()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first"), filepath.Join(dir, "second")
	if err := wasmtest.WASIProbeTree(first, second); err != nil {
		t.Fatal(err)
	}
	res := run(t, Spec{Module: bin, Name: "wasiprobe", Mounts: []job.Mount{
		{Host: first, Guest: "/", Writable: true}, {Host: second, Guest: "/second", Writable: true}}})
	if res.Reason != job.Exit || res.ExitCode != 0 {
		t.Fatalf("the probe ended %s %d: %s %s", res.Reason, res.ExitCode, res.Detail, res.Stderr)
	}
	got := wasmtest.WASIProbeAnswers(res.Stdout)
	for _, tc := range []struct{ name, want string }{
		{"settimes-nofollow", "0 1000000000 true"},
		{"settimes-follow", "0 1000000000 2000000000"},
		{"renumber-stdin", "0 0 8 0 8"},
		{"renumber-reuse", "0 0 0 8 0"},
		{"renumber-preopen", "0 true 8 8 0 0 8 true"},
	} {
		if got[tc.name] != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got[tc.name], tc.want)
		}
	}
	if st, err := os.Lstat(filepath.Join(first, "lt")); err != nil || !st.ModTime().Equal(time.Unix(1, 0)) {
		t.Errorf("lt's modification time: %v, %v; want %v", st.ModTime(), err, time.Unix(1, 0))
	}
	if t.Failed() {
		t.Logf("guest output:\n%s%s", res.Stdout, res.Stderr)
	}
}
