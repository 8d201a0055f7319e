package permission_test

import (
	"context"
	"testing"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/shellcmd"
)

func commandReq(src string) *permission.Request {
	c := permission.ParseCommand(src)
	return &permission.Request{Tool: "run_command", Environment: ceiling.Shell, Class: permission.ClassExec,
		Permission: permission.Ask(c.Key), Command: c}
}

// TestSessionGrantOfNarrowedKey: a person who answers "this session" for
// a wrapper or for a command whose detail is not a plain word grants that
// command, however spaced or quoted, and nothing the old keys let through.
func TestSessionGrantOfNarrowedKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		granted string
		same    []string // the same command: allowed without asking
		others  []string // still asked
	}{
		{"timeout 60 true", []string{"timeout  60 'true'"}, []string{"timeout 60 sh -c 'x'", "timeout 60 sh", "timeout 61 true"}},
		{"env CI=1 npm test", []string{`env "CI=1" npm test`}, []string{"env CI=1 sh", "env CI=1 npm publish", "npm test x"}},
		{"rm *.log", []string{"rm  *.log"}, []string{"rm -rf /", "rm *.txt", "rm x", "rm '*.log'"}},
		{"rm 'old notes.txt'", []string{`rm "old notes.txt"`, `rm old\ notes.txt`}, []string{"rm x", "rm 'old notes.txt' x", "rm old notes.txt"}},
		{"sudo ls", []string{"sudo 'ls'"}, []string{"sudo rm", "sudo ls /root"}},
		{"nice -n 5 make", nil, []string{"nice -n 5 sh"}},
		{"xargs rm", nil, []string{"xargs cat", "xargs rm -rf"}},
		{"git -C d status", nil, []string{"git -C d push", "git push"}},
		{"rm -f", []string{"rm '-f'"}, []string{"rm -rf", "rm -f -r", "rm", "rm x"}},
		{"npm -v", nil, []string{"npm --unsafe-perm", "npm install", "npm"}},
		{"kubectl -n prod get pods", nil, []string{"kubectl -n prod delete pods", "kubectl -n prod get secrets", "kubectl get pods"}},
		{"make -C a build", nil, []string{"make -C a deploy", "make -C b build", "make build"}},
		{"rm -f build", nil, []string{"rm -rf build", "rm build"}},
	} {
		t.Run(shellcmd.Escape(tc.granted), func(t *testing.T) {
			t.Parallel()
			a := &answer{g: ceiling.AlwaysThisSession}
			g := &permission.Gate{Session: allowlist.NewSessionAllowlist(), Approver: a}
			if _, err := g.Authorize(context.Background(), commandReq(tc.granted)); err != nil {
				t.Fatalf("granting %q: %v", tc.granted, err)
			}
			for _, src := range append([]string{tc.granted}, tc.same...) {
				if d := g.Decide(commandReq(src)); d.Verdict != permission.Allow || d.Layer != permission.LayerSession {
					t.Errorf("after granting %q, %q: %s at %s (%s), want allowed by the session grant", tc.granted, src, d.Verdict, d.Layer, d.Reason)
				}
			}
			for _, src := range tc.others {
				if d := g.Decide(commandReq(src)); d.Layer == permission.LayerSession {
					t.Errorf("after granting %q (%s), %q (key %s) is allowed by the session grant %s", tc.granted,
						permission.ParseCommand(tc.granted).Key, src, d.Key, d.Rule)
				}
			}
		})
	}
}

// TestBroadRulesDoNotCoverNarrowedKeys: an allow rule of a program, or of
// every program, does not allow what its key used to widen to; deny rules
// still look inside.
func TestBroadRulesDoNotCoverNarrowedKeys(t *testing.T) {
	t.Parallel()
	pats := func(ss ...string) []keys.Pattern {
		var out []keys.Pattern
		for _, s := range ss {
			out = append(out, keys.MustParsePattern(s))
		}
		return out
	}
	pol, err := permission.NewPolicy(permission.PolicyConfig{Layers: []*permission.Settings{{
		Origin: permission.OriginFlags, Name: "flags",
		Allow: pats("run_command:*", "run_command:timeout", "run_command:rm:*"),
		Deny:  pats("run_command:curl", "run_command:kubectl:delete"),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{"timeout 60 sh -c 'x'", "rm *.log", "sudo rm -rf /tmp/x", "env A=1 sh", "rm -rf", "rm -rf build", "sort --output=x"} {
		if v, layer, why := pol.Decide(commandReq(src)); v == permission.Allow {
			t.Errorf("%q allowed at %s (%s), want asked", src, layer, why)
		}
	}
	for _, src := range []string{"timeout 60 curl x", "env A=1 curl x", "sudo curl x", "curl -s x", "kubectl -n prod delete pods"} {
		if _, ok := pol.DenyRule(commandReq(src)); !ok {
			t.Errorf("%q not denied by run_command:curl nor run_command:kubectl:delete", src)
		}
	}
}
