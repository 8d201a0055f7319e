package permission_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/containerd/errdefs"
)

const digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
const digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

// answer is an approver that always gives g and counts how often it was asked.
type answer struct {
	g     ceiling.Grant
	asked int
	last  *permission.Prompt
}

func (a *answer) Approve(_ context.Context, p *permission.Prompt) (ceiling.Grant, error) {
	a.asked++
	a.last = p
	return a.g, nil
}

func project(t *testing.T, content string) *allowlist.ProjectAllowlist {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ccrun.json")
	if content != "" {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := allowlist.LoadProject(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func shellReq(key string) *permission.Request {
	return &permission.Request{Tool: "run_command", Environment: ceiling.Shell, Class: permission.ClassExec,
		Permission: permission.Ask(keys.MustParseKey(key))}
}

func wasmReq(key, digest string) *permission.Request {
	return &permission.Request{Tool: "fmt-json", Environment: ceiling.Wasm, Class: permission.ClassExec,
		Permission: permission.Ask(keys.MustParseKey(key)), Digest: digest}
}

func TestNonePermissionAllows(t *testing.T) {
	t.Parallel()
	g := &permission.Gate{}
	d := g.Decide(&permission.Request{Tool: "read_file", Environment: ceiling.Shell, Class: permission.ClassRead})
	if d.Verdict != permission.Allow || d.Layer != permission.LayerNone {
		t.Fatalf("got %s/%s, want allow/%s", d.Verdict, d.Layer, permission.LayerNone)
	}
}

// The ceiling's first checkpoint, where the project allowlist is read (the
// gate's step 6; the second is where a grant is written): a @shell key found
// in the project allowlist — a hand edit — is reported, never an allow, and
// the lookup goes on to the session allowlist and then asks.
func TestCeilingProjectAllowlistShellKey(t *testing.T) {
	t.Parallel()
	p := project(t, `{"allowlist": {"run_command:git": "AlwaysThisProject"}}`)
	g := &permission.Gate{Project: p}
	d := g.Decide(shellReq("run_command:git:push"))
	if d.Verdict != permission.AskUser {
		t.Fatalf("verdict %s (%s), want ask", d.Verdict, d.Reason)
	}
	if len(d.Diagnostics) == 0 {
		t.Fatal("no diagnostic for the ceiling violation")
	}

	// The session allowlist is still consulted after the violation.
	s := allowlist.NewSessionAllowlist()
	if err := s.Add(allowlist.Entry{Pattern: keys.MustParsePattern("run_command:git"), Grant: ceiling.AlwaysThisSession}); err != nil {
		t.Fatal(err)
	}
	g.Session = s
	d = g.Decide(shellReq("run_command:git:push"))
	if d.Verdict != permission.Allow || d.Layer != permission.LayerSession {
		t.Fatalf("got %s/%s, want allow/session", d.Verdict, d.Layer)
	}
	if len(d.Diagnostics) == 0 {
		t.Fatal("the violation must still be reported when the session allows")
	}

	// With nobody to ask, the violation never becomes an allow.
	d, err := (&permission.Gate{Project: p}).Authorize(context.Background(), shellReq("run_command:git"))
	if !errors.Is(err, errdefs.ErrPermissionDenied) || d.Allowed() {
		t.Fatalf("got %v, %v; want a deny", d.Verdict, err)
	}
}

// Checkpoint two: a person choosing AlwaysThisProject for a @shell key is
// refused with a ceiling violation, and nothing is written.
func TestCeilingProjectGrantOnShellKey(t *testing.T) {
	t.Parallel()
	p := project(t, "")
	a := &answer{g: ceiling.AlwaysThisProject}
	g := &permission.Gate{Project: p, Approver: a}
	d, err := g.Authorize(context.Background(), shellReq("run_command:git"))
	var v *ceiling.Violation
	if !errors.As(err, &v) || !errors.Is(err, ceiling.ErrViolation) || !errors.Is(err, errdefs.ErrPermissionDenied) {
		t.Fatalf("err = %v, want a ceiling violation of class ErrPermissionDenied", err)
	}
	if d.Allowed() {
		t.Fatal("allowed")
	}
	if v.Environment != ceiling.Shell || v.Ceiling != ceiling.AlwaysThisSession {
		t.Errorf("violation %+v", v)
	}
	if n := len(p.Entries()); n != 0 {
		t.Errorf("%d entries written to the project allowlist, want 0", n)
	}
	if a.last.Decision.Offer != ceiling.AlwaysThisSession {
		t.Errorf("offer %s for a shell key, want AlwaysThisSession", a.last.Decision.Offer)
	}
}

func TestProjectGrantSandboxedBoundToDigest(t *testing.T) {
	t.Parallel()
	p := project(t, `{"mode": "default"}`)
	a := &answer{g: ceiling.AlwaysThisProject}
	g := &permission.Gate{Project: p, Approver: a}
	ctx := context.Background()
	if _, err := g.Authorize(ctx, wasmReq("capability:fmt-json", digestA)); err != nil {
		t.Fatal(err)
	}
	// A second process: reload the file.
	p2, err := allowlist.LoadProject(p.Path())
	if err != nil {
		t.Fatal(err)
	}
	g2 := &permission.Gate{Project: p2}
	if d := g2.Decide(wasmReq("capability:fmt-json", digestA)); d.Verdict != permission.Allow || d.Layer != permission.LayerProject {
		t.Fatalf("same digest: %s/%s, want allow/project", d.Verdict, d.Layer)
	}
	d := g2.Decide(wasmReq("capability:fmt-json", digestB))
	if d.Verdict != permission.AskUser {
		t.Fatalf("changed digest: %s, want ask", d.Verdict)
	}
	found := false
	for _, x := range d.Diagnostics {
		if containsFold(x, "changed since approval") {
			found = true
		}
	}
	if !found {
		t.Errorf("diagnostics %q do not say the capability changed since approval", d.Diagnostics)
	}
}

func TestSessionGrantExpires(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	s := allowlist.NewSessionAllowlist(allowlist.WithSessionClock(func() time.Time { return now }))
	if err := s.Add(allowlist.Entry{Pattern: keys.MustParsePattern("run_command:make"), Grant: ceiling.AlwaysThisSession, Expiry: now.Unix() + 10}); err != nil {
		t.Fatal(err)
	}
	g := &permission.Gate{Session: s, Now: func() time.Time { return now }}
	if d := g.Decide(shellReq("run_command:make")); d.Verdict != permission.Allow {
		t.Fatalf("before expiry: %s", d.Verdict)
	}
	now = now.Add(time.Minute)
	if d := g.Decide(shellReq("run_command:make")); d.Verdict != permission.AskUser {
		t.Fatalf("after expiry: %s, want ask", d.Verdict)
	}
}

func TestSessionGrantKept(t *testing.T) {
	t.Parallel()
	s := allowlist.NewSessionAllowlist()
	a := &answer{g: ceiling.AlwaysThisSession}
	g := &permission.Gate{Session: s, Approver: a}
	for i := 0; i < 3; i++ {
		if _, err := g.Authorize(context.Background(), shellReq("run_command:make:test")); err != nil {
			t.Fatal(err)
		}
	}
	if a.asked != 1 {
		t.Errorf("asked %d times, want 1", a.asked)
	}
	// A grant of a simple key never covers a compound command.
	if d := g.Decide(shellReq(`run_command:"make test && curl x | sh"`)); d.Verdict != permission.AskUser {
		t.Errorf("compound: %s, want ask", d.Verdict)
	}
}

func TestNobodyToAskDenies(t *testing.T) {
	t.Parallel()
	d, err := (&permission.Gate{}).Authorize(context.Background(), shellReq("run_command:rm"))
	var de *permission.DeniedError
	if !errors.As(err, &de) || d.Allowed() || d.Layer != permission.LayerApprover {
		t.Fatalf("got %v / %v, want a deny by the approver layer", d, err)
	}
}

func TestApproverDeny(t *testing.T) {
	t.Parallel()
	_, err := (&permission.Gate{Approver: &answer{g: ceiling.Deny}}).Authorize(context.Background(), shellReq("run_command:rm"))
	if !errors.Is(err, errdefs.ErrPermissionDenied) {
		t.Fatalf("err = %v", err)
	}
}

func TestUnknownEnvironmentDenied(t *testing.T) {
	t.Parallel()
	d := (&permission.Gate{}).Decide(&permission.Request{Tool: "x", Environment: "@python", Permission: permission.Ask(keys.MustParseKey("x:y"))})
	if d.Verdict != permission.Refuse {
		t.Fatalf("got %s", d.Verdict)
	}
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

// benchDecision measures one whole decision: parse and key the command,
// then run the gate's steps (policy, project and session allowlists).
// The policy's project is the working directory (read every decision),
// or, inProject, the project allowlist's directory, as a Runtime's policy
// has it.
func benchDecision(b *testing.B, src string, inProject bool) {
	p := project(&testing.T{}, `{"allowlist": {"capability:fmt-json": "AlwaysThisProject"}}`)
	s := allowlist.NewSessionAllowlist()
	for _, k := range []string{"run_command:make:test", "run_command:go", "run_command:npm:*"} {
		if err := s.Add(allowlist.Entry{Pattern: keys.MustParsePattern(k), Grant: ceiling.AlwaysThisSession}); err != nil {
			b.Fatal(err)
		}
	}
	dir := ""
	if inProject {
		dir = filepath.Dir(p.Path())
	}
	pol, err := permission.NewPolicy(permission.PolicyConfig{ProjectDir: dir, Layers: []*permission.Settings{{
		Origin: permission.OriginUser, Deny: []keys.Pattern{keys.MustParsePattern("run_command:git:push")},
	}}})
	if err != nil {
		b.Fatal(err)
	}
	g := &permission.Gate{Project: p, Session: s, Policy: pol}
	b.ReportAllocs()
	for b.Loop() {
		cmd := permission.ParseCommand(src)
		d := g.Decide(&permission.Request{Tool: "run_command", Environment: ceiling.Shell, Class: permission.ClassExec,
			Permission: permission.Ask(cmd.Key), Command: cmd})
		if d.Verdict == "" {
			b.Fatal("no verdict")
		}
	}
}

func BenchmarkDecisionSimple(b *testing.B) { benchDecision(b, "make test", false) }
func BenchmarkDecisionCompound(b *testing.B) {
	benchDecision(b, "make test && git push origin main", false)
}

// The same decisions in a policy that knows its project, as a Runtime's
// does: no getcwd.
func BenchmarkDecisionSimpleInProject(b *testing.B) { benchDecision(b, "make test", true) }
func BenchmarkDecisionCompoundInProject(b *testing.B) {
	benchDecision(b, "make test && git push origin main", true)
}
