package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
)

// A file ccrun reads on a call's behalf is checked like an argument: with
// an allow rule for a capability that echoes its input, --input @ a
// credential is asked (and, with nobody to ask, denied), through a link
// and a .. too; an ordinary file still runs as allowed.
func TestInputFileDangerous(t *testing.T) {
	home := fakeHome(t)
	const token = `{"accessToken": "SECRET-TOKEN-123"}`
	writeFiles(t, home, map[string]string{
		".claude/.credentials.json": token,
		".config/ccrun/config.json": `{"permissions": {"allow": ["capability:echo"]}}`,
	})
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, ".git"), 0o755)
	if _, err := capabilities.Scaffold(dir, "echo", ceiling.Shell); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{"data.json": `{"x": 1}`})
	if err := os.Symlink(filepath.Join(home, ".claude"), filepath.Join(dir, "notes")); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := ccrunIn(t, dir, "exec", "echo", "--input", "@"+filepath.Join(dir, "data.json"))
	if code != 0 || !strings.Contains(out, `"x": 1`) {
		t.Fatalf("an ordinary input file: exit %d, %q %q", code, out, stderr)
	}
	for _, in := range []string{
		filepath.Join(home, ".claude", ".credentials.json"),
		filepath.Join(dir, "notes", ".credentials.json"),                              // a link into the home
		filepath.Join(dir, "..", filepath.Base(home), ".claude", ".credentials.json"), // .. (home beside dir)
	} {
		if _, err := os.Stat(in); err != nil {
			continue // the temporary directories are not siblings here
		}
		out, stderr, code := ccrunIn(t, dir, "exec", "echo", "--input", "@"+in)
		if code != exitDenied || strings.Contains(out, "SECRET") || !strings.Contains(stderr, "dangerous") {
			t.Errorf("--input @%s: exit %d, stdout %q, stderr %q; want %d, asked as a dangerous path, nothing printed", in, code, out, stderr, exitDenied)
		}
	}
}
