package job

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
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
