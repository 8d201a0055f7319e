package cli

import (
	"strings"
	"testing"
)

// --allow-host reaches the call: check shows the hosts a @shell call may
// reach, a malformed host is a usage error naming it, and the kernel
// guarantees missing here are named.
func TestAllowHost(t *testing.T) {
	fakeHome(t)
	dir := t.TempDir()
	out, stderr, code := ccrunIn(t, dir, "check", "--allow-host", "registry.npmjs.org", "--allow-host", "*.golang.org", "--shell", "make test")
	if code != 0 || !strings.Contains(out, "network:     only through ccrun's proxy, to: *.golang.org, registry.npmjs.org") {
		t.Errorf("check --allow-host: exit %d, %q %q", code, out, stderr)
	}
	out, _, _ = ccrunIn(t, dir, "check", "--shell", "make test")
	if !strings.Contains(out, `network:     the host's network (no "network" list in the settings)`) {
		t.Errorf("check without a list: %q", out)
	}
	_, stderr, code = ccrunIn(t, dir, "check", "--allow-host", "bad host!!", "--shell", "make test")
	if code != exitUsage || !strings.Contains(stderr, `"bad host!!"`) {
		t.Errorf("a malformed host: exit %d, %q; want %d naming it", code, stderr, exitUsage)
	}
	t.Setenv("CCRUN_LANDLOCK", "off")
	out, _, _ = ccrunIn(t, dir, "check", "--shell", "make test")
	if !strings.Contains(out, "kernel:      missing here: kernel confinement") {
		t.Errorf("CCRUN_LANDLOCK=off: check names no missing guarantee: %q", out)
	}
}
