package trust

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/containerd/errdefs"
)

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	s := Open(filepath.Join(t.TempDir(), "state", "ccrun", "trust"))
	if rec, err := s.Get("/p"); err != nil || rec != nil {
		t.Fatalf("empty store: %v, %v; want nothing", rec, err)
	}
	put := func(path, digest string) {
		t.Helper()
		if err := s.Update(path, func(*Record) (*Record, error) { return &Record{Digest: digest, Shown: []string{"x"}}, nil }); err != nil {
			t.Fatal(err)
		}
	}
	put("/p", "sha256:aa")
	put("/q", "sha256:bb")
	put("/p", "sha256:cc")
	rec, err := s.Get("/p")
	if err != nil || rec == nil || rec.Digest != "sha256:cc" || rec.Path != "/p" || rec.Time.IsZero() {
		t.Fatalf("Get: %+v, %v", rec, err)
	}
	list, err := s.List()
	if err != nil || len(list) != 2 || list[0].Path != "/p" || list[1].Path != "/q" {
		t.Fatalf("List: %+v, %v", list, err)
	}
	for _, p := range []string{s.Dir(), filepath.Join(s.Dir(), fileName("/p"))} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	if err := s.Update("/p", func(*Record) (*Record, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if rec, _ := s.Get("/p"); rec != nil {
		t.Errorf("after removal: %+v", rec)
	}
	boom := errors.New("boom")
	if err := s.Update("/q", func(*Record) (*Record, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("change error: %v", err)
	}
	if rec, _ := s.Get("/q"); rec == nil {
		t.Error("a failed change removed the record")
	}
}

// Concurrent writers in several stores (as several processes) lose nothing.
func TestConcurrentUpdates(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "trust")
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		s := Open(dir)
		for i := 0; i < 25; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := s.Update("/counter", func(cur *Record) (*Record, error) {
					n := 0
					if cur != nil {
						fmt.Sscanf(cur.Digest, "%d", &n)
					}
					return &Record{Digest: fmt.Sprint(n + 1)}, nil
				})
				if err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	rec, err := Open(dir).Get("/counter")
	if err != nil || rec == nil || rec.Digest != "100" {
		t.Fatalf("after 100 increments: %+v, %v", rec, err)
	}
}

// A store someone else could write is refused, and nothing is followed out
// of it.
func TestUnsafeStore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"symlinked directory", func(t *testing.T, dir string) {
			must(t, os.Symlink(t.TempDir(), dir))
		}},
		{"writable by others", func(t *testing.T, dir string) {
			must(t, os.Mkdir(dir, 0o700))
			must(t, os.Chmod(dir, 0o777))
		}},
		{"symlinked record", func(t *testing.T, dir string) {
			must(t, os.Mkdir(dir, 0o700))
			victim := filepath.Join(t.TempDir(), "victim")
			must(t, os.WriteFile(victim, []byte(`{"path": "/p", "digest": "sha256:aa"}`), 0o600))
			must(t, os.Symlink(victim, filepath.Join(dir, fileName("/p"))))
		}},
		{"other owner", func(t *testing.T, dir string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to chown")
			}
			must(t, os.Mkdir(dir, 0o700))
			must(t, os.Chown(dir, 65534, 65534))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "trust")
			tc.setup(t, dir)
			s := Open(dir)
			// ErrUnsafe, of class permission denied (ccrun.ErrPermissionDenied, exit 77)
			unsafe := func(err error) bool { return errors.Is(err, ErrUnsafe) && errdefs.IsPermissionDenied(err) }
			if rec, err := s.Get("/p"); !unsafe(err) || rec != nil {
				t.Errorf("Get: %+v, %v; want ErrUnsafe, of class permission denied", rec, err)
			}
			if err := s.Update("/p", func(*Record) (*Record, error) { return &Record{Digest: "sha256:bb"}, nil }); !unsafe(err) {
				t.Errorf("Update: %v; want ErrUnsafe, of class permission denied", err)
			}
		})
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/st")
	if got := DefaultDir(); got != "/st/ccrun/trust" {
		t.Errorf("XDG_STATE_HOME: %s", got)
	}
	t.Setenv("XDG_STATE_HOME", "relative")
	t.Setenv("HOME", "/h")
	if got := DefaultDir(); got != "/h/.local/state/ccrun/trust" {
		t.Errorf("relative XDG_STATE_HOME: %s", got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
