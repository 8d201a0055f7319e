package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A token file others can read is refused, as ssh refuses such a key; so
// are the HTTP flags without --http.
func TestMCPTokenFileMode(t *testing.T) {
	fakeHome(t)
	dir := t.TempDir()
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660} {
		f := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(f, []byte("ccrun_0123456789abcdef\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(f, mode); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := ccrunIn(t, dir, "mcp", "--http", "127.0.0.1:0", "--token-file", f)
		if code != exitUsage || !strings.Contains(stderr, "too open") || !strings.Contains(stderr, "chmod 600") {
			t.Errorf("token file of mode %04o: exit %d, %q; want %d saying it is too open", mode, code, stderr, exitUsage)
		}
	}
	for _, args := range [][]string{{"--allow-origin", "https://x.example"}, {"--session-timeout", "1m"}, {"--max-sessions", "3"}} {
		if _, stderr, code := ccrunIn(t, dir, append([]string{"mcp"}, args...)...); code != exitUsage || !strings.Contains(stderr, "needs --http") {
			t.Errorf("%q without --http: exit %d, %q", args, code, stderr)
		}
	}
}
