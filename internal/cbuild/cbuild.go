// Package cbuild is what ccrun's freestanding C programs share: their
// system call entry (syscall.h, included by once's and ccrun-confine's
// sys.h) and, for their tests, Make, which rebuilds them with the
// Makefile's rule so that a test can compare the committed binaries with
// what their source builds to.
package cbuild

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RequireEnv set to 1 (CI sets it) turns a missing compiler into a
// failure instead of a skip.
const RequireEnv = "CCRUN_REQUIRE_CC"

// Make runs `make target` at the module's root (root, relative to the
// test's directory) with each of outVars (the rule's output directory
// variables) set to a temporary directory, and returns that directory. Without
// make, gcc or aarch64-linux-gnu-gcc the test is skipped, or fails under
// RequireEnv=1.
func Make(t testing.TB, root, target string, outVars ...string) string {
	t.Helper()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, cc := range []string{"make", "gcc", "aarch64-linux-gnu-gcc"} {
		if _, err := exec.LookPath(cc); err != nil {
			if os.Getenv(RequireEnv) == "1" || os.Getenv("CI") != "" {
				t.Fatalf("%s missing: install it (apt-get install make gcc gcc-aarch64-linux-gnu)", cc)
			}
			t.Skipf("%s missing", cc)
		}
	}
	out := t.TempDir()
	args := []string{"-s", "-C", abs, target}
	for _, v := range outVars {
		args = append(args, v+"="+out)
	}
	if b, err := exec.Command("make", args...).CombinedOutput(); err != nil {
		t.Fatalf("make %s: %v\n%s", target, err, b)
	}
	return out
}
