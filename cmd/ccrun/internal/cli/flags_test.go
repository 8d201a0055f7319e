package cli

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// freeFlags are the CLI's string flags whose values are not a fixed list:
// with enumFlags, every string flag of every command (TestEnumFlags).
var freeFlags = map[string]string{
	"project-dir":   "a directory",
	"trust-digest":  "a digest",
	"shell":         "a command",
	"wasm":          "a file",
	"docker":        "an image",
	"mount":         "HOST:GUEST[:ro|rw]",
	"input":         "JSON, @FILE or -",
	"env":           "KEY=VALUE; capability new --env: the environments are the Runtime's, registered ones too (ceiling.ParseEnvironment)",
	"allow":         "a rule",
	"allow-host":    "a host: HOST, *.DOMAIN, HOST:PORT or an IP literal",
	"ask":           "a rule",
	"deny":          "a rule",
	"memory":        "a size",
	"output":        "a size",
	"session-allow": "a pattern",
	"http":          "an address",
	"token-file":    "a file",
	"allow-origin":  "an origin",
}

// walk calls f with every command of root, root too.
func walk(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, sub := range c.Commands() {
		walk(sub, f)
	}
}

// TestEnumFlags holds the list of enumerated flags to the CLI: every
// string flag is enumerated or known to be free; each listed flag exists,
// takes each of its values, refuses any other one (an alias, another case,
// the empty string) with the valid ones listed, and completes (from the
// same list: strictFlags).
func TestEnumFlags(t *testing.T) {
	t.Parallel()
	a := &app{eng: testEngines, io: stdio{strings.NewReader(""), io.Discard, io.Discard}}
	root := a.command()
	enum := map[string]bool{} // "path --flag"
	for _, ef := range enumFlags {
		for _, path := range ef.cmds {
			enum[path+" --"+ef.flag] = true
		}
	}
	walk(root, func(c *cobra.Command) {
		path := strings.TrimPrefix(c.CommandPath(), "ccrun ")
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if typ := f.Value.Type(); typ != "string" && typ != "stringArray" {
				return
			}
			if _, free := freeFlags[f.Name]; !free && !enum[path+" --"+f.Name] {
				t.Errorf("%s --%s: a string flag in neither enumFlags nor freeFlags", path, f.Name)
			}
		})
	})
	for _, ef := range enumFlags {
		for _, path := range ef.cmds {
			c, _, err := root.Find(strings.Fields(path))
			if err != nil || c.CommandPath() != "ccrun "+path {
				t.Errorf("enumFlags names %q, which the CLI does not have", path)
				continue
			}
			f := c.Flags().Lookup(ef.flag)
			if f == nil {
				t.Errorf("enumFlags names %s --%s, which the command does not have", path, ef.flag)
				continue
			}
			for _, v := range ef.valid {
				if err := f.Value.Set(v); err != nil {
					t.Errorf("%s --%s %s: %v", path, ef.flag, v, err)
				}
			}
			for _, v := range []string{"", "bogus", strings.ToUpper(ef.valid[0]), " " + ef.valid[0], ef.valid[0] + "x"} {
				err := f.Value.Set(v)
				if code := exitCode(nil, err); code != exitUsage || !strings.Contains(err.Error(), "valid: "+strings.Join(ef.valid, ", ")) {
					t.Errorf("%s --%s %q: %v (exit %d), want a usage error listing the valid values", path, ef.flag, v, err, code)
				}
			}
			if _, ok := c.GetFlagCompletionFunc(ef.flag); !ok {
				t.Errorf("%s --%s: no completion", path, ef.flag)
			}
		}
	}
}

// TestBadFlagValues: a bad value of a flag is a usage error (exit 64),
// never a configuration error (78), on one line that names the flag and
// the value once each, with nothing read, decided or run; a mode or
// directive spelled any other way than the valid ones (an alias that
// loosens: auto, yolo) is refused with the valid ones listed.
func TestBadFlagValues(t *testing.T) {
	deadDocker(t)
	t.Setenv("CCRUN_SESSION_DIR", filepath.Join(t.TempDir(), "sessions"))
	t.Setenv(trustDigestEnv, "")
	for _, tc := range []struct {
		args []string
		want string // the whole report
	}{
		{[]string{"exec", "--mode", "auto", "--shell", "touch ran"}, `"auto" is not a valid --mode; valid: plan, default, accept-edits, trust`},
		{[]string{"exec", "--mode", "yolo", "--shell", "touch ran"}, `"yolo" is not a valid --mode; valid: plan, default, accept-edits, trust`},
		{[]string{"exec", "--mode=Trust", "--shell", "touch ran"}, `"Trust" is not a valid --mode; valid: plan, default, accept-edits, trust`},
		{[]string{"check", "--mode", "edit", "--shell", "touch ran"}, `"edit" is not a valid --mode; valid: plan, default, accept-edits, trust`},
		{[]string{"exec", "--directive", "readonly", "--shell", "touch ran"}, `"readonly" is not a valid --directive; valid: read-only, plan-only, analyze-only, do-not-edit`},
		{[]string{"exec", "--allow", "bad key!!", "--shell", "touch ran"}, `--allow: "bad key!!": the tool, before the first colon, must be letters, digits, _ - . (want tool:action[:detail], e.g. run_command:git:status): invalid permission key`},
		{[]string{"check", "--deny", `run_command:"a`, "--shell", "true"}, `--deny: "run_command:\"a": unterminated or malformed quoted segment (want tool:action[:detail], e.g. run_command:git:status): invalid permission key`},
		{[]string{"--trust-digest", "md5:00", "exec", "--shell", "touch ran"}, `--trust-digest "md5:00": want sha256: and 64 lowercase hex digits (ccrun trust --digest prints it)`},
		{[]string{"exec", "--approve", "always", "--shell", "touch ran"}, `"always" is not a valid --approve; valid: once, session, project, unconfined`},
		{[]string{"exec", "--events", "text", "--shell", "touch ran"}, `"text" is not a valid --events; valid: json`},
		{[]string{"exec", "--approve", "once", "--network", "bogus", "--docker", "busybox", "--", "true"}, `"bogus" is not a valid --network; valid: none, bridge, host`},
		{[]string{"exec", "--pull", "sometimes", "--docker", "busybox", "--", "true"}, `"sometimes" is not a valid --pull; valid: missing, never, always`},
		{[]string{"exec", "--engine", "Kubernetes", "--shell", "touch ran"}, `"Kubernetes" is not a valid --engine; valid: docker, kubernetes`},
		{[]string{"doctor", "--engine", "bogus"}, `"bogus" is not a valid --engine; valid: docker, kubernetes`},
		{[]string{"gc", "--engine", "bogus"}, `"bogus" is not a valid --engine; valid: docker, kubernetes`},
		{[]string{"allowlist", "add", "capability:x", "--scope", "proj"}, `"proj" is not a valid --scope; valid: session, project`},
		{[]string{"exec", "--timeout", "soon", "--shell", "touch ran"}, `"soon" is not a valid --timeout; want a duration such as 30s or 1m30s`},
		{[]string{"exec", "--approve", "once", "--mount", "a:/b:zz", "--wasm", "x.wasm"}, `--mount: "a:/b:zz": mode "zz": want ro or rw`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			_, stderr, code := ccrunIn(t, dir, tc.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d; stderr %q", code, exitUsage, stderr)
			}
			if want := "ccrun: " + tc.want + "\n"; stderr != want {
				t.Errorf("stderr\n got %q\nwant %q", stderr, want)
			}
			assertNoStutter(t, stderr)
			if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
				t.Error("the command ran")
			}
		})
	}
	// The same digest in the environment is the configuration's: 78.
	t.Setenv(trustDigestEnv, "md5:00")
	if _, stderr, code := ccrunIn(t, t.TempDir(), "check", "--shell", "true"); code != exitConfig {
		t.Errorf("%s=md5:00: exit %d, want %d; %q", trustDigestEnv, code, exitConfig, stderr)
	}
}

// assertNoStutter fails when a report says a quoted value or a class twice.
func assertNoStutter(t *testing.T, msg string) {
	t.Helper()
	seen := map[string]bool{}
	for _, q := range regexp.MustCompile(`"(?:[^"\\]|\\.)*"`).FindAllString(msg, -1) {
		if seen[q] {
			t.Errorf("%q names %s twice", msg, q)
		}
		seen[q] = true
	}
	if n := strings.Count(msg, "invalid "); n > 1 {
		t.Errorf("%q gives %d classes", msg, n)
	}
	for _, w := range strings.Fields(msg) {
		if strings.HasPrefix(w, "--") && strings.Count(msg, w) > 1 && !slices.Contains([]string{"--", "--digest"}, w) {
			t.Errorf("%q names %s twice", msg, w)
		}
	}
}

// TestCheckShell: check takes a shell command as exec does, by --shell,
// and by nothing else: --command is no flag of ccrun.
func TestCheckShell(t *testing.T) {
	dir := t.TempDir()
	if out, stderr, code := ccrunIn(t, dir, "check", "--json", "--shell", "ls"); code != 0 || !strings.Contains(out, `"key": "run_command:ls"`) {
		t.Errorf("check --shell ls: exit %d, %q %q", code, out, stderr)
	}
	if _, stderr, code := ccrunIn(t, dir, "check", "--command", "ls"); code != exitUsage || !strings.HasPrefix(stderr, "ccrun: unknown flag: --command") {
		t.Errorf("check --command ls: exit %d, %q; want %d, an unknown flag", code, stderr, exitUsage)
	}
	var help strings.Builder
	run([]string{"check", "--help"}, stdio{strings.NewReader(""), &help, &help})
	if !strings.Contains(help.String(), "--shell") || strings.Contains(help.String(), "--command") {
		t.Errorf("check --help:\n%s", help.String())
	}
}
