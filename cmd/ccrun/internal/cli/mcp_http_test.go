package cli

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

// A --http value that is not a loopback address says what was wrong and
// what to give instead, in one clean line, before anything is served.
func TestMCPHTTPAddress(t *testing.T) {
	fakeHome(t)
	dir := t.TempDir()
	for _, c := range []struct {
		addr string
		want []string // each in the message
	}{
		{":18766", []string{"--http :18766: no host given", "use 127.0.0.1:18766 or [::1]:18766"}},
		{"18766", []string{"no host given", "use 127.0.0.1:18766 or [::1]:18766"}},
		{"0.0.0.0:1", []string{"0.0.0.0 means every network interface", "use 127.0.0.1:1 or [::1]:1"}},
		{"[::]:1", []string{":: means every network interface", "use 127.0.0.1:1 or [::1]:1"}},
		{"192.168.1.2:80", []string{"192.168.1.2 is not a loopback address", "use 127.0.0.1:80"}},
		{"example.com:80", []string{"example.com is a host name", "use 127.0.0.1:80"}},
		{"localhost:x", []string{`port "x" is not a number`, "use localhost:8765"}},
		{"127.0.0.1:70000", []string{`port "70000" is not a number`}},
		{"localhost", []string{"no port given", "use localhost:8765"}},
		{"[::1]", []string{"no port given"}},
		{"::1", []string{"brackets", "[::1]:8765"}},
		{"http://127.0.0.1:8765/", []string{"without http://", "--http 127.0.0.1:8765"}},
		{"unix:", []string{"needs a path"}},
		{"", []string{"--http: empty address", "leave --http out"}},
	} {
		_, stderr, code := ccrunIn(t, dir, "mcp", "--http", c.addr)
		if code != exitUsage {
			t.Errorf("--http %q: exit %d, want %d; stderr %q", c.addr, code, exitUsage, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("--http %q: stderr %q lacks %q", c.addr, stderr, w)
			}
		}
		if strings.Contains(stderr, "  ") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("--http %q: want one line without a double space, got %q", c.addr, stderr)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "LOCALHOST:0", "[::1]:0", "unix:" + filepath.Join(t.TempDir(), "s")} {
		if _, _, err := httpAddr(addr); err != nil {
			t.Errorf("--http %q refused: %v", addr, err)
		}
	}
}
