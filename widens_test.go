package ccrun_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/permission"
)

// TestAllowHostsWidenAsked: hosts a call adds to the lists the settings
// keep are a loosening no grant is bound to, so an allow rule, a session
// grant or the mode trust that lets the command run does not let them in:
// the call is asked, Once only, and refused with nobody to ask. Without
// them the same command runs by its rule; with no list at all they only
// narrow the network and are not asked about.
func TestAllowHostsWidenAsked(t *testing.T) {
	tierHome(t, `{"network": {"allow": ["registry.npmjs.org"]}, "permissions": {"allow": ["run_command:true", "run_docker:*"]}}`)
	for _, mode := range []string{"default", "trust"} {
		flags, err := permission.FlagSettings(mode, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		opts := append([]ccrun.Option{ccrun.WithProjectDir(t.TempDir()), ccrun.WithTrustDir(t.TempDir()), ccrun.WithAuditLog(""),
			ccrun.WithSettings(flags)}, engines.All()...)
		rt, err := ccrun.New(opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		for _, c := range []*ccrun.Call{
			{Command: "true", AllowHosts: []string{"evil.example"}},
			{Image: "ccrun-test:busybox", Args: []string{"true"}, AllowHosts: []string{"evil.example"}},
		} {
			out, err := rt.Check(context.Background(), c)
			if err != nil {
				t.Fatalf("%s: check %+v: %v", mode, c, err)
			}
			if d := out.Decision; d.Verdict != permission.AskUser || d.Layer != permission.LayerWidens || d.Offer != ceiling.Once {
				t.Errorf("%s: %+v decided %s at %s offering %s (%s); want ask at %s, Once", mode, c, d.Verdict, d.Layer, d.Offer, d.Reason, permission.LayerWidens)
			}
			if _, err := rt.Exec(context.Background(), c); !errors.Is(err, ccrun.ErrPermissionDenied) {
				t.Errorf("%s: %+v with nobody to ask: %v; want ErrPermissionDenied", mode, c, err)
			}
		}
		out, err := rt.Check(context.Background(), &ccrun.Call{Command: "true"})
		if err != nil || out.Decision.Verdict != permission.Allow {
			t.Errorf("%s: true without hosts: %v %+v; want allowed by its rule", mode, err, out.Decision)
		}
	}
	// no list: the call's hosts narrow the host's network, asked about by nobody
	tierHome(t, `{"permissions": {"allow": ["run_command:true"]}}`)
	rt, err := ccrun.New(ccrun.WithProjectDir(t.TempDir()), ccrun.WithTrustDir(t.TempDir()), ccrun.WithAuditLog(""))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	out, err := rt.Check(context.Background(), &ccrun.Call{Command: "true", AllowHosts: []string{"registry.npmjs.org"}})
	if err != nil || out.Decision.Verdict != permission.Allow {
		t.Errorf("hosts with no list: %v %+v; want allowed by the rule", err, out.Decision)
	}
}
