package ccrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/job"
)

// boxCapability is a capability of the registered environment of box.
const boxCapability = `{
  "name": "box-cap",
  "description": "Prints its box file",
  "environment": "@testbox",
  "entry": {"target": "hello.box", "args": ["--from-manifest"]},
  "parameters": {"type": "object", "required": ["who"], "properties": {"who": {"type": "string"}}}
}`

// writeBoxCapability writes box-cap, with manifest and its box file, into
// project, and returns the manifest's path.
func writeBoxCapability(t *testing.T, project, manifest string) string {
	t.Helper()
	dir := filepath.Join(project, filepath.FromSlash(capabilities.Dir), "box-cap")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hello.box"), []byte("hello from the box\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, capabilities.ManifestFile)
	if err := os.WriteFile(file, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// boxRuntime opens a Runtime of project with b as the backend of boxEnv.
func boxRuntime(t *testing.T, project string, b *box, opts ...ccrun.Option) *ccrun.Runtime {
	t.Helper()
	rt, err := ccrun.New(append([]ccrun.Option{ccrun.WithProjectDir(project), ccrun.WithAuditLog(""), ccrun.WithTrustDir(t.TempDir()),
		ccrun.WithBackend(boxEnv, ceiling.AlwaysThisSession, func(context.Context) (ccrun.Backend, error) { return b, nil })}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// TestBackendCapability: a capability of a registered environment is a
// tool like any other: Tools lists it, CallFromTool and Exec run it
// through its backend with its input, and it is gated as a capability
// (capability:NAME, bound to its digest, asked, denied without an
// approver), within its environment's ceiling (no project grant), and
// supervised.
func TestBackendCapability(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	manifest := writeBoxCapability(t, dir, boxCapability)
	var asked atomic.Int32
	var answer atomic.Value
	var prompted atomic.Pointer[permission.Prompt]
	approver := permission.ApproverFunc(func(_ context.Context, p *permission.Prompt) (ceiling.Grant, error) {
		asked.Add(1)
		prompted.Store(p)
		return answer.Load().(ceiling.Grant), nil
	})
	b := &box{}
	rt := boxRuntime(t, dir, b, ccrun.WithApprover(approver))
	ctx := context.Background()

	// listed, with its schema and environment
	tools, errs := rt.Tools()
	if len(errs) > 0 {
		t.Fatalf("Tools: %v", errs)
	}
	i := slices.IndexFunc(tools, func(tl ccrun.Tool) bool { return tl.Name == "box-cap" })
	if i < 0 || tools[i].Environment != boxEnv || !strings.Contains(string(tools[i].InputSchema), `"who"`) {
		t.Fatalf("Tools: box-cap missing or wrong: %+v", tools)
	}
	call := func(input string) *ccrun.Call {
		t.Helper()
		c, err := rt.CallFromTool("box-cap", json.RawMessage(input))
		if err != nil {
			t.Fatalf("CallFromTool: %v", err)
		}
		return c
	}
	capa, err := capabilities.Find(dir, "box-cap")
	if err != nil {
		t.Fatal(err)
	}

	// input the schema refuses: nobody is asked, nothing runs
	if _, err := rt.Exec(ctx, call(`{"who": 5}`)); !errors.Is(err, capabilities.ErrInvalidInput) || asked.Load() != 0 || b.runs.Load() != 0 {
		t.Fatalf("bad input: %v, asked %d, ran %d; want an invalid input, before the gate", err, asked.Load(), b.runs.Load())
	}
	// denied: asked as the capability, and nothing runs
	answer.Store(ceiling.Deny)
	if _, err := rt.Exec(ctx, call(`{"who": "me"}`)); !errors.Is(err, ccrun.ErrPermissionDenied) || asked.Load() != 1 || b.runs.Load() != 0 {
		t.Fatalf("denied: %v, asked %d, ran %d", err, asked.Load(), b.runs.Load())
	}
	p := prompted.Load()
	if key := p.Request.Permission.Key().String(); key != "capability:box-cap" || p.Request.Environment != boxEnv ||
		p.Request.Digest != capa.Digest || p.Decision.Offer != ceiling.AlwaysThisSession {
		t.Fatalf("asked about %s in %s, digest %s, offered %s; want capability:box-cap in %s, the capability's digest %s, AlwaysThisSession",
			key, p.Request.Environment, p.Request.Digest, p.Decision.Offer, boxEnv, capa.Digest)
	}
	// a backend that says the call reaches a network is asked about it
	// as such, for a capability too
	b.network = true
	if out, err := rt.Check(context.Background(), call(`{"who": "me"}`)); err != nil || out.Request.Class != permission.ClassNetwork {
		t.Fatalf("Check with a network: %v, class %s; want %s", err, out.Request.Class, permission.ClassNetwork)
	}
	b.network = false
	// past its ceiling: a project grant is refused, at the prompt and
	// through Grant, and nothing is written or run
	answer.Store(ceiling.AlwaysThisProject)
	if _, err := rt.Exec(ctx, call(`{"who": "me"}`)); !errors.Is(err, ccrun.ErrCeilingViolation) || b.runs.Load() != 0 {
		t.Fatalf("AlwaysThisProject: %v, ran %d; want a ceiling violation", err, b.runs.Load())
	}
	if _, err := rt.Grant(ctx, keys.MustParsePattern("capability:box-cap"), ceiling.AlwaysThisProject); !errors.Is(err, ccrun.ErrCeilingViolation) {
		t.Errorf("Grant for the project: %v; want a ceiling violation", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ccrun.json")); err == nil {
		t.Error("a refused project grant wrote ccrun.json")
	}

	// allowed for the session: runs through the backend, with the entry
	// and the input, and is not asked again
	answer.Store(ceiling.AlwaysThisSession)
	out, err := rt.Exec(ctx, call(`{"who": "me"}`))
	if err != nil || out.Result == nil || string(out.Result.Stdout) != "hello from the box\n" || out.Tool != "box-cap" || out.Request.Environment != boxEnv {
		t.Fatalf("allowed: %v %+v", err, out)
	}
	seen := b.seen.Load()
	if seen.capability != "box-cap" || seen.target != "hello.box" || !slices.Equal(seen.args, []string{"--from-manifest"}) ||
		!slices.Contains(seen.env, `CCRUN_INPUT={"who": "me"}`) || string(seen.stdin) != `{"who": "me"}` {
		t.Fatalf("the backend was given %+v; want the capability, its target and args, the input in CCRUN_INPUT and on stdin", seen)
	}
	n := asked.Load()
	if _, err := rt.Exec(ctx, call(`{"who": "you"}`)); err != nil || asked.Load() != n || b.runs.Load() != 2 {
		t.Fatalf("with the session grant: %v, asked %d (want %d), ran %d", err, asked.Load(), n, b.runs.Load())
	}

	// a changed manifest is another digest: asked again
	if err := os.WriteFile(manifest, []byte(strings.Replace(boxCapability, "--from-manifest", "--changed", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := rt.Check(context.Background(), call(`{"who": "me"}`)); err != nil || out.Decision.Verdict != permission.AskUser {
		t.Fatalf("Check of the changed manifest: %v %+v; want ask", err, out.Decision)
	}
	answer.Store(ceiling.Deny)
	if _, err := rt.Exec(ctx, call(`{"who": "me"}`)); !errors.Is(err, ccrun.ErrPermissionDenied) || asked.Load() != n+1 || b.runs.Load() != 2 {
		t.Fatalf("changed manifest: %v, asked %d (want %d), ran %d", err, asked.Load(), n+1, b.runs.Load())
	}

	// supervised as an ad-hoc call: the manifest's timeout ends a run
	// that would not end of itself
	if err := os.WriteFile(manifest, []byte(strings.Replace(boxCapability, `"parameters"`, `"limits": {"timeout": "100ms"}, "parameters"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	b.block = true
	answer.Store(ceiling.Once)
	if out, err := rt.Exec(ctx, call(`{"who": "me"}`)); err != nil || out.Result.Reason != job.Timeout {
		t.Fatalf("timeout: %v %+v", err, out.Result)
	}

	// no approver: an ask is a deny, and nothing runs
	other := &box{}
	alone := boxRuntime(t, dir, other)
	c, err := alone.CallFromTool("box-cap", json.RawMessage(`{"who": "me"}`))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := alone.Exec(ctx, c); !errors.Is(err, ccrun.ErrPermissionDenied) || other.runs.Load() != 0 || out.Decision.Layer != permission.LayerApprover {
		t.Fatalf("no approver: %v, ran %d; want denied by the approver layer (nobody to ask)", err, other.runs.Load())
	}
}

// TestBackendCapabilityNotHere: a Runtime without the registered
// environment's backend (another Runtime of the process registered it)
// neither offers, runs nor grants its capabilities, and says so at the
// manifest's environment, listing the environments it runs.
func TestBackendCapabilityNotHere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeBoxCapability(t, dir, boxCapability)
	boxRuntime(t, t.TempDir(), &box{}) // another Runtime of the process has boxEnv
	rt, err := ccrun.New(ccrun.WithProjectDir(dir), ccrun.WithAuditLog(""), ccrun.WithTrustDir(t.TempDir()),
		ccrun.WithApprover(permission.ApproverFunc(func(context.Context, *permission.Prompt) (ceiling.Grant, error) {
			t.Error("asked about a capability nothing here can run")
			return ceiling.Once, nil
		})))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	notHere := func(what string, err error) {
		t.Helper()
		var fe *capabilities.FieldError
		if !errors.Is(err, capabilities.ErrInvalidManifest) || !errors.Is(err, ceiling.ErrUnknownEnvironment) || !errors.As(err, &fe) ||
			fe.Pointer != "/environment" || !strings.Contains(err.Error(), `"@testbox": not one this runtime runs (@shell, @wasm, @docker;`) {
			t.Errorf("%s: %v; want an invalid manifest at /environment, naming %s and the environments this Runtime runs", what, err, boxEnv)
		}
	}
	tools, errs := rt.Tools()
	if slices.ContainsFunc(tools, func(tl ccrun.Tool) bool { return tl.Name == "box-cap" }) || len(errs) != 1 {
		t.Fatalf("Tools: box-cap offered, or errors %v; want it left out with one error", errs)
	}
	notHere("Tools", errs[0])
	if caps, errs := rt.Capabilities(); len(caps) != 0 || len(errs) != 1 {
		t.Errorf("Capabilities: %d, %v", len(caps), errs)
	}
	_, err = rt.Exec(context.Background(), &ccrun.Call{Capability: "box-cap", Input: json.RawMessage(`{"who": "me"}`)})
	notHere("Exec", err)
	_, err = rt.Grant(context.Background(), keys.MustParsePattern("capability:box-cap"), ceiling.AlwaysThisSession)
	notHere("Grant", err)
}

// TestBackendCapabilityFromRepository: a repository that arrives with a
// capability of a registered environment and the settings that would let
// it run gains no trust by them. Untrusted, its allow rule, allowlist
// entry and mode count for nothing; trusted, a committed file still
// cannot allow host-trusted code for good (the ceiling): the capability
// is asked, and with nobody to ask it is denied.
func TestBackendCapabilityFromRepository(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeBoxCapability(t, dir, boxCapability)
	capa, err := capabilities.Find(dir, "box-cap") // read by no Runtime
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ccrun.json", `{"permissions": {"allow": ["capability:box-cap"]},
		"allowlist": {"capability:box-cap": {"grant": "AlwaysThisProject", "digest": "`+capa.Digest+`"}}}`)
	write("ccrun.local.json", `{"mode": "trust"}`)
	call := &ccrun.Call{Capability: "box-cap", Input: json.RawMessage(`{"who": "me"}`)}
	ctx := context.Background()

	b := &box{}
	rt := boxRuntime(t, dir, b)
	if rt.Trust().Trusted {
		t.Fatal("a cloned repository is trusted")
	}
	out, err := rt.Check(context.Background(), call)
	if err != nil || out.Decision.Verdict != permission.AskUser || !slices.Contains(out.Decision.Diagnostics, allowlist.NotTrusted) {
		t.Fatalf("untrusted: %v %+v; want ask, saying the project is not trusted", err, out.Decision)
	}
	if _, err := rt.Exec(ctx, call); !errors.Is(err, ccrun.ErrPermissionDenied) || b.runs.Load() != 0 {
		t.Fatalf("untrusted, nobody to ask: %v, ran %d; want denied", err, b.runs.Load())
	}

	// the person trusts the committed file (no mode): still asked
	if err := os.Remove(filepath.Join(dir, "ccrun.local.json")); err != nil {
		t.Fatal(err)
	}
	digest := boxRuntime(t, dir, b).Trust().Digest
	rt = boxRuntime(t, dir, b, ccrun.WithTrustDigest(digest))
	if !rt.Trust().Trusted {
		t.Fatalf("not trusted by its digest: %+v", rt.Trust())
	}
	out, err = rt.Check(context.Background(), call)
	if err != nil || out.Decision.Verdict != permission.AskUser ||
		!slices.ContainsFunc(out.Decision.Diagnostics, func(d string) bool { return strings.Contains(d, "ceiling violation") }) {
		t.Fatalf("trusted: %v %+v; want ask, the allowlist entry a ceiling violation", err, out.Decision)
	}
	if _, err := rt.Exec(ctx, call); !errors.Is(err, ccrun.ErrPermissionDenied) || b.runs.Load() != 0 {
		t.Fatalf("trusted, nobody to ask: %v, ran %d; want denied", err, b.runs.Load())
	}
}
