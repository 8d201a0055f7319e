package rootfs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	esys "github.com/tetratelabs/wazero/experimental/sys"
	"golang.org/x/sys/unix"

	"github.com/ccrun/ccrun/runtime/job"
)

// opRaceDuration is how long TestSwapRaceOps runs each operation against
// the swap.
const opRaceDuration = time.Second

// raceOps are the changes TestSwapRaceOps makes through x, over and over:
// each would change .git (a file, a mode, a time, a directory) were it
// redirected there. Each returns whether its change went through.
var raceOps = map[string]func(m esys.FS) bool{
	"write": func(m esys.FS) bool {
		return write(m, "x/config", esys.O_WRONLY|esys.O_CREAT|esys.O_TRUNC)
	},
	"create": func(m esys.FS) bool {
		ok := write(m, "x/hooks/pre-commit", esys.O_WRONLY|esys.O_CREAT|esys.O_EXCL)
		_ = m.Unlink("x/hooks/pre-commit")
		return ok
	},
	"mkdir": func(m esys.FS) bool {
		ok := m.Mkdir("x/hooks/d", 0o755) == 0
		_ = m.Rmdir("x/hooks/d")
		return ok
	},
	"rmdir": func(m esys.FS) bool {
		ok := m.Rmdir("x/hooks/sub") == 0
		_ = m.Mkdir("x/hooks/sub", 0o755)
		return ok
	},
	"unlink": func(m esys.FS) bool {
		ok := m.Unlink("x/config") == 0
		write(m, "x/config", esys.O_WRONLY|esys.O_CREAT)
		return ok
	},
	"rename onto": func(m esys.FS) bool {
		write(m, "x/f", esys.O_WRONLY|esys.O_CREAT)
		return m.Rename("x/f", "x/config") == 0
	},
	"rename from": func(m esys.FS) bool {
		ok := m.Rename("x/config", "x/moved") == 0
		_ = m.Rename("x/moved", "x/config")
		return ok
	},
	"link": func(m esys.FS) bool {
		ok := m.Link("x/f", "x/hooks/pre-commit") == 0
		_ = m.Unlink("x/hooks/pre-commit")
		return ok
	},
	"symlink": func(m esys.FS) bool {
		ok := m.Symlink("../f", "x/hooks/pre-commit") == 0
		_ = m.Unlink("x/hooks/pre-commit")
		return ok
	},
	"chmod": func(m esys.FS) bool { return m.Chmod("x/config", 0o600) == 0 },
	"utimes": func(m esys.FS) bool {
		return m.Utimens("x/config", 1e9, 1e9) == 0
	},
	// (A file opened read-only cannot be truncated: ftruncate(2) refuses
	// its descriptor.)
	"futimes opened read-only": func(m esys.FS) bool {
		f, e := m.OpenFile("x/config", esys.O_RDONLY, 0)
		if e != 0 {
			return false
		}
		defer f.Close()
		return f.Utimens(1e9, 1e9) == 0
	},
}

func write(m esys.FS, name string, flag esys.Oflag) bool {
	f, e := m.OpenFile(name, flag, 0o644)
	if e != 0 {
		return false
	}
	defer f.Close()
	_, e = f.Write([]byte("PLANTED"))
	return e == 0
}

// protectedOf is every protected entry of the repository dir (.git/config
// and all of .git/hooks): inode, type, mode, mtime, content. Other names
// under .git are not protected: a rename walked to x/ and then to x/moved
// with x swapped in between may land a file at .git/moved, as the guest
// could have written .git/moved.
func protectedOf(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	add := func(p string) error {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			out = append(out, fmt.Sprintf("%s: %v", p, err))
			return nil
		}
		b, _ := os.ReadFile(p)
		r, _ := filepath.Rel(dir, p)
		out = append(out, fmt.Sprintf("%s ino %d mode %o mtime %d %q", r, st.Ino, st.Mode, st.Mtim.Nano(), b))
		return nil
	}
	_ = add(filepath.Join(dir, "config"))
	err := filepath.WalkDir(filepath.Join(dir, "hooks"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return add(p)
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// TestSwapRaceOps runs each of raceOps through a writable mount while a
// host thread swaps the directory x with a link y -> .git
// (renameat2(RENAME_EXCHANGE)) as fast as it can: each change is walked
// and checked as one step, so none reaches .git, and they still work in
// x. The guest's side is TestSwapRace in runtime/wasm.
//
// A change that names two paths (a rename, a link) walks each in turn: x
// may be swapped between the two walks, and the change then goes from
// one directory to the other; each of its two paths was checked where it
// was walked.
func TestSwapRaceOps(t *testing.T) {
	t.Parallel()
	for name, op := range raceOps {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for _, d := range []string{".git", "x"} {
				for _, err := range []error{
					os.MkdirAll(filepath.Join(dir, d, "hooks", "sub"), 0o755),
					os.WriteFile(filepath.Join(dir, d, "config"), []byte("CONFIG OF "+d), 0o644),
					os.WriteFile(filepath.Join(dir, d, "f"), []byte("F"), 0o644),
					os.Chtimes(filepath.Join(dir, d, "config"), time.Unix(5e8, 0), time.Unix(5e8, 0)),
				} {
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := os.Symlink(".git", filepath.Join(dir, "y")); err != nil {
				t.Fatal(err)
			}
			before := protectedOf(t, filepath.Join(dir, ".git"))
			r, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			mfs, err := New(r, job.Mount{Host: dir, Guest: "/m", Writable: true}, NewRun())
			if err != nil {
				t.Fatal(err)
			}
			if c, ok := mfs.(interface{ Close() error }); ok {
				defer c.Close()
			}

			var stop atomic.Bool
			var wg sync.WaitGroup
			var swaps int
			wg.Go(func() {
				x, y := filepath.Join(dir, "x"), filepath.Join(dir, "y")
				for !stop.Load() {
					if err := unix.Renameat2(unix.AT_FDCWD, x, unix.AT_FDCWD, y, unix.RENAME_EXCHANGE); err != nil {
						t.Errorf("swap: %v", err)
						return
					}
					swaps++
				}
			})
			done, tried := 0, 0
			for end := time.Now().Add(opRaceDuration); time.Now().Before(end); tried++ {
				if op(mfs) {
					done++
				}
			}
			stop.Store(true)
			wg.Wait()
			if after := protectedOf(t, filepath.Join(dir, ".git")); after != before {
				t.Errorf(".git changed (%d of %d done, %d swaps):\nbefore:\n%s\nafter:\n%s", done, tried, swaps, before, after)
			}
			if done == 0 {
				t.Errorf("none of %d went through: the change must still work in x", tried)
			}
			t.Logf("%d of %d done, %d swaps", done, tried, swaps)
		})
	}
}
