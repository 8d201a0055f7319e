package wasm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm/internal/rootfs"
	esys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
)

// sandbox is a host tree for the escape tests:
//
//	top/secret.txt         outside every mount: must stay unread and unchanged
//	sharedCache            the Executor's compilation cache (elsewhere)
//	top/ro/  (mounted ro at /ro)  file.txt, sub/, symlinks pointing out
//	top/rw/  (mounted rw at /rw)  inside.txt, symlinks pointing out
type sandbox struct {
	top, secret, ro, rw, cache string
	exec                       *Executor
}

const secretText = "SECRET"

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	top := t.TempDir()
	s := &sandbox{top: top, secret: filepath.Join(top, "secret.txt"),
		ro: filepath.Join(top, "ro"), rw: filepath.Join(top, "rw"), cache: sharedCache}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(s.secret, []byte(secretText), 0o644))
	must(os.MkdirAll(filepath.Join(s.ro, "sub"), 0o755))
	must(os.MkdirAll(s.rw, 0o755))
	must(os.WriteFile(filepath.Join(s.ro, "file.txt"), []byte("RO-ORIGINAL"), 0o644))
	must(os.WriteFile(filepath.Join(s.rw, "inside.txt"), []byte("INSIDE"), 0o644))
	must(os.WriteFile(filepath.Join(s.rw, "inside2.txt"), []byte("INSIDE2"), 0o644))
	must(os.Symlink(s.secret, filepath.Join(s.ro, "link-abs")))
	must(os.Symlink("../secret.txt", filepath.Join(s.ro, "link-rel")))
	must(os.Symlink(top, filepath.Join(s.ro, "linkdir")))
	must(os.Symlink(s.cache, filepath.Join(s.ro, "link-cache")))
	must(os.Symlink(s.secret, filepath.Join(s.rw, "link-out")))
	must(os.Symlink("../secret.txt", filepath.Join(s.rw, "link-out-rel")))
	must(os.Symlink("..", filepath.Join(s.rw, "dirlink")))
	e, err := New(context.Background(), WithCacheDir(s.cache))
	must(err)
	t.Cleanup(func() { e.Close(context.Background()) })
	s.exec = e
	return s
}

// relCache is the path from the ro mount to the compilation cache.
func (s *sandbox) relCache() string {
	r, err := filepath.Rel(s.ro, s.cache)
	if err != nil {
		return s.cache
	}
	return r
}

func (s *sandbox) run(t *testing.T, args ...string) string {
	t.Helper()
	res, err := s.exec.Run(context.Background(), Spec{
		Module: guests["escape"], Name: "escape", Args: args,
		Mounts: []job.Mount{{Host: s.ro, Guest: "/ro"}, {Host: s.rw, Guest: "/rw", Writable: true}},
	})
	if err != nil {
		t.Fatalf("run %q: %v", args, err)
	}
	if res.Reason != job.Exit || res.ExitCode != 0 {
		t.Fatalf("run %q: %s %d: %s%s", args, res.Reason, res.ExitCode, res.Stdout, res.Stderr)
	}
	return strings.TrimSpace(string(res.Stdout))
}

// unchanged fails when a host file outside the mounts (or the read-only
// one) was changed, or when a path that must not exist does.
func (s *sandbox) unchanged(t *testing.T) {
	t.Helper()
	for path, want := range map[string]string{s.secret: secretText, filepath.Join(s.ro, "file.txt"): "RO-ORIGINAL"} {
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q untouched", path, b, err, want)
		}
	}
	for _, p := range []string{"created.txt", "newdir", "moved.txt", "evil-target"} {
		if _, err := os.Lstat(filepath.Join(s.top, p)); err == nil {
			t.Errorf("%s was created outside the mounts", p)
		}
	}
	ents, _ := os.ReadDir(s.ro)
	for _, e := range ents {
		switch e.Name() {
		case "file.txt", "sub", "link-abs", "link-rel", "linkdir", "link-cache":
		default:
			t.Errorf("read-only mount gained %s", e.Name())
		}
	}
}

// escapes lists every way out we know of; each must print BLOCKED.
func escapes(s *sandbox) []struct {
	name string
	args []string
} {
	return []struct {
		name string
		args []string
	}{
		{"dotdot read", []string{"read", "/ro", "../secret.txt"}},
		{"dotdot deep read", []string{"read", "/ro", "sub/../../secret.txt"}},
		{"dotdot many", []string{"read", "/ro", "../../../../../../../../" + s.secret}},
		{"absolute host path", []string{"read", "/ro", s.secret}},
		{"existing absolute symlink", []string{"read", "/ro", "link-abs"}},
		{"existing relative symlink", []string{"read", "/ro", "link-rel"}},
		{"existing symlink to a directory", []string{"read", "/ro", "linkdir/secret.txt"}},
		{"existing symlink, nofollow", []string{"read-nofollow", "/ro", "link-abs"}},
		{"list parent", []string{"list", "/ro", ".."}},
		{"list through symlinked directory", []string{"list", "/ro", "linkdir"}},
		{"compilation cache through symlink", []string{"list", "/ro", "link-cache"}},
		{"compilation cache through dotdot", []string{"list", "/ro", s.relCache()}},
		{"write through existing absolute symlink", []string{"write", "/rw", "link-out", "PWNED"}},
		{"write through existing relative symlink", []string{"write", "/rw", "link-out-rel", "PWNED"}},
		{"write through symlink to parent", []string{"write", "/rw", "dirlink/secret.txt", "PWNED"}},
		{"create through dotdot", []string{"write", "/rw", "../created.txt", "PWNED"}},
		{"create through symlink to parent", []string{"write", "/rw", "dirlink/created.txt", "PWNED"}},
		{"new absolute symlink", []string{"symlink", "/rw", s.secret, "evil"}},
		{"new relative symlink out", []string{"symlink", "/rw", "../secret.txt", "evil2"}},
		{"new symlink to parent dir", []string{"symlink", "/rw", "..", "up", "up/secret.txt"}},
		{"new deep symlink out", []string{"symlink", "/rw", "../../../../../.." + s.top + "/secret.txt", "evil3"}},
		{"symlink in read-only mount", []string{"symlink", "/ro", "file.txt", "alias"}},
		{"hard link from ro mount into rw mount, then write", []string{"link", "/ro", "file.txt", "/rw", "hl.txt", "PWNED"}},
		{"hard link of a symlink pointing out, then write", []string{"link", "/rw", "link-out", "/rw", "hl2", "PWNED"}},
		{"hard link through dotdot", []string{"link", "/rw", "../secret.txt", "/rw", "hl3", "PWNED"}},
		{"hard link through symlinked dir", []string{"link", "/rw", "dirlink/secret.txt", "/rw", "hl4", "PWNED"}},
		{"write read-only file", []string{"write", "/ro", "file.txt", "PWNED"}},
		{"create in read-only mount", []string{"write", "/ro", "new.txt", "PWNED"}},
		{"mkdir through dotdot", []string{"mkdir", "/rw", "../newdir"}},
		{"mkdir in read-only mount", []string{"mkdir", "/ro", "newdir"}},
		{"rename out through dotdot", []string{"rename", "/rw", "inside2.txt", "/rw", "../moved.txt"}},
		{"rename out through symlinked dir", []string{"rename", "/rw", "inside2.txt", "/rw", "dirlink/moved.txt"}},
		{"rename from ro mount to rw mount", []string{"rename", "/ro", "file.txt", "/rw", "stolen.txt"}},
		{"unlink in read-only mount", []string{"unlink", "/ro", "file.txt"}},
		{"unlink through dotdot", []string{"unlink", "/rw", "../secret.txt"}},
		{"unlink through symlinked dir", []string{"unlink", "/rw", "dirlink/secret.txt"}},
	}
}

func TestEscape(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	for _, tc := range escapes(s) {
		t.Run(tc.name, func(t *testing.T) {
			got := s.run(t, tc.args...)
			if !strings.HasPrefix(got, "BLOCKED") {
				t.Errorf("escape %q: got %q, want BLOCKED", tc.args, got)
			}
			if strings.Contains(got, secretText) {
				t.Errorf("escape %q: the guest read the secret: %q", tc.args, got)
			}
			s.unchanged(t)
		})
	}
}

// TestMountsWork is the control: what the escape tests refuse must be
// refused for the right reason, not because nothing works.
func TestMountsWork(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"read ro file", []string{"read", "/ro", "file.txt"}, `DONE: read "RO-ORIGINAL"`},
		{"read with harmless dotdot", []string{"read", "/ro", "sub/../file.txt"}, `DONE: read "RO-ORIGINAL"`},
		{"write rw file", []string{"write", "/rw", "new.txt", "hello"}, "DONE: wrote 5 bytes"},
		{"symlink inside", []string{"symlink", "/rw", "inside.txt", "alias"}, `DONE: read "INSIDE"`},
		{"hard link inside", []string{"link", "/rw", "inside.txt", "/rw", "hard.txt", "CHANGED"}, "DONE: wrote 7 bytes"},
		{"mkdir", []string{"mkdir", "/rw", "d"}, "DONE: made directory"},
		{"rename inside", []string{"rename", "/rw", "inside2.txt", "/rw", "renamed.txt"}, "DONE: renamed"},
		{"list", []string{"list", "/ro", "sub"}, "DONE: listed []"},
	}
	for _, tc := range tests {
		if got := s.run(t, tc.args...); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(s.rw, "new.txt")); string(b) != "hello" {
		t.Errorf("rw/new.txt = %q, want hello", b)
	}
	s.unchanged(t)
}

// TestWazeroDirFS runs the same attacks against wazero's own directory
// mounts (sysfs.DirFS, read-only ones wrapped in sysfs.ReadFS) and logs
// which ones get out: the reason this package mounts through os.Root. It
// asserts nothing about wazero; run with -v to see the list.
func TestWazeroDirFS(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	s.exec.mountFS = func(_ *os.Root, m job.Mount, _ *rootfs.Run) (esys.FS, error) {
		fs := sysfs.DirFS(m.Host)
		if !m.Writable {
			fs = &sysfs.ReadFS{FS: fs}
		}
		return fs, nil
	}
	var out []string
	for _, tc := range escapes(s) {
		if got := s.run(t, tc.args...); !strings.HasPrefix(got, "BLOCKED") {
			out = append(out, tc.name+": "+got)
		}
	}
	t.Logf("wazero DirFS lets %d of %d attacks through:\n%s", len(out), len(escapes(s)), strings.Join(out, "\n"))
}

func TestMountOverlappingCacheRefused(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	sub := filepath.Join(s.cache, "sub")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{filepath.Dir(s.cache), s.cache, sub} {
		_, err := s.exec.Run(context.Background(), Spec{Module: guests["probe"], Args: []string{"args"},
			Mounts: []job.Mount{{Host: host, Guest: "/x"}}})
		if !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("mount %s: err = %v, want ErrInvalidSpec", host, err)
		}
	}
	// A symlink to the cache is resolved before the check.
	link := filepath.Join(t.TempDir(), "c")
	if err := os.Symlink(s.cache, link); err != nil {
		t.Fatal(err)
	}
	if _, err := s.exec.Run(context.Background(), Spec{Module: guests["probe"], Args: []string{"args"},
		Mounts: []job.Mount{{Host: link, Guest: "/x", Writable: true}}}); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("mount symlink to cache: err = %v, want ErrInvalidSpec", err)
	}
}
