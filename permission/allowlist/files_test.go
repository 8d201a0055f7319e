package allowlist

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ccrun/ccrun/internal/errclass"
)

// TestReadProjectFile: a missing file is fs.ErrNotExist; a symbolic link
// or a fifo is refused (and a fifo does not hang the read).
func TestReadProjectFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := ReadProjectFile(filepath.Join(dir, "missing.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	victim := filepath.Join(t.TempDir(), "elsewhere.json")
	alMust(t, os.WriteFile(victim, []byte(`{}`), 0o644))
	link := filepath.Join(dir, "ccrun.local.json")
	alMust(t, os.Symlink(victim, link))
	if _, err := ReadProjectFile(link); !errors.Is(err, errclass.InvalidConfig) || !errors.Is(err, fs.ErrPermission) {
		t.Errorf("a symbolic link: %v, want errclass.InvalidConfig and fs.ErrPermission", err)
	}
	fifo := filepath.Join(dir, "ccrun.json")
	if err := syscall.Mkfifo(fifo, 0o644); err == nil {
		if _, err := ReadProjectFile(fifo); !errors.Is(err, errclass.InvalidConfig) {
			t.Errorf("a fifo: %v, want errclass.InvalidConfig (and no hang)", err)
		}
	}
}

func TestCheckProjectDir(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(dir string) error
		ok    bool
	}{
		{"own", func(string) error { return nil }, true},
		{"writable by all, no sticky bit", func(d string) error { return os.Chmod(d, 0o777) }, false},
		{"writable by all, sticky, own", func(d string) error { return os.Chmod(d, 0o777|fs.ModeSticky) }, true},
		{"another user's", func(d string) error {
			if os.Geteuid() != 0 {
				return errSkip
			}
			return os.Chown(d, 65534, 65534)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := tc.setup(dir); errors.Is(err, errSkip) {
				t.Skip("needs root")
			} else if err != nil {
				t.Fatal(err)
			}
			err := CheckProjectDir(dir)
			if tc.ok && err != nil {
				t.Errorf("refused: %v", err)
			}
			if !tc.ok && (!errors.Is(err, errclass.InvalidConfig) || !errors.Is(err, fs.ErrPermission)) {
				t.Errorf("got %v, want errclass.InvalidConfig and fs.ErrPermission", err)
			}
		})
	}
}

var errSkip = errors.New("skip")
