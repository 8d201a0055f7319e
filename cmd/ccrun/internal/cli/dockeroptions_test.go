package cli

import (
	"strings"
	"testing"
)

// TestDockerOptionsFlags: --network and --pull are @docker's options of
// the call: check shows the network as a loosening of a @docker call, a
// value no engine knows is a usage error, and given to a @shell call they
// are refused before anyone is asked, naming both environments.
func TestDockerOptionsFlags(t *testing.T) {
	fakeHome(t)
	dir := t.TempDir()
	out, stderr, _ := ccrunIn(t, dir, "check", "--network", "bridge", "--docker", "busybox:1.36", "--", "true")
	if !strings.Contains(out, "loosens:     network: bridge") {
		t.Errorf("check --network bridge: %q %q; want the loosening shown", out, stderr)
	}
	for _, args := range [][]string{
		{"exec", "--network", "host", "--shell", "true"},
		{"check", "--pull", "always", "--shell", "true"},
		{"exec", "--approve", "once", "--pull", "never", "--shell", "true"},
	} {
		_, stderr, code := ccrunIn(t, dir, args...)
		if code != exitUsage || !strings.Contains(stderr, "apply to @docker calls only") || !strings.Contains(stderr, "a @shell call") {
			t.Errorf("%q: exit %d, %q; want %d, saying the options are @docker's", args, code, stderr, exitUsage)
		}
	}
	_, stderr, code := ccrunIn(t, dir, "exec", "--pull", "sometimes", "--docker", "busybox:1.36", "--", "true")
	if code != exitUsage || !strings.Contains(stderr, "sometimes") {
		t.Errorf("--pull sometimes: exit %d, %q; want %d naming it", code, stderr, exitUsage)
	}
}
