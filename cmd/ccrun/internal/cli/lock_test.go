package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Under "flags": "no-loosening" every input that loosens the gate is
// refused, the flag and its environment twin alike, and a mode flag may
// only tighten the mode the settings give; what tightens is accepted.
func TestLockHasNoSideDoor(t *testing.T) {
	home := fakeHome(t)
	writeFiles(t, home, map[string]string{".config/ccrun/config.json": `{"mode": "plan", "flags": "no-loosening",
		"permissions": {"allow": ["run_command:touch"]}}`})
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"ccrun.local.json": `{"permissions": {"allow": ["run_command:touch"]}}`})
	digest := "sha256:" + strings.Repeat("0", 64)
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"--approve", nil, []string{"exec", "--approve", "once", "--shell", "touch x"}},
		{"--approve unconfined", nil, []string{"exec", "--approve", "unconfined", "--shell", "touch x"}},
		{"--mode trust", nil, []string{"exec", "--mode", "trust", "--shell", "touch x"}},
		{"--mode accept-edits", nil, []string{"exec", "--mode", "accept-edits", "--shell", "touch x"}},
		{"--mode default over plan", nil, []string{"exec", "--mode", "default", "--shell", "touch x"}},
		{"--allow", nil, []string{"exec", "--allow", "run_command:*", "--shell", "touch x"}},
		{"--allow-host", nil, []string{"exec", "--allow-host", "example.com", "--shell", "touch x"}},
		{"check --allow", nil, []string{"check", "--allow", "run_wasm:*", "--shell", "ls"}},
		{"check --session-allow", nil, []string{"check", "--session-allow", "run_command:*", "--shell", "touch x"}},
		{"--trust-digest", nil, []string{"--trust-digest", digest, "exec", "--shell", "ls"}},
		{"CCRUN_TRUST_DIGEST exec", map[string]string{trustDigestEnv: digest}, []string{"exec", "--shell", "touch x"}},
		{"CCRUN_TRUST_DIGEST check", map[string]string{trustDigestEnv: digest}, []string{"check", "--shell", "ls"}},
		{"CCRUN_LANDLOCK=off", map[string]string{"CCRUN_LANDLOCK": "off"}, []string{"exec", "--shell", "ls"}},
		{"allowlist add", nil, []string{"allowlist", "add", "run_wasm:*", "--scope", "project"}},
		{"trust --yes", nil, []string{"trust", "--yes"}},
		{"trust --digest", nil, []string{"trust", "--digest"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			out, stderr, code := ccrunIn(t, dir, tc.args...)
			if code != exitDenied || !strings.Contains(stderr, "no-loosening") {
				t.Errorf("%q: exit %d, %q; want %d naming the lock", tc.args, code, stderr, exitDenied)
			}
			if strings.Contains(out, "sha256:") {
				t.Errorf("%q printed a digest under the lock: %q", tc.args, out)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("a locked input ran the command")
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"plain", nil, []string{"exec", "--shell", "ls"}},
		{"--mode plan", nil, []string{"exec", "--mode", "plan", "--shell", "ls"}},
		{"--deny", nil, []string{"check", "--deny", "run_command:rm", "--shell", "ls"}},
		{"--ask", nil, []string{"check", "--ask", "run_command:ls", "--shell", "ls"}},
		{"--directive", nil, []string{"exec", "--directive", "read-only", "--shell", "ls"}},
		{"CCRUN_LANDLOCK=on", map[string]string{"CCRUN_LANDLOCK": "on"}, []string{"exec", "--shell", "ls"}},
		{"CCRUN_WASM_SERVER=0", map[string]string{"CCRUN_WASM_SERVER": "0"}, []string{"exec", "--shell", "ls"}},
		{"trust --list", nil, []string{"trust", "--list"}},
	} {
		t.Run("tightens/"+tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			if _, stderr, code := ccrunIn(t, dir, tc.args...); code != 0 {
				t.Errorf("%q: exit %d, %q; want 0", tc.args, code, stderr)
			}
		})
	}
	// A mode flag equal to the settings' is no loosening.
	writeFiles(t, home, map[string]string{".config/ccrun/config.json": `{"mode": "accept-edits", "flags": "no-loosening"}`})
	if _, stderr, code := ccrunIn(t, dir, "check", "--mode", "accept-edits", "--shell", "ls"); code != 0 {
		t.Errorf("--mode accept-edits under a configured accept-edits: exit %d, %q", code, stderr)
	}
	if _, stderr, code := ccrunIn(t, dir, "check", "--mode", "trust", "--shell", "ls"); code != exitDenied {
		t.Errorf("--mode trust under a configured accept-edits: exit %d, %q", code, stderr)
	}
}

// TestTrustShowsIgnored: a @shell key granted for the project, which the
// gate never counts (the ceiling), is not listed among what the files
// loosen (nor in the digest), but as ignored, with why.
func TestTrustShowsIgnored(t *testing.T) {
	fakeHome(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"ccrun.json": `{"allowlist": {"run_command:make": "AlwaysThisProject", "run_docker:ccrun-test:busybox": "AlwaysThisProject"}}`})
	out := trustYes(t, dir)
	loosens, ignored, ok := strings.Cut(out, "Ignored by the gate")
	if !ok || strings.Contains(loosens, "run_command:make") || !strings.Contains(loosens, "run_docker:ccrun-test:busybox") {
		t.Fatalf("trust --yes:\n%s\nwant run_docker among what loosens and run_command:make apart, as ignored", out)
	}
	if !strings.Contains(ignored, "run_command:make") || !strings.Contains(ignored, "ceiling") {
		t.Errorf("the ignored entry without its reason:\n%s", ignored)
	}
	// Only the violating entry: nothing to trust, and it says why.
	writeFiles(t, dir, map[string]string{"ccrun.json": `{"allowlist": {"run_command:make": "AlwaysThisProject"}}`})
	out = trustYes(t, dir)
	if !strings.Contains(out, "nothing to trust") || !strings.Contains(out, "run_command:make") || !strings.Contains(out, "ignored") {
		t.Errorf("trust --yes of an ignored entry alone:\n%s", out)
	}
}
