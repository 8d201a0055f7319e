package hostile

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Entry is one command of a corpus: its text and where it was found.
type Entry struct {
	Command string `json:"command"`
	Source  string `json:"source"`
}

// Corpus reads the commands of testdata/NAME/commands.json at the
// module's root: "hostile", gathered from public reports of allowlist
// bypasses (none may ever be taken as read-only), and "readonly", everyday
// read-only commands (each must be). A file that does not read fails tb.
func Corpus(tb testing.TB, name string) []Entry {
	tb.Helper()
	root, err := moduleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(root, "testdata", name, "commands.json")
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var entries []Entry
	if err := json.Unmarshal(data, &entries); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return entries
}

// moduleRoot is the nearest directory at or above the working directory (a
// test's package) that holds go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("hostile: no go.mod above the working directory")
		}
		dir = up
	}
}
