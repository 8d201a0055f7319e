// Package projectdir finds a project's root: where ccrun.json, .ccrun/
// and the capabilities are. The root's New uses it when no directory is
// given (ccrun.WithProjectDir), and the CLI to find the project it runs
// in before it builds a Runtime.
package projectdir

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ccrun/ccrun/permission/allowlist"
)

// Find returns the project root for a start directory: the nearest
// directory from start upwards holding a ccrun.json, else the nearest one
// holding .git (git's top level), never above it; with neither, start
// itself. The root must be a directory of the current user that others
// cannot write into (allowlist.CheckProjectDir): a ccrun.json another user
// wrote into a shared parent such as /tmp is refused, with an error of
// classes ccrun.ErrInvalidConfig and fs.ErrPermission.
func Find(start string) (string, error) {
	start, err := filepath.Abs(start)
	if err != nil {
		return "", fmt.Errorf("project dir: %w", err)
	}
	root := start
	for dir := start; ; {
		if Marked(dir) {
			root = dir
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	if err := allowlist.CheckProjectDir(root); err != nil {
		return "", err
	}
	return root, nil
}

// Marked reports whether dir holds ccrun.json or .git.
func Marked(dir string) bool {
	for _, name := range []string{"ccrun.json", ".git"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}
