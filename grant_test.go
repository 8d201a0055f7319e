package ccrun_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/runtimehook"
	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/ccrun/ccrun/permission/keys"
)

// TestGrant: the library checks a grant against the ceiling itself, for
// the project and for the session, and writes nothing it refuses.
func TestGrant(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern string
		scope   ceiling.Grant
		want    error // nil: kept
	}{
		{"run_command:git", ceiling.AlwaysThisProject, ccrun.ErrCeilingViolation},
		{"run_command:git:*", ceiling.AlwaysThisSession, nil},
		{"run_wasm:tools/fmt.wasm", ceiling.AlwaysThisProject, nil},
		{"run_docker:busybox", ceiling.AlwaysThisProject, nil},
		{"run_wasm:x.wasm", ceiling.Once, ccrun.ErrInvalidArgument},
		{"nosuch:thing", ceiling.AlwaysThisProject, ccrun.ErrUnknownKey},
		{"capability:missing", ceiling.AlwaysThisProject, ccrun.ErrNotFound},
		{`capability:missing:""`, ceiling.AlwaysThisProject, ccrun.ErrUnknownKey}, // a capability key has no detail to narrow
		{`run_command:make:""`, ceiling.AlwaysThisSession, nil},
		{`run_command:make:""`, ceiling.AlwaysThisProject, ccrun.ErrCeilingViolation},
	} {
		t.Run(tc.pattern+" "+tc.scope.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			rt, err := ccrun.New(ccrun.WithProjectDir(dir), ccrun.WithTrustDir(t.TempDir()), ccrun.WithAuditLog(""))
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			e, err := rt.Grant(context.Background(), keys.MustParsePattern(tc.pattern), tc.scope)
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("Grant: %v, want %v", err, tc.want)
				}
				if _, serr := os.Stat(filepath.Join(dir, "ccrun.json")); serr == nil {
					t.Error("a refused grant wrote ccrun.json")
				}
				return
			}
			if err != nil {
				t.Fatalf("Grant: %v", err)
			}
			if e.Pattern.String() != tc.pattern || e.Grant != tc.scope {
				t.Errorf("Grant kept %s, want %s → %s", e, tc.pattern, tc.scope)
			}
			al, err := runtimehook.Lint(rt)
			if err != nil {
				t.Errorf("Lint after Grant: %v", err)
			}
			inProject := len(al.Entries) == 1 && al.Entries[0].Pattern.String() == tc.pattern
			if want := tc.scope == ceiling.AlwaysThisProject; inProject != want {
				t.Errorf("in the project allowlist: %v, want %v (%+v)", inProject, want, al.Entries)
			}
		})
	}
}

// TestProjectAllowlistAddChecksTheCeiling: the store refuses a @shell key
// on its own, and one whose entry says @shell, whoever calls it.
func TestProjectAllowlistAddChecksTheCeiling(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ccrun.json")
	p, err := allowlist.LoadProject(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []allowlist.Entry{
		{Pattern: keys.MustParsePattern("run_command:make"), Grant: ceiling.AlwaysThisProject},
		{Pattern: keys.MustParsePattern("capability:fmt"), Grant: ceiling.AlwaysThisProject, Environment: ceiling.Shell},
	} {
		if err := p.Add(e); !errors.Is(err, ceiling.ErrViolation) {
			t.Errorf("Add(%s, %s): %v, want a ceiling violation", e, e.Environment, err)
		}
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a refused entry was written")
	}
	if err := p.Add(allowlist.Entry{Pattern: keys.MustParsePattern("capability:fmt"), Grant: ceiling.AlwaysThisProject, Environment: ceiling.Wasm}); err != nil {
		t.Errorf("Add of a @wasm capability: %v", err)
	}
}

// TestLint: what `ccrun allowlist lint` reports is the library's: every
// entry with its problem or warning, and an error of class
// ErrInvalidConfig when there is a problem; Revoke removes an entry.
func TestLint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	doc := `{"allowlist": {"run_command:git": "AlwaysThisProject", "nosuch:thing": "AlwaysThisProject", "run_wasm:a.wasm": "AlwaysThisProject"}}`
	if err := os.WriteFile(filepath.Join(dir, "ccrun.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	rt, err := ccrun.New(ccrun.WithProjectDir(dir), ccrun.WithTrustDir(t.TempDir()), ccrun.WithAuditLog(""))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	al, err := runtimehook.Lint(rt)
	if !errors.Is(err, ccrun.ErrInvalidConfig) {
		t.Fatalf("Lint: %v, want ErrInvalidConfig", err)
	}
	want := map[string]error{"run_command:git": ccrun.ErrCeilingViolation, "nosuch:thing": ccrun.ErrUnknownKey, "run_wasm:a.wasm": nil}
	if len(al.Entries) != len(want) || al.Problems() != 2 || al.File != filepath.Join(dir, "ccrun.json") {
		t.Fatalf("Lint: %d entries, %d problems, file %s; want 3, 2, %s", len(al.Entries), al.Problems(), al.File, filepath.Join(dir, "ccrun.json"))
	}
	for _, e := range al.Entries {
		if w := want[e.Pattern.String()]; (w == nil) != (e.Problem == nil) || (w != nil && !errors.Is(e.Problem, w)) {
			t.Errorf("%s: problem %v, want %v", e.Pattern, e.Problem, w)
		}
	}
	for _, k := range []string{"run_command:git", "nosuch:thing"} {
		// the project is not trusted: the change is written, and the
		// error says it counts once the person trusts the project
		if ok, err := rt.Revoke(k); !ok || (err != nil && !errors.Is(err, allowlist.ErrNotTrusted)) {
			t.Errorf("Revoke(%s) = %v, %v; want true, nil or ErrNotTrusted", k, ok, err)
		}
	}
	if ok, _ := rt.Revoke("run_command:git"); ok {
		t.Error("Revoke of a key no longer there reported a removal")
	}
	if al, err := runtimehook.Lint(rt); err != nil || len(al.Entries) != 1 {
		t.Errorf("Lint after Revoke: %v, %d entries; want nil, 1", err, len(al.Entries))
	}
	data, _ := os.ReadFile(filepath.Join(dir, "ccrun.json"))
	if bytes.Contains(data, []byte("run_command")) {
		t.Errorf("ccrun.json still holds the revoked key:\n%s", data)
	}
}

// TestGrantLockedAndSubAgent: a settings file locking loosening, and a
// sub-agent, make Grant a denial.
func TestGrantLockedAndSubAgent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rt, err := ccrun.New(ccrun.WithProjectDir(dir), ccrun.WithTrustDir(t.TempDir()), ccrun.WithAuditLog(""))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	sub, err := rt.SubAgent()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Grant(context.Background(), keys.MustParsePattern("run_wasm:a.wasm"), ceiling.AlwaysThisProject); !errors.Is(err, ccrun.ErrPermissionDenied) {
		t.Errorf("sub-agent Grant: %v, want ErrPermissionDenied", err)
	}
	locked := t.TempDir()
	if err := os.WriteFile(filepath.Join(locked, "ccrun.json"), []byte(`{"flags": "no-loosening"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	lrt, err := ccrun.New(ccrun.WithProjectDir(locked), ccrun.WithTrustDir(t.TempDir()), ccrun.WithAuditLog(""))
	if err != nil {
		t.Fatal(err)
	}
	defer lrt.Close()
	if _, err := lrt.Grant(context.Background(), keys.MustParsePattern("run_wasm:a.wasm"), ceiling.AlwaysThisProject); !errors.Is(err, ccrun.ErrPermissionDenied) {
		t.Errorf("Grant under no-loosening: %v, want ErrPermissionDenied", err)
	}
}
