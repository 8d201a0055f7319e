package ccrun_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/internal/projectdir"
	"github.com/ccrun/ccrun/internal/trust"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/allowlist"
)

func TestMain(m *testing.M) {
	// Trust records of test projects go to a directory of this run, not
	// the real home's state directory.
	dir, err := os.MkdirTemp("", "ccrun-test-state-")
	if err == nil {
		os.Setenv("XDG_STATE_HOME", dir)
	}
	code := m.Run()
	if dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// Through the library: an untrusted project's loosening is stripped and
// the decision says why; a record of exactly that loosening, or the CI
// digest, makes it count; a grant the person gives keeps the record
// current; a change stops it counting.
func TestWorkspaceTrustLibrary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ccrun.local.json", `{"mode": "trust", "env": {"pass": ["*"]}}`)
	write("ccrun.json", `{"permissions": {"deny": ["run_command:rm"], "allow": ["run_wasm:*"]}}`)
	call := &ccrun.Call{Command: "touch planted"}
	open := func(opts ...ccrun.Option) *ccrun.Runtime {
		t.Helper()
		rt, err := ccrun.New(append([]ccrun.Option{engines.Wasm(), ccrun.WithProjectDir(dir), ccrun.WithTrustDir(state), ccrun.WithAuditLog("")}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close() })
		return rt
	}
	decide := func(rt *ccrun.Runtime, c *ccrun.Call) *permission.Decision {
		t.Helper()
		out, err := rt.Check(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		return out.Decision
	}
	rt := open()
	st := rt.Trust()
	wantLines := []string{"ccrun.json: allow rule run_wasm:*", "ccrun.local.json: mode trust", `ccrun.local.json: env.pass "*"`}
	if st.Trusted || st.Reason != allowlist.NotTrusted || !slices.Equal(st.Loosens, wantLines) {
		t.Fatalf("TrustState: %+v", st)
	}
	if d := decide(rt, call); d.Verdict != permission.AskUser || !slices.Contains(d.Diagnostics, allowlist.NotTrusted) {
		t.Fatalf("untrusted: %s %q", d.Verdict, d.Diagnostics)
	}
	if d := decide(rt, &ccrun.Call{Command: "rm -rf x"}); d.Verdict != permission.Refuse {
		t.Errorf("an untrusted project's deny rule does not deny: %s", d.Verdict)
	}

	// The person trusts exactly what was shown.
	real, _ := filepath.EvalSymlinks(dir)
	if err := trust.Open(state).Update(real, func(*trust.Record) (*trust.Record, error) {
		return &trust.Record{Digest: st.Digest, Shown: st.Loosens}, nil
	}); err != nil {
		t.Fatal(err)
	}
	rt = open()
	if st := rt.Trust(); !st.Trusted || st.By != "record" {
		t.Fatalf("after the record: %+v", st)
	}
	if d := decide(rt, call); d.Verdict != permission.Allow {
		t.Fatalf("trusted: %s (%s)", d.Verdict, d.Reason)
	}

	// A grant the person gives is written and the trust follows it.
	mod := filepath.Join(dir, "m.wasm")
	if err := os.WriteFile(mod, helloWasm(), 0o644); err != nil {
		t.Fatal(err)
	}
	write("ccrun.json", `{"permissions": {"deny": ["run_command:rm"]}}`) // a hand edit: untrusted again
	write("ccrun.local.json", `{"env": {"pass": ["*"]}}`)                // and no mode: a call is asked
	rt = open(ccrun.WithApprover(permission.ApproverFunc(func(context.Context, *permission.Prompt) (ceiling.Grant, error) {
		return ceiling.AlwaysThisProject, nil
	})))
	if rt.Trust().Trusted {
		t.Fatal("trusted after a hand edit")
	}
	st = rt.Trust()
	if err := trust.Open(state).Update(real, func(*trust.Record) (*trust.Record, error) {
		return &trust.Record{Digest: st.Digest}, nil
	}); err != nil {
		t.Fatal(err)
	}
	rt = open(ccrun.WithApprover(permission.ApproverFunc(func(context.Context, *permission.Prompt) (ceiling.Grant, error) {
		return ceiling.AlwaysThisProject, nil
	})))
	out, err := rt.Exec(context.Background(), &ccrun.Call{Module: mod})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range out.Decision.Diagnostics {
		t.Errorf("diagnostic on a grant in a trusted project: %s", x)
	}
	rt = open()
	if st := rt.Trust(); !st.Trusted {
		t.Fatalf("the grant ccrun wrote untrusted the project: %+v", st)
	}
	if d := decide(rt, &ccrun.Call{Module: mod}); d.Verdict != permission.Allow || d.Layer != permission.LayerProject {
		t.Fatalf("the grant does not count: %s %s", d.Verdict, d.Layer)
	}

	// CI: no record, the reviewed digest.
	other := t.TempDir()
	rt = open(ccrun.WithTrustDir(other), ccrun.WithTrustDigest(rt.Trust().Digest))
	if st := rt.Trust(); !st.Trusted || st.By != "digest" {
		t.Fatalf("CI digest: %+v", st)
	}
	if _, err := ccrun.New(ccrun.WithProjectDir(dir), ccrun.WithTrustDigest("sha256:xyz")); !errors.Is(err, ccrun.ErrInvalidConfig) {
		t.Errorf("malformed digest: %v", err)
	}
}

func helloWasm() []byte { return capabilities.HelloWasm() }

// Discovery: the nearest ccrun.json, else git's top level, never above
// it; another user's directory is refused.
func TestFindProjectStaysInRepository(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	if err := os.WriteFile(filepath.Join(top, "ccrun.json"), []byte(`{"permissions": {"allow": ["run_wasm:*"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(top, "repo")
	deep := filepath.Join(repo, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := projectdir.Find(deep); err != nil || got != repo {
		t.Errorf("projectdir.Find: %s, %v; want the repository %s (not the ccrun.json above it)", got, err, repo)
	}
	// A worktree or submodule has a .git file: also a top level.
	sub := filepath.Join(repo, "a")
	if err := os.WriteFile(filepath.Join(sub, ".git"), []byte("gitdir: ../.git/modules/a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := projectdir.Find(deep); got != sub {
		t.Errorf("projectdir.Find with a .git file: %s, want %s", got, sub)
	}
	if err := os.WriteFile(filepath.Join(deep, "ccrun.json"), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := projectdir.Find(deep); got != deep {
		t.Errorf("projectdir.Find with its own ccrun.json: %s, want %s", got, deep)
	}
	if os.Geteuid() == 0 {
		shared := t.TempDir()
		if err := os.WriteFile(filepath.Join(shared, "ccrun.json"), []byte(`{}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(shared, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		w := filepath.Join(shared, "w")
		if err := os.Mkdir(w, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := projectdir.Find(w); !errors.Is(err, ccrun.ErrInvalidConfig) || !errors.Is(err, fs.ErrPermission) {
			t.Errorf("a shared parent of uid 65534: %v, want ErrInvalidConfig and fs.ErrPermission", err)
		}
		if _, err := ccrun.New(ccrun.WithProjectDir(shared)); !errors.Is(err, fs.ErrPermission) {
			t.Errorf("New in a directory of uid 65534: %v", err)
		}
	}
}
