package rootfs

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental/sysfs"

	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm/internal/wasmtest"
)

// TestWASIWrappers runs testdata/wasiprobe, a guest that calls the
// wrapped WASI functions raw, over a writable mount of this package's
// file system, and checks each answer against the one the WASI preview 1
// specification (and wasmtime) gives. wazero's own answers are in the
// comments.
func TestWASIWrappers(t *testing.T) {
	t.Parallel()
	bin, err := wasmtest.WASIProbe()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	host, second := filepath.Join(dir, "mount"), filepath.Join(dir, "second")
	if err := wasmtest.WASIProbeTree(host, second); err != nil {
		t.Fatal(err)
	}
	// Both mounts' file systems share the run's state with its WASI calls.
	run := NewRun()
	fsc := wazero.NewFSConfig()
	for _, m := range []job.Mount{{Host: host, Guest: "/", Writable: true}, {Host: second, Guest: "/second", Writable: true}} {
		root, err := os.OpenRoot(m.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		fs, err := New(root, m, run)
		if err != nil {
			t.Fatal(err)
		}
		defer fs.(io.Closer).Close()
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(fs, m.Guest)
	}

	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	if _, err := Instantiate(ctx, rt); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cfg := wazero.NewModuleConfig().WithStdout(&stdout).WithStderr(&stderr).WithFSConfig(fsc)
	if _, err := rt.InstantiateWithConfig(WithRun(ctx, run), bin, cfg); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.Bytes())
	}

	got := wasmtest.WASIProbeAnswers(stdout.Bytes())
	for _, tc := range []struct{ name, want, why string }{
		{"readlink", "0 4 targ true", "a short buffer gets the target's first bytes, the memory past it untouched (wazero: ERANGE)"},
		{"prestat-empty", "37", "an empty buffer is ENAMETOOLONG (wazero: success)"},
		{"prestat-long", "0 /", "a buffer longer than the name works (wazero: ENAMETOOLONG)"},
		{"rights", "2 64", "fd_read only when open for reading, fd_write only for writing (wazero: both)"},
		{"set-rights", "58 8", "ENOTSUP, EBADF for a closed descriptor (wazero: ENOSYS)"},
		{"renumber-closed", "8", "EBADF to a closed descriptor (wazero: opens it)"},
		{"pwrite-append", "0 3", "pwrite on an O_APPEND file writes (wazero's DirFS too; os.File.WriteAt refused it)"},
		{"shutdown-stdout", "57", "ENOTSOCK (wazero: EBADF)"},
		{"poll-write", "0 1 7 2 0", "the write event alone, ready, no clock event (wazero: ENOTSUP, after the clock)"},
		{"link-follow-dangling", "44", "following a dangling link is ENOENT (wazero: links the link)"},
		{"link-follow-file", "0", "a link to a file is linked (Go's os.Link asks to follow)"},
		{"allocate-dir", "8", "EBADF on a directory (wazero: success)"},
		{"sync-flag", "16 16", "FDFLAGS_SYNC reported, after a renumber too (wazero: not reported)"},
		{"settimes-nofollow", "0 1000000000 true", "without symlink_follow the link's own time is set, not its target's (wazero: the target's)"},
		{"settimes-follow", "0 1000000000 2000000000", "with symlink_follow the target's"},
		{"settimes-dir", "0 3000000000", "a directory's times are set (wazero: EISDIR)"},
		{"settimes-escape", "0 4000000000 63", "a link out of the mount: its own time set, the file it leads to not reached (EPERM)"},
		{"renumber-self", "0 0", "renumbered onto itself a file stays open (wazero: closes it)"},
		{"renumber-stdin", "0 0 8 0 8", "stdin moved onto an open file: that number is stdin, 0 names nothing, polls too (wazero: ENOTSUP)"},
		{"renumber-reuse", "0 0 0 8 0", "the next file opened gets 0, the lowest number free, and writes its file"},
		{"renumber-preopen", "0 true 8 8 0 0 8 true", "a directory moved over preopen 4 is 4, no longer a preopen; its old number names nothing, until a file opened in it takes that number (wazero: ENOTSUP)"},
	} {
		if got[tc.name] != tc.want {
			t.Errorf("%s: got %q, want %q: %s", tc.name, got[tc.name], tc.want, tc.why)
		}
	}
	if b, err := os.ReadFile(filepath.Join(host, "a")); err != nil || string(b) != "abc" {
		t.Errorf("a = %q, %v; want abc", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(host, "r2")); err != nil || string(b) != "x" {
		t.Errorf("r2 = %q, %v; want x: written through the number 0", b, err)
	}
	if st, err := os.Stat(filepath.Join(host, "t")); err != nil || !st.ModTime().Equal(time.Unix(2, 0)) {
		t.Errorf("t's modification time: %v, %v; want %v, set through the link with symlink_follow", st.ModTime(), err, time.Unix(2, 0))
	}
	if st, err := os.Stat(filepath.Join(dir, "outside")); err != nil || !st.ModTime().Equal(wasmtest.WASIProbeMTime) {
		t.Errorf("outside's modification time: %v, %v; want %v, untouched", st.ModTime(), err, wasmtest.WASIProbeMTime)
	}
	if st, err := os.Lstat(filepath.Join(host, "lt")); err != nil || !st.ModTime().Equal(time.Unix(1, 0)) {
		t.Errorf("lt's modification time: %v, %v; want %v, set on the link without symlink_follow", st.ModTime(), err, time.Unix(1, 0))
	}
	if t.Failed() {
		t.Logf("guest output:\n%s%s", stdout.Bytes(), stderr.Bytes())
	}
}
