package ccrun_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/internal/prompt"
	"github.com/ccrun/ccrun/internal/testimage"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/runtime/job"
)

// boxOptions are options of the test-only environment @testbox.
type boxOptions struct{ Colour string }

func (boxOptions) Environment() ceiling.Environment { return boxEnv }

// TestEnvironmentOptionsRefused: options of one environment given to a
// call of another are refused as an invalid call, saying which is which
// and how to fix it, before anything is asked, prepared or reached: no
// approver, no backend made (so no engine contacted, nothing pulled), for
// Exec and Check alike. Options of the call's own environment, and a nil
// pointer of any type, pass.
func TestEnvironmentOptionsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.box"), []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := capabilities.Scaffold(dir, "sh-cap", ceiling.Shell); err != nil {
		t.Fatal(err)
	}
	var asked, dockerMade, boxMade atomic.Int32
	approver := permission.ApproverFunc(func(context.Context, *permission.Prompt) (ceiling.Grant, error) {
		asked.Add(1)
		return ceiling.Once, nil
	})
	b := &box{}
	rt, err := ccrun.New(ccrun.WithProjectDir(dir), ccrun.WithAuditLog(""), ccrun.WithApprover(approver),
		ccrun.WithBackend(boxEnv, ceiling.AlwaysThisSession, func(context.Context) (ccrun.Backend, error) {
			boxMade.Add(1)
			return b, nil
		}),
		ccrun.WithBackend(ceiling.Docker, ceiling.AlwaysThisProject, func(context.Context) (ccrun.Backend, error) {
			dockerMade.Add(1) // the engine would start here
			return &box{}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, tc := range []struct {
		name     string
		call     ccrun.Call
		for_, of string
	}{
		{"docker's on a command", ccrun.Call{Command: "true", Options: engines.DockerOptions{Network: "host"}}, "@docker", "@shell"},
		{"docker's on a module", ccrun.Call{Module: "m.wasm", Options: &engines.DockerOptions{Pull: "always"}}, "@docker", "@wasm"},
		{"another's on an image", ccrun.Call{Image: "busybox:1.36", Options: boxOptions{}}, "@testbox", "@docker"},
		{"docker's on a target", ccrun.Call{Environment: boxEnv, Target: "hello.box", Options: engines.DockerOptions{}}, "@docker", "@testbox"},
		{"docker's on a @shell capability", ccrun.Call{Capability: "sh-cap", Options: engines.DockerOptions{Network: "bridge"}}, "@docker", "@shell"},
	} {
		for _, how := range []string{"exec", "check"} {
			c := tc.call
			if how == "exec" {
				_, err = rt.Exec(context.Background(), &c)
			} else {
				_, err = rt.Check(context.Background(), &c)
			}
			if !errors.Is(err, ccrun.ErrInvalidCall) {
				t.Fatalf("%s (%s): %v, want ErrInvalidCall", tc.name, how, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "options of "+tc.for_) || !strings.Contains(msg, "a call of "+tc.of) || !strings.Contains(msg, "drop them") {
				t.Errorf("%s (%s): %q does not say whose options went to which call, and how to fix it", tc.name, how, msg)
			}
		}
	}
	if asked.Load() != 0 || dockerMade.Load() != 0 || boxMade.Load() != 0 {
		t.Fatalf("asked %d, @docker backend made %d, @testbox's %d: want nothing before the refusal", asked.Load(), dockerMade.Load(), boxMade.Load())
	}
	// the call's own environment's options, and a nil pointer, pass
	if out, err := rt.Exec(context.Background(), &ccrun.Call{Environment: boxEnv, Target: "hello.box", Options: boxOptions{Colour: "red"}}); err != nil || !out.Result.OK() {
		t.Fatalf("own options: %v", err)
	}
	if _, err := rt.Check(context.Background(), &ccrun.Call{Command: "true", Options: (*engines.DockerOptions)(nil)}); err != nil {
		t.Fatalf("a nil pointer of options: %v, want none", err)
	}
}

// TestDockerOptionsValues: a network or a pull policy no engine knows is
// refused before anyone is asked.
func TestDockerOptionsValues(t *testing.T) {
	t.Parallel()
	var asked atomic.Int32
	rt, err := ccrun.New(engines.Docker(), ccrun.WithProjectDir(t.TempDir()), ccrun.WithAuditLog(""),
		ccrun.WithApprover(permission.ApproverFunc(func(context.Context, *permission.Prompt) (ceiling.Grant, error) {
			asked.Add(1)
			return ceiling.Deny, nil
		})))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, o := range []engines.DockerOptions{{Network: "container:x"}, {Pull: "sometimes"}} {
		if _, err := rt.Exec(context.Background(), &ccrun.Call{Image: "busybox:1.36", Options: o}); !errors.Is(err, ccrun.ErrInvalidCall) {
			t.Errorf("%+v: %v, want ErrInvalidCall", o, err)
		}
	}
	if asked.Load() != 0 {
		t.Fatalf("asked %d times", asked.Load())
	}
}

// TestDockerOptionsShown: a @docker capability granted for the session
// runs again unasked as its manifest says, but not with a network the
// call adds (Network "host"): the grant did not cover it. That call is
// asked again, decided as a network call, the network shown in the prompt
// and recorded in the audit line. A grant given with the network covers
// that network.
func TestDockerOptionsShown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	writeCapability(t, dir, "hi", `{"name": "hi", "description": "says hi", "environment": "@docker",
		"entry": {"image": "`+testimage.Name+`", "command": ["/bin/busybox", "echo", "hi"]}}`)
	var asked atomic.Int32
	var last atomic.Pointer[permission.Prompt]
	answer := ceiling.AlwaysThisSession
	a := permission.ApproverFunc(func(_ context.Context, p *permission.Prompt) (ceiling.Grant, error) {
		asked.Add(1)
		last.Store(p)
		return answer, nil
	})
	rt, log := dockerNetRuntime(t, dir, a)
	for i := range 2 {
		out, err := rt.Exec(ctx, &ccrun.Call{Capability: "hi"})
		if err != nil || strings.TrimSpace(string(out.Result.Stdout)) != "hi" || asked.Load() != 1 {
			t.Fatalf("run %d: %v, asked %d; want asked once, then run by the session's grant", i, err, asked.Load())
		}
	}
	answer = ceiling.Deny
	host := &ccrun.Call{Capability: "hi", Options: engines.DockerOptions{Network: "host"}}
	out, err := rt.Exec(ctx, host)
	if !errors.Is(err, ccrun.ErrPermissionDenied) || out.Result != nil || asked.Load() != 2 {
		t.Fatalf("network host: %v, ran %v, asked %d; want asked again (the grant did not cover the network) and refused", err, out.Result != nil, asked.Load())
	}
	p := last.Load()
	if !strings.Contains(strings.Join(p.Request.Loosens, "\n"), "network: host") || p.Request.Class != permission.ClassNetwork {
		t.Errorf("the request loosens %q, class %s; want network: host, a network call", p.Request.Loosens, p.Request.Class)
	}
	if shown := prompt.Render(p, true, nil); !strings.Contains(shown, "network: host") {
		t.Errorf("the prompt does not show the network:\n%s", shown)
	}
	d := auditDecisions(t, log)
	if l := d[len(d)-1]; !strings.Contains(l, `"loosens":["network: host"]`) || !strings.Contains(l, `"decision":"deny"`) {
		t.Errorf("the audit line does not record the network: %s", l)
	}

	// granted for the session with the network, the grant covers that
	// network from then on
	answer = ceiling.AlwaysThisSession
	for i := range 2 {
		out, err := rt.Exec(ctx, &ccrun.Call{Capability: "hi", Options: engines.DockerOptions{Network: "host"}})
		if err != nil || strings.TrimSpace(string(out.Result.Stdout)) != "hi" || asked.Load() != 3 {
			t.Fatalf("network host, run %d: %v, asked %d; want asked once more, then run by the grant", i, err, asked.Load())
		}
	}
}

// TestCapabilityOwnMountsAsked: a capability granted for the session does
// not run unasked with mounts of the call's own, which its digest does
// not cover: each is asked, a writable one shown as a loosening; granted
// with the mount, the grant covers that mount.
func TestCapabilityOwnMountsAsked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := capabilities.Scaffold(dir, "hello", ceiling.Wasm); err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	var last atomic.Pointer[permission.Prompt]
	rt, err := ccrun.New(engines.Wasm(), ccrun.WithProjectDir(dir), ccrun.WithAuditLog(""),
		ccrun.WithApprover(permission.ApproverFunc(func(_ context.Context, p *permission.Prompt) (ceiling.Grant, error) {
			asked.Add(1)
			last.Store(p)
			return ceiling.AlwaysThisSession, nil
		})))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	exec := func(mounts ...job.Mount) {
		t.Helper()
		if out, err := rt.Exec(ctx, &ccrun.Call{Capability: "hello", Mounts: mounts}); err != nil || !out.Result.OK() {
			t.Fatalf("mounts %v: %v", mounts, err)
		}
	}
	exec()
	exec()
	if asked.Load() != 1 {
		t.Fatalf("asked %d times; want once, then the session's grant", asked.Load())
	}
	w := t.TempDir()
	for i, m := range []job.Mount{{Host: w, Guest: "/w", Writable: true}, {Host: w, Guest: "/r"}} {
		exec(m)
		if asked.Load() != int32(2+i) {
			t.Fatalf("%s: asked %d times; want asked again (the grant did not cover the mount)", m, asked.Load())
		}
		loosens := strings.Join(last.Load().Request.Loosens, "\n")
		if strings.Contains(loosens, "writable mount") != m.Writable {
			t.Errorf("%s: loosens %q", m, loosens)
		}
		exec(m)
		if asked.Load() != int32(2+i) {
			t.Fatalf("%s again: asked %d times; want the grant given with it", m, asked.Load())
		}
	}
}
