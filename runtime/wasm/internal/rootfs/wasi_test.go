package rootfs

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental/sysfs"

	"github.com/ccrun/ccrun/runtime/job"
)

// TestWASIWrappers runs testdata/wasiprobe, a guest that calls the
// wrapped WASI functions raw, over a writable mount of this package's
// file system, and checks each answer against the one the WASI preview 1
// specification (and wasmtime) gives. wazero's own answers are in the
// comments.
func TestWASIWrappers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wasm := filepath.Join(dir, "wasiprobe.wasm")
	build := exec.Command("go", "build", "-o", wasm, ".")
	build.Dir = filepath.Join("testdata", "wasiprobe")
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the guest: %v\n%s", err, out)
	}
	bin, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}

	host := filepath.Join(dir, "mount")
	for _, err := range []error{
		os.Mkdir(host, 0o755),
		os.WriteFile(filepath.Join(host, "f"), []byte("hello"), 0o644),
		os.Symlink("target-name", filepath.Join(host, "l")),
		os.Symlink("nowhere", filepath.Join(host, "dang")),
		os.Mkdir(filepath.Join(host, "d"), 0o755),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(host)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	fs, err := New(root, job.Mount{Host: host, Guest: "/", Writable: true}, new(atomic.Int64))
	if err != nil {
		t.Fatal(err)
	}
	defer fs.(io.Closer).Close()

	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	if _, err := Instantiate(ctx, rt); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cfg := wazero.NewModuleConfig().WithStdout(&stdout).WithStderr(&stderr).
		WithFSConfig(wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(fs, "/"))
	if _, err := rt.InstantiateWithConfig(WithRun(ctx), bin, cfg); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.Bytes())
	}

	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		k, v, _ := strings.Cut(line, " ")
		got[k] = v
	}
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
	} {
		if got[tc.name] != tc.want {
			t.Errorf("%s: got %q, want %q: %s", tc.name, got[tc.name], tc.want, tc.why)
		}
	}
	if b, err := os.ReadFile(filepath.Join(host, "a")); err != nil || string(b) != "abc" {
		t.Errorf("a = %q, %v; want abc", b, err)
	}
	if t.Failed() {
		t.Logf("guest output:\n%s%s", stdout.Bytes(), stderr.Bytes())
	}
}
