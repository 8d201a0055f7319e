package allowlist

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/errclass"
	"github.com/ccrun/ccrun/permission/keys"
)

// The test binary runs itself as the other processes of the multi-process
// tests: with alHelperEnv set, init does the helper's job and exits before any
// test runs.
const alHelperEnv = "CCRUN_PERMISSION_TEST_HELPER"

func init() {
	mode := os.Getenv(alHelperEnv)
	if mode == "" {
		return
	}
	os.Exit(alRunHelper(mode, os.Args[len(os.Args)-3:]))
}

// runHelper: "grant PATH WORKER N" waits for stdin to close, then adds N
// keys to the project file; "crash PATH WORKER N" adds one key but dies
// between writing the temp file and renaming it.
func alRunHelper(mode string, args []string) int {
	path := args[0]
	worker, _ := strconv.Atoi(args[1])
	n, _ := strconv.Atoi(args[2])
	p, err := LoadProject(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	switch mode {
	case "grant":
		_, _ = io.Copy(io.Discard, os.Stdin) // the starting gun: all start together
		for i := range n {
			e := Entry{Pattern: keys.MustParsePattern(fmt.Sprintf("capability:w%02d-k%02d", worker, i)), Grant: ceiling.AlwaysThisProject}
			if i%2 == 1 {
				e.Digest = fmt.Sprintf("sha256:%064x", worker*1000+i)
			}
			if err := p.Add(e); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		return 0
	case "crash":
		testHookBeforeRename = func(string) { os.Exit(3) }
		_ = p.Add(Entry{Pattern: keys.MustParsePattern("capability:never-written"), Grant: ceiling.AlwaysThisProject})
		return 4 // not reached
	}
	return 2
}

func alHelperCmd(t *testing.T, mode, path string, worker, n int) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$", path, strconv.Itoa(worker), strconv.Itoa(n))
	cmd.Env = append(os.Environ(), alHelperEnv+"="+mode)
	cmd.Stderr = new(bytes.Buffer)
	return cmd
}

// alProjectTemplate is a ccrun.json in the format Add writes, so that adding
// and removing an entry must give back the very same bytes.
const alProjectTemplate = `{
  "$schema": "https://ccrun.dev/schema/ccrun.json",
  "mode": "default",
  "allow": [
    "run_command:go:test",
    "write_file:tests/**"
  ],
  "allowlist": {
    "capability:fmt-json": {"grant": "AlwaysThisProject", "digest": "` + alDigestA + `"},
    "capability:lint": "AlwaysThisProject"
  },
  "deny": ["run_command:rm"],
  "env": {"pass": ["GOFLAGS"], "note": "ünïcode & <html>"}
}
`

func alWriteProject(t testing.TB, text string) string {
	t.Helper()
	path := ProjectFile(t.TempDir())
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func alReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// topMembers returns the names and compacted values of a JSON object's
// members, in order.
func alTopMembers(t *testing.T, data []byte) [][2]string {
	t.Helper()
	doc, err := parseProjectDoc("test", data)
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for _, m := range doc.members {
		var b bytes.Buffer
		if err := json.Compact(&b, m.raw); err != nil {
			t.Fatal(err)
		}
		out = append(out, [2]string{m.name, b.String()})
	}
	return out
}

func alPatterns(entries []Entry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Pattern.String())
	}
	return out
}

func TestProjectFile(t *testing.T) {
	t.Parallel()
	if got, want := ProjectFile("/p"), "/p/ccrun.json"; got != want {
		t.Errorf("ProjectFile = %q, want %q", got, want)
	}
}

func TestProjectLoad(t *testing.T) {
	t.Parallel()
	p, err := LoadProject(alWriteProject(t, alProjectTemplate))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Pattern: keys.MustParsePattern("capability:fmt-json"), Grant: ceiling.AlwaysThisProject, Expiry: Never, Digest: alDigestA},
		{Pattern: keys.MustParsePattern("capability:lint"), Grant: ceiling.AlwaysThisProject, Expiry: Never},
	}
	if diff := cmp.Diff(want, p.Entries()); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if m := p.Lookup(keys.MustParseKey("capability:fmt-json"), alDigestA, alNow); !m.OK {
		t.Errorf("lookup with the approved digest: %+v", m)
	}
	m := p.Lookup(keys.MustParseKey("capability:fmt-json"), alDigestB, alNow)
	if m.OK || len(m.Problems) != 1 || !strings.Contains(m.Problems[0], "changed since approval") {
		t.Errorf("lookup with another digest: %+v, want a 'changed since approval' problem", m)
	}
}

func TestProjectMissingFileIsEmpty(t *testing.T) {
	t.Parallel()
	path := ProjectFile(t.TempDir())
	p, err := LoadProject(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Entries()) != 0 {
		t.Errorf("entries of a missing file: %v", p.Entries())
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("loading created the file: %v", err)
	}
	if err := p.Add(Entry{Pattern: keys.MustParsePattern("capability:x"), Grant: ceiling.AlwaysThisProject}); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"allowlist\": {\n    \"capability:x\": \"AlwaysThisProject\"\n  }\n}\n"
	if got := string(alReadFile(t, path)); got != want {
		t.Errorf("new file:\n%s\nwant:\n%s", got, want)
	}
}

func TestProjectAddRemovePreservesFile(t *testing.T) {
	t.Parallel()
	path := alWriteProject(t, alProjectTemplate)
	p, err := LoadProject(path)
	if err != nil {
		t.Fatal(err)
	}
	before := alReadFile(t, path)
	added := Entry{Pattern: keys.MustParsePattern(`run_wasm:"tools/a b.wasm"`), Grant: ceiling.AlwaysThisProject, Expiry: Never}
	if err := p.Add(added); err != nil {
		t.Fatal(err)
	}
	after := alReadFile(t, path)
	if diff := cmp.Diff(alTopMembers(t, before)[:3], alTopMembers(t, after)[:3]); diff != "" {
		t.Errorf("members before the allowlist changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(alTopMembers(t, before)[4:], alTopMembers(t, after)[4:]); diff != "" {
		t.Errorf("members after the allowlist changed (-before +after):\n%s", diff)
	}
	wantOrder := []string{"capability:fmt-json", "capability:lint", `run_wasm:"tools/a b.wasm"`}
	if diff := cmp.Diff(wantOrder, alPatterns(p.Entries())); diff != "" {
		t.Errorf("entries in memory (-want +got):\n%s", diff)
	}
	reloaded, err := LoadProject(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p.Entries(), reloaded.Entries()); diff != "" {
		t.Errorf("entries on disk (-memory +disk):\n%s", diff)
	}

	found, err := p.Remove(`run_wasm:"tools/a b.wasm"`)
	if err != nil || !found {
		t.Fatalf("Remove = %v, %v; want true, nil", found, err)
	}
	if got := alReadFile(t, path); !bytes.Equal(got, before) {
		t.Errorf("add then remove did not give back the file:\n%s\nwant:\n%s", got, before)
	}
	found, err = p.Remove("capability:not-there")
	if err != nil || found {
		t.Errorf("Remove of a missing pattern = %v, %v; want false, nil", found, err)
	}
	if _, err := p.Remove("not a pattern"); !errors.Is(err, keys.ErrInvalidKey) {
		t.Errorf("Remove of an invalid pattern: %v, want ErrInvalidKey", err)
	}
}

func TestProjectAddReplacesInPlace(t *testing.T) {
	t.Parallel()
	path := alWriteProject(t, alProjectTemplate)
	p, err := LoadProject(path)
	if err != nil {
		t.Fatal(err)
	}
	// The capability changed and was approved again: the digest is replaced.
	if err := p.Add(Entry{Pattern: keys.MustParsePattern("capability:fmt-json"), Grant: ceiling.AlwaysThisProject, Digest: alDigestB}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"capability:fmt-json", "capability:lint"}, alPatterns(p.Entries())); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if !bytes.Contains(alReadFile(t, path), []byte(alDigestB)) || bytes.Contains(alReadFile(t, path), []byte(alDigestA)) {
		t.Errorf("digest not replaced:\n%s", alReadFile(t, path))
	}
	if m := p.Lookup(keys.MustParseKey("capability:fmt-json"), alDigestB, alNow); !m.OK {
		t.Errorf("lookup with the new digest: %+v", m)
	}
	// Dropping the digest writes the short form.
	if err := p.Add(Entry{Pattern: keys.MustParsePattern("capability:fmt-json"), Grant: ceiling.AlwaysThisProject}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(alReadFile(t, path), []byte(`"capability:fmt-json": "AlwaysThisProject"`)) {
		t.Errorf("short form not written:\n%s", alReadFile(t, path))
	}
}

func TestProjectAddRefusesBadEntries(t *testing.T) {
	t.Parallel()
	path := alWriteProject(t, alProjectTemplate)
	p, err := LoadProject(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []Entry{
		{Pattern: keys.MustParsePattern("run_command:git"), Grant: ceiling.AlwaysThisSession},
		{Pattern: keys.MustParsePattern("run_command:git"), Grant: ceiling.Once},
		{Pattern: keys.MustParsePattern("capability:x"), Grant: ceiling.AlwaysThisProject, Expiry: alNow.Unix()},
		{Pattern: keys.MustParsePattern("capability:x"), Grant: ceiling.AlwaysThisProject, Digest: "md5:abc"},
		{Grant: ceiling.AlwaysThisProject},
	} {
		if err := p.Add(e); !errors.Is(err, ErrInvalidEntry) {
			t.Errorf("Add(%v) = %v, want ErrInvalidEntry", e, err)
		}
	}
	if got := alReadFile(t, path); string(got) != alProjectTemplate {
		t.Errorf("file changed:\n%s", got)
	}
}

func TestProjectNoAutoReload(t *testing.T) {
	t.Parallel()
	path := alWriteProject(t, alProjectTemplate)
	p, err := LoadProject(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(alProjectTemplate, `"capability:lint": "AlwaysThisProject"`, `"capability:other": "AlwaysThisProject"`, 1)
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if m := p.Lookup(keys.MustParseKey("capability:lint"), "", alNow); !m.OK {
		t.Errorf("before Reload, the hand edit was seen: %+v", m)
	}
	if err := p.Reload(); err != nil {
		t.Fatal(err)
	}
	if m := p.Lookup(keys.MustParseKey("capability:lint"), "", alNow); m.OK {
		t.Errorf("after Reload, the removed grant still counts")
	}
	if m := p.Lookup(keys.MustParseKey("capability:other"), "", alNow); !m.OK {
		t.Errorf("after Reload, the added grant does not count")
	}
}

func TestProjectReloadFailureFailsClosed(t *testing.T) {
	t.Parallel()
	path := alWriteProject(t, alProjectTemplate)
	p, err := LoadProject(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(alProjectTemplate[:40]), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.Reload(); !errors.Is(err, errclass.InvalidConfig) {
		t.Fatalf("Reload of a truncated file: %v, want errclass.InvalidConfig", err)
	}
	m := p.Lookup(keys.MustParseKey("capability:lint"), "", alNow)
	if m.OK || len(m.Problems) != 1 || !strings.Contains(m.Problems[0], "not loaded") {
		t.Errorf("lookup after a failed Reload: %+v, want no match and the failure as a problem", m)
	}
	if len(p.Entries()) != 0 {
		t.Errorf("entries after a failed Reload: %v", p.Entries())
	}
}

func TestProjectMalformed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		text      string
		line, col int   // 0: no place
		class     error // besides ccrun.ErrInvalidConfig
		message   string
	}{
		{name: "empty", text: "", line: 1, col: 1, message: "unexpected end"},
		{name: "truncated", text: alProjectTemplate[:150], line: 8, col: 5, message: "unexpected end"},
		{name: "trailing comma", text: "{\n  \"mode\": \"default\",\n}\n", line: 3, col: 1, message: "invalid character '}'"},
		{name: "trailing comma in allowlist", text: "{\"allowlist\": {\n  \"capability:x\": \"AlwaysThisProject\",\n}}", line: 3, col: 1},
		{name: "missing comma", text: "{\"a\": 1\n \"b\": 2}", line: 2, col: 2},
		{name: "text after the object", text: "{}\n{}", line: 2, col: 1},
		{name: "a byte order mark", text: "\ufeff{}", line: 1, col: 1, message: "byte order mark"},
		{name: "CRLF and runes before the error", text: "{\r\n  \"mode\": \"défaut\",\r\n  \"allowlist\": {\"capability:é\": \"AlwaysThisProject\" x}}", line: 3, col: 53, message: "invalid character 'x'"},
		{name: "array at the top", text: "  [1, 2]", line: 1, col: 3, message: "JSON object"},
		{name: "allowlist is an array", text: "{\n  \"mode\": \"x\",\n  \"allowlist\": [\"run_command:git\"]\n}", line: 3, col: 16, message: `"allowlist" must be an object`},
		{name: "allowlist is a string", text: `{"allowlist": "all"}`, line: 1, col: 15},
		{name: "unknown grant", text: "{\"allowlist\": {\n    \"capability:x\": \"Sometimes\"\n}}", line: 2, col: 21,
			class: ceiling.ErrUnknownGrant, message: `allowlist entry "capability:x"`},
		{name: "session grant", text: `{"allowlist": {"capability:x": "AlwaysThisSession"}}`, line: 1, col: 32, message: "want AlwaysThisProject"},
		{name: "deny grant", text: `{"allowlist": {"capability:x": "Deny"}}`, line: 1, col: 32},
		{name: "grant is a number", text: `{"allowlist": {"capability:x": 3}}`, line: 1, col: 32},
		{name: "bad pattern", text: "{\"allowlist\": {\n  \"capability:x\": \"AlwaysThisProject\",\n  \"run command:git\": \"AlwaysThisProject\"\n}}", line: 3, col: 3,
			class: keys.ErrInvalidKey, message: `allowlist entry "run command:git"`},
		{name: "pattern without action", text: `{"allowlist": {"capability": "AlwaysThisProject"}}`, line: 1, col: 16, class: keys.ErrInvalidKey},
		{name: "bad digest", text: `{"allowlist": {"capability:x": {"grant": "AlwaysThisProject", "digest": "sha256:xyz"}}}`, line: 1, col: 32, message: "digest"},
		{name: "object without grant", text: `{"allowlist": {"capability:x": {"digest": "` + alDigestA + `"}}}`, line: 1, col: 32, message: `no "grant"`},
		{name: "unknown field", text: `{"allowlist": {"capability:x": {"grant": "AlwaysThisProject", "expiry": 5}}}`, line: 1, col: 32, message: "expiry"},
		{name: "repeated pattern", text: "{\"allowlist\": {\n\"capability:x\": \"AlwaysThisProject\",\n\"capability:x\": \"AlwaysThisProject\"}}", line: 3, col: 1, message: "already granted"},
		{name: "repeated allowlist", text: "{\"allowlist\": {},\n \"allowlist\": {}}", line: 2, col: 2, message: "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := alWriteProject(t, tt.text)
			_, err := LoadProject(path)
			alCheckConfigError(t, err, path, tt.line, tt.col, tt.class, tt.message)

			// A writer meets the same error and leaves the file alone. So
			// does a ProjectAllowlist loaded before the file went bad.
			good, err := LoadProject(filepath.Join(filepath.Dir(path), "missing.json"))
			if err != nil {
				t.Fatal(err)
			}
			good.path = path
			if err := good.Add(Entry{Pattern: keys.MustParsePattern("capability:y"), Grant: ceiling.AlwaysThisProject}); !errors.Is(err, errclass.InvalidConfig) {
				t.Errorf("Add on a malformed file: %v, want errclass.InvalidConfig", err)
			}
			if _, err := good.Remove("capability:x"); !errors.Is(err, errclass.InvalidConfig) {
				t.Errorf("Remove on a malformed file: %v, want errclass.InvalidConfig", err)
			}
			if got := string(alReadFile(t, path)); got != tt.text {
				t.Errorf("file changed by a failed write:\n%s", got)
			}
			if names, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".ccrun", ".ccrun.json.tmp-*")); len(names) != 0 {
				t.Errorf("temp files left behind: %v", names)
			}
		})
	}
}

func alCheckConfigError(t *testing.T, err error, path string, line, col int, class error, message string) {
	t.Helper()
	if !errors.Is(err, errclass.InvalidConfig) {
		t.Fatalf("error %v, want class errclass.InvalidConfig", err)
	}
	if class != nil && !errors.Is(err, class) {
		t.Errorf("error %v, want class %v too", err, class)
	}
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *ConfigError", err)
	}
	if ce.File != path || ce.Line != line || ce.Column != col {
		t.Errorf("error at %s:%d:%d, want %s:%d:%d (%v)", ce.File, ce.Line, ce.Column, path, line, col, err)
	}
	prefix := path + ":"
	if line > 0 {
		prefix = fmt.Sprintf("%s:%d:%d: ", path, line, col)
	}
	if !strings.HasPrefix(err.Error(), prefix) {
		t.Errorf("message %q does not start with %q", err, prefix)
	}
	if !strings.Contains(err.Error(), message) {
		t.Errorf("message %q does not contain %q", err, message)
	}
}

// TestProjectManyProcesses is the test: 20 processes grant 50 keys
// each into one ccrun.json at once; all 1000 are there, the file is valid,
// and the rest of it is as it was.
func TestProjectManyProcesses(t *testing.T) {
	t.Parallel()
	const procs, nkeys = 20, 50
	path := alWriteProject(t, alProjectTemplate)
	var cmds []*exec.Cmd
	var guns []io.Closer
	for w := range procs {
		cmd := alHelperCmd(t, "grant", path, w, nkeys)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, guns = append(cmds, cmd), append(guns, stdin)
	}
	for _, g := range guns {
		g.Close()
	}
	for w, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("process %d: %v\n%s", w, err, cmd.Stderr)
		}
	}
	data := alReadFile(t, path)
	if !json.Valid(data) {
		t.Fatalf("ccrun.json is not valid JSON:\n%s", data)
	}
	p, err := LoadProject(path)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Entry{}
	for _, e := range p.Entries() {
		got[e.Pattern.String()] = e
	}
	if len(got) != nkeys*procs+2 || len(p.Entries()) != len(got) {
		t.Errorf("%d entries (%d distinct), want %d", len(p.Entries()), len(got), nkeys*procs+2)
	}
	for w := range procs {
		for i := range nkeys {
			k := fmt.Sprintf("capability:w%02d-k%02d", w, i)
			e, ok := got[k]
			if !ok {
				t.Errorf("%s lost", k)
				continue
			}
			if want := fmt.Sprintf("sha256:%064x", w*1000+i); i%2 == 1 && e.Digest != want {
				t.Errorf("%s: digest %q, want %q", k, e.Digest, want)
			}
		}
	}
	// Each process's keys are in the order it added them.
	last := map[string]int{}
	for i, e := range p.Entries() {
		if w, _, ok := strings.Cut(strings.TrimPrefix(e.Pattern.String(), "capability:"), "-k"); ok {
			if prev, seen := last[w]; seen && prev > i {
				t.Errorf("%s out of order", e.Pattern)
			}
			last[w] = i
		}
	}
	before, after := alTopMembers(t, []byte(alProjectTemplate)), alTopMembers(t, data)
	if diff := cmp.Diff(before[:3], after[:3]); diff != "" {
		t.Errorf("members changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(before[4:], after[4:]); diff != "" {
		t.Errorf("members changed (-before +after):\n%s", diff)
	}
	if !bytes.Contains(data, []byte(`"env": {"pass": ["GOFLAGS"], "note": "ünïcode & <html>"}`)) {
		t.Errorf("env member not kept byte for byte:\n%s", data)
	}
}

// TestProjectManyWriters hammers one file from goroutines, each with its
// own ProjectAllowlist (so the file lock, not the mutex, keeps them apart),
// while others look up.
func TestProjectManyWriters(t *testing.T) {
	t.Parallel()
	const writers, nkeys = 8, 20
	path := alWriteProject(t, alProjectTemplate)
	reader, err := LoadProject(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			p, err := LoadProject(path)
			if err != nil {
				t.Error(err)
				return
			}
			for i := range nkeys {
				if err := p.Add(Entry{Pattern: keys.MustParsePattern(fmt.Sprintf("capability:g%d-%d", w, i)), Grant: ceiling.AlwaysThisProject}); err != nil {
					t.Error(err)
				}
				reader.Lookup(keys.MustParseKey("capability:lint"), "", alNow)
			}
		})
		wg.Go(func() {
			for range nkeys {
				if err := reader.Reload(); err != nil {
					t.Error(err)
				}
				if m := reader.Lookup(keys.MustParseKey("capability:lint"), "", alNow); !m.OK {
					t.Errorf("capability:lint lost during writes: %+v", m)
				}
			}
		})
	}
	wg.Wait()
	p, err := LoadProject(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(p.Entries()), writers*nkeys+2; got != want {
		t.Errorf("%d entries, want %d", got, want)
	}
}

// TestProjectCrashMidWrite kills a writer between writing its temp file and
// renaming it: the old file is intact, the stray temp file is harmless.
func TestProjectCrashMidWrite(t *testing.T) {
	t.Parallel()
	path := alWriteProject(t, alProjectTemplate)
	cmd := alHelperCmd(t, "crash", path, 0, 1)
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("crash helper: %v, want exit status 3\n%s", err, cmd.Stderr)
	}
	if got := string(alReadFile(t, path)); got != alProjectTemplate {
		t.Fatalf("file changed by a crashed writer:\n%s", got)
	}
	stray, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".ccrun", ".ccrun.json.tmp-*"))
	if len(stray) != 1 || !bytes.Contains(alReadFile(t, stray[0]), []byte("never-written")) {
		t.Fatalf("want the crashed writer's temp file, got %v", stray)
	}
	p, err := LoadProject(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := p.Lookup(keys.MustParseKey("capability:never-written"), "", alNow); m.OK {
		t.Error("the crashed write counts")
	}
	if err := p.Add(Entry{Pattern: keys.MustParsePattern("capability:after"), Grant: ceiling.AlwaysThisProject}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"capability:fmt-json", "capability:lint", "capability:after"}, alPatterns(p.Entries())); diff != "" {
		t.Errorf("entries after the crash (-want +got):\n%s", diff)
	}
}

func TestProjectHostileLockFile(t *testing.T) {
	t.Parallel()
	path := alWriteProject(t, alProjectTemplate)
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.Mkdir(filepath.Join(filepath.Dir(path), ".ccrun"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(filepath.Dir(path), ".ccrun", "ccrun.json.lock")); err != nil {
		t.Fatal(err)
	}
	p, err := LoadProject(path)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Add(Entry{Pattern: keys.MustParsePattern("capability:x"), Grant: ceiling.AlwaysThisProject})
	if !errors.Is(err, syscall.ELOOP) {
		t.Errorf("Add through a symlinked lock file: %v, want ELOOP", err)
	}
	if _, err := os.Lstat(victim); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the symlink's target was created")
	}
}

func BenchmarkProjectLookup(b *testing.B) {
	p, err := LoadProject(alWriteProject(b, alProjectTemplate))
	if err != nil {
		b.Fatal(err)
	}
	key := keys.MustParseKey("capability:fmt-json")
	for b.Loop() {
		if !p.Lookup(key, alDigestA, alNow).OK {
			b.Fatal("no match")
		}
	}
}

// FuzzProjectFile checks the reader of ccrun.json on any text: no panic;
// what it accepts is valid JSON, and writing it back gives a file that
// reads the same (members byte for byte, entries equal).
func FuzzProjectFile(f *testing.F) {
	for _, s := range []string{
		alProjectTemplate, "{}", "", "[]", `{"allowlist": {}}`, `{"a": "\"}\\", "allowlist": {"capability:\u0078": "project"}}`,
		`{"allowlist": {"run_command:\"git status && x\"": "AlwaysThisProject"}}`,
		`{"allowlist": {"capability:x": {"grant": "AlwaysThisProject", "digest": "` + alDigestA + `"}}, "z": [1, {"y": null}, true, -1.5e3]}`,
		`{"allowlist": {"capability:x": "AlwaysThisProject",}}`, "{\"allowlist\":\n{\"capability:x\"\t:\"Deny\"}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := parseProjectDoc("ccrun.json", data)
		if err != nil {
			if !errors.Is(err, errclass.InvalidConfig) {
				t.Fatalf("error %v is not errclass.InvalidConfig", err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		out := doc.encode()
		doc2, err := parseProjectDoc("ccrun.json", out)
		if err != nil {
			t.Fatalf("written back, the file does not read: %v\n%s", err, out)
		}
		want := len(doc.members)
		if doc.allow < 0 {
			want++ // encode adds the allowlist, last
		}
		if len(doc2.members) != want || doc.allow >= 0 && doc.allow != doc2.allow || doc.allow < 0 && doc2.allow != want-1 {
			t.Fatalf("members changed:\n%s\n%s", data, out)
		}
		for i, m := range doc.members {
			if i == doc.allow {
				continue
			}
			if m.name != doc2.members[i].name || !bytes.Equal(m.raw, doc2.members[i].raw) {
				t.Fatalf("member %d changed: %q=%s, now %q=%s", i, m.name, m.raw, doc2.members[i].name, doc2.members[i].raw)
			}
		}
		if diff := cmp.Diff(doc.entryList(), doc2.entryList()); diff != "" {
			t.Fatalf("entries changed (-read +written back):\n%s", diff)
		}
	})
}

func TestProjectKeepsModeAndOwner(t *testing.T) {
	t.Parallel()
	path := alWriteProject(t, alProjectTemplate)
	alMust(t, os.Chmod(path, 0o640))
	if os.Getuid() == 0 { // the group is kept; a file of another user is not read at all (TestProjectFileOfAnotherUser)
		alMust(t, os.Chown(path, 0, 65534))
	}
	p, err := LoadProject(path)
	alMust(t, err)
	alMust(t, p.Add(Entry{Pattern: keys.MustParsePattern("capability:x"), Grant: ceiling.AlwaysThisProject}))
	fi, err := os.Stat(path)
	alMust(t, err)
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %04o, want 0640", fi.Mode().Perm())
	}
	if st, _ := statOf(fi); os.Getuid() == 0 && (st.Uid != 0 || st.Gid != 65534) {
		t.Errorf("owner %d:%d, want 0:65534", st.Uid, st.Gid)
	}

	// A read-only file is not written over.
	alMust(t, os.Chmod(path, 0o444))
	before := alReadFile(t, path)
	if err := p.Add(Entry{Pattern: keys.MustParsePattern("capability:y"), Grant: ceiling.AlwaysThisProject}); !errors.Is(err, os.ErrPermission) {
		t.Errorf("Add to a read-only file: %v, want ErrPermission", err)
	}
	if !bytes.Equal(before, alReadFile(t, path)) {
		t.Error("a read-only file was written over")
	}
}

// BenchmarkProjectAdd measures one grant written to a ccrun.json of 100
// entries: lock, read, parse, write, fsync, rename.
func BenchmarkProjectAdd(b *testing.B) {
	p, err := LoadProject(alWriteProject(b, alProjectTemplate))
	alMust(b, err)
	for i := range 100 {
		alMust(b, p.Add(Entry{Pattern: keys.MustParsePattern(fmt.Sprintf("capability:k%d", i)), Grant: ceiling.AlwaysThisProject}))
	}
	i := 0
	for b.Loop() {
		i++
		alMust(b, p.Add(Entry{Pattern: keys.MustParsePattern("capability:k1"), Grant: ceiling.AlwaysThisProject, Digest: fmt.Sprintf("sha256:%064x", i)}))
	}
}
