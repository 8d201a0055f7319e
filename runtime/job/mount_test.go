package job

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
)

func TestMountProtected(t *testing.T) {
	t.Parallel()
	m := Mount{Host: "/p", Guest: "/w", Writable: true, Implants: []string{".git/hooks", "sub/.envrc"}}
	tests := []struct {
		rel  string
		want bool
	}{
		{".git/config", true},
		{"sub/.git/config", true},
		{".git/hooks", false},            // named
		{".git/hooks/pre-commit", false}, // under a named one
		{"x/.git/hooks/pre-commit", true},
		{".envrc", true},
		{"sub/.envrc", false},
		{"sub/.envrcx", false},
		{"ccrun.local.json", true},
		{".ccrun/capabilities/evil/capability.json", true},
		{"server.pem", true}, // leak class too
		{"main.go", false},
		{".git", false},
		{".", false},
		{"/.git/config", true},
		{"a/../.envrc", true},
	}
	for _, tc := range tests {
		if _, got := m.Protected(tc.rel); got != tc.want {
			t.Errorf("Protected(%q) = %v, want %v", tc.rel, got, tc.want)
		}
	}
}

// TestMountProtectedIn: git's view of the tree counts too, and Implants
// exempt what it finds as they exempt a row.
func TestMountProtectedIn(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		".git/HEAD":      {Data: []byte("ref: refs/heads/main\n")},
		".git/objects":   {Mode: fs.ModeDir | 0o755},
		".git/refs":      {Mode: fs.ModeDir | 0o755},
		"evil/HEAD":      {Data: []byte("ref: refs/heads/main\n")},
		"evil/objects":   {Mode: fs.ModeDir | 0o755},
		"evil/refs":      {Mode: fs.ModeDir | 0o755},
		"half/objects":   {Mode: fs.ModeDir | 0o755},
		"half/refs":      {Mode: fs.ModeDir | 0o755},
		"sub/.git":       {Data: []byte("gitdir: ../evil\n")},
		"plain/notes.md": {Data: []byte("x")},
	}
	m := Mount{Host: "/p", Guest: "/w", Writable: true, Implants: []string{".git/hooks"}}
	for _, tc := range []struct {
		rel  string
		want bool
	}{
		{".git/config", true},
		{".git/hooks/pre-commit", false}, // named
		{".git/HEAD", false},
		{".git/refs/heads/main", false},
		{"evil/config", true},
		{"evil/hooks/pre-commit", true}, // not named: .git/hooks is
		{"half/HEAD", true},
		{"half/config", false},
		{"sub/.git", true},
		{"plain/.git", true},
		{"plain/notes.md", false},
		{".", false},
	} {
		if _, got := m.ProtectedIn(fsys, tc.rel); got != tc.want {
			t.Errorf("ProtectedIn(%q) = %v, want %v", tc.rel, got, tc.want)
		}
	}
}

func TestMountCheckImplants(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "/abs/.envrc", "../.envrc", "a/../.envrc", ".", "main.go", "./.envrc"} {
		m := Mount{Host: "/p", Guest: "/w", Writable: true, Implants: []string{bad}}
		if err := m.CheckImplants(); !errors.Is(err, ErrInvalidMount) {
			t.Errorf("implant %q: err = %v, want ErrInvalidMount", bad, err)
		}
	}
	ok := Mount{Host: "/p", Guest: "/w", Writable: true, Implants: []string{".git/hooks", "sub/.envrc", ".vscode"}}
	if err := ok.CheckImplants(); err != nil {
		t.Errorf("good implants: %v", err)
	}
}

func TestMountDangerous(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	home := filepath.Join(top, "home", "me")
	proj := filepath.Join(home, "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	// A symlink elsewhere that is really $HOME.
	link := filepath.Join(top, "innocent")
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host string
		want bool
	}{
		{proj, false},
		{home, true},
		{filepath.Dir(home), true},
		{link, true},
		{"/", true},
		{"/etc", true},
	}
	for _, tc := range tests {
		real, got, err := Mount{Host: tc.host, Guest: "/w"}.Dangerous(home)
		if err != nil || got != tc.want {
			t.Errorf("Dangerous(%s) = %s, %v, %v; want %v", tc.host, real, got, err, tc.want)
		}
	}
	if real, _, _ := (Mount{Host: link}).Dangerous(home); real != home {
		t.Errorf("resolved %s = %s, want %s", link, real, home)
	}
	if _, _, err := (Mount{Host: filepath.Join(top, "missing")}).Dangerous(home); err == nil {
		t.Error("a missing source resolved")
	}
}
