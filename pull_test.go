package ccrun_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/internal/registrytest"
	"github.com/ccrun/ccrun/internal/testimage"
	"github.com/ccrun/ccrun/permission"
)

// remoteImage starts a registry on 127.0.0.1 holding the test image under
// a fresh name, which the engine does not have, and forgets the push.
func remoteImage(t *testing.T) (*registrytest.Registry, string) {
	t.Helper()
	dockerOrSkip(t)
	reg := registrytest.Start(t, "127.0.0.1:0")
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	ref := reg.Host + "/ccrun-pull/" + hex.EncodeToString(suffix) + ":latest"
	reg.Push(t, ref, registrytest.BusyboxImage(t, []string{"CCRUN_VARIANT=a"}, nil))
	t.Cleanup(func() { testimage.Remove(context.Background(), ref) })
	reg.Reset()
	return reg, ref
}

// untouched fails t when reg was sent anything.
func untouched(t *testing.T, reg *registrytest.Registry, what string) {
	t.Helper()
	if conns, reqs := reg.Conns(), reg.Requests(); conns != 0 || len(reqs) != 0 {
		t.Errorf("%s: the registry saw %d connections and the requests %q; want none before the call is allowed", what, conns, reqs)
	}
}

// auditDecisions returns the decision lines of the audit log at path.
func auditDecisions(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if strings.Contains(l, `"kind":"decision"`) {
			out = append(out, l)
		}
	}
	return out
}

// TestDockerNothingBeforeTheDecision: a @docker call of an image the
// engine does not have sends nothing to its registry — no connection at
// all — until the call is allowed: with nobody to ask (refused, and the
// refusal audited), with a person who says no (they are told the image is
// not local and which registry it would come from), under a deny rule, and
// through Check. Approved, it is pulled then, and the grant is bound to
// the image that arrived: the next call runs by it without asking, and a
// call whose pull (pull policy always) brings another image is refused
// with nobody to ask, that image never run.
func TestDockerNothingBeforeTheDecision(t *testing.T) {
	reg, ref := remoteImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.jsonl")
	call := func() *ccrun.Call {
		return &ccrun.Call{Image: ref, Args: []string{"/bin/busybox", "sh", "-c", "echo $CCRUN_VARIANT"}}
	}

	nobody, err := ccrun.New(engines.Docker(), ccrun.WithProjectDir(dir), ccrun.WithAuditLog(log))
	if err != nil {
		t.Fatal(err)
	}
	defer nobody.Close()
	if _, err := nobody.Exec(ctx, call()); !errors.Is(err, ccrun.ErrPermissionDenied) {
		t.Fatalf("nobody to ask: %v, want denied", err)
	}
	untouched(t, reg, "nobody to ask")
	if d := auditDecisions(t, log); len(d) != 1 || !strings.Contains(d[0], `"decision":"deny"`) || !strings.Contains(d[0], reg.Host) {
		t.Fatalf("nobody to ask: audited %q, want one deny naming the registry", d)
	}
	out, err := nobody.Check(context.Background(), call())
	if err != nil || out.Decision.Verdict != permission.AskUser || !strings.Contains(strings.Join(out.Decision.Diagnostics, "\n"), "not local") {
		t.Fatalf("Check: %v %+v", err, out.Decision)
	}
	untouched(t, reg, "Check")

	deny, err := permission.FlagSettings("", nil, nil, []string{"run_docker:*"})
	if err != nil {
		t.Fatal(err)
	}
	denied, err := ccrun.New(engines.Docker(), ccrun.WithProjectDir(dir), ccrun.WithAuditLog(log), ccrun.WithSettings(deny))
	if err != nil {
		t.Fatal(err)
	}
	defer denied.Close()
	if _, err := denied.Exec(ctx, call()); !errors.Is(err, ccrun.ErrPermissionDenied) {
		t.Fatalf("deny rule: %v, want denied", err)
	}
	untouched(t, reg, "deny rule")

	var shown atomic.Value
	var answer atomic.Value
	answer.Store(ceiling.Deny)
	var asked atomic.Int32
	person, err := ccrun.New(engines.Docker(), ccrun.WithProjectDir(dir), ccrun.WithAuditLog(log),
		ccrun.WithApprover(permission.ApproverFunc(func(_ context.Context, p *permission.Prompt) (ceiling.Grant, error) {
			asked.Add(1)
			shown.Store(p.Request.Display)
			return answer.Load().(ceiling.Grant), nil
		})))
	if err != nil {
		t.Fatal(err)
	}
	defer person.Close()
	if _, err := person.Exec(ctx, call()); !errors.Is(err, ccrun.ErrPermissionDenied) {
		t.Fatalf("the person says no: %v, want denied", err)
	}
	untouched(t, reg, "the person says no")
	if s, _ := shown.Load().(string); !strings.Contains(s, "not local") || !strings.Contains(s, "registry "+reg.Host) {
		t.Fatalf("the person was shown %q; want the image said not local, and its registry", s)
	}

	answer.Store(ceiling.AlwaysThisProject)
	out, err = person.Exec(ctx, call())
	if err != nil || strings.TrimSpace(string(out.Result.Stdout)) != "a" {
		t.Fatalf("approved: %v %+v", err, out)
	}
	if conns, reqs := reg.Conns(), reg.Requests(); conns == 0 || len(reqs) == 0 {
		t.Fatalf("approved: the registry saw nothing; want the pull")
	}
	if !strings.Contains(out.Request.Display, "image: sha256:") {
		t.Errorf("approved: the request shows %q, want the image that arrived", out.Request.Display)
	}
	reg.Reset()
	before := asked.Load()
	if out, err := person.Exec(ctx, call()); err != nil || strings.TrimSpace(string(out.Result.Stdout)) != "a" || asked.Load() != before {
		t.Fatalf("with the grant: %v, asked %d more times; want run by the grant, bound to what arrived", err, asked.Load()-before)
	}
	untouched(t, reg, "with the grant, the image local")

	// The tag moves at the registry; pull policy always pulls it after the
	// grant allowed the local image: what arrived is another image, and
	// with nobody to ask it is refused, never run.
	reg.Push(t, ref, registrytest.BusyboxImage(t, []string{"CCRUN_VARIANT=b"}, nil))
	always := call()
	always.Options = engines.DockerOptions{Pull: "always"}
	out, err = nobody.Exec(ctx, always)
	if !errors.Is(err, ccrun.ErrPermissionDenied) || (out.Result != nil && strings.TrimSpace(string(out.Result.Stdout)) == "b") {
		t.Fatalf("another image arrived: %v %+v, want refused", err, out.Result)
	}
	d := auditDecisions(t, log)
	if last := d[len(d)-1]; !strings.Contains(last, `"decision":"deny"`) {
		t.Fatalf("another image arrived: audited %s", last)
	}
}

// TestDockerCapabilityNothingBeforeTheDecision: a @docker capability whose
// image the engine does not have is, like an ad-hoc call, refused with
// nobody to ask without a connection to its registry; approved, pulled and
// run, and its grant for the project bound to the image that arrived.
func TestDockerCapabilityNothingBeforeTheDecision(t *testing.T) {
	reg, ref := remoteImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	writeCapability(t, dir, "variant", `{"name": "variant", "description": "says its variant", "environment": "@docker",
		"entry": {"image": "`+ref+`", "command": ["/bin/busybox", "sh", "-c", "echo $CCRUN_VARIANT"]}}`)
	nobody, err := ccrun.New(engines.Docker(), ccrun.WithProjectDir(dir), ccrun.WithAuditLog(filepath.Join(dir, "audit.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	defer nobody.Close()
	if _, err := nobody.Exec(ctx, &ccrun.Call{Capability: "variant"}); !errors.Is(err, ccrun.ErrPermissionDenied) {
		t.Fatalf("nobody to ask: %v, want denied", err)
	}
	untouched(t, reg, "capability, nobody to ask")
	if d := auditDecisions(t, filepath.Join(dir, "audit.jsonl")); len(d) != 1 || !strings.Contains(d[0], `"decision":"deny"`) {
		t.Fatalf("nobody to ask: audited %q", d)
	}
	var asked atomic.Int32
	person, err := ccrun.New(engines.Docker(), ccrun.WithProjectDir(dir), ccrun.WithAuditLog(""),
		ccrun.WithApprover(permission.ApproverFunc(func(context.Context, *permission.Prompt) (ceiling.Grant, error) {
			asked.Add(1)
			return ceiling.AlwaysThisProject, nil
		})))
	if err != nil {
		t.Fatal(err)
	}
	defer person.Close()
	for i := range 2 {
		out, err := person.Exec(ctx, &ccrun.Call{Capability: "variant"})
		if err != nil || strings.TrimSpace(string(out.Result.Stdout)) != "a" || asked.Load() != 1 {
			t.Fatalf("run %d: %v, asked %d times; want asked once, then run by the grant", i, err, asked.Load())
		}
	}
}
