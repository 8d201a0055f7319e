package shellcmd

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGetwd: getwd gives what os.Getwd gives, whatever $PWD says: the
// working directory, a symbolic link to it, another directory, a relative
// or unclean name, nothing.
func TestGetwd(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, pwd := range []string{dir, link, t.TempDir(), ".", dir + "/", dir + "/.", "", "/nonexistent"} {
		t.Setenv("PWD", pwd)
		got, gerr := getwd()
		want, werr := os.Getwd()
		if got != want || (gerr == nil) != (werr == nil) {
			t.Errorf("PWD=%q: getwd() = %q, %v; os.Getwd() = %q, %v", pwd, got, gerr, want, werr)
		}
	}
}
