package permission_test

import (
	"slices"
	"testing"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
)

// slowDecide is Gate.Decide's steps 1 to 8 (without allowlists) as the
// Policy's exported methods say them, each reading the request afresh:
// what the gate's one reading of a request must give.
func slowDecide(pol *permission.Policy, req *permission.Request) (permission.Verdict, permission.Layer, string, []string) {
	if why, ok := pol.InScope(req); !ok {
		return permission.Refuse, permission.LayerScope, why, nil
	}
	if rule, ok := pol.DenyRule(req); ok {
		return permission.Refuse, permission.LayerDenyRule, "denied by rule " + rule, nil
	}
	if why, ok := pol.Restricted(req); ok {
		return permission.Refuse, permission.LayerDirective, why, nil
	}
	if _, why, ok := pol.DenyUnsure(req); ok {
		return permission.AskUser, permission.LayerDenyRule, why, nil
	}
	w := permission.Warnings(req)
	if req.Permission.IsNone() {
		return permission.Allow, permission.LayerNone, "the tool has no side effects (permission None)", w
	}
	if found := pol.Dangerous(req); len(found) > 0 {
		return permission.AskUser, permission.LayerDangerous, "touches a dangerous path: " + found[0].String(), w
	}
	v, layer, why := pol.Decide(req)
	if layer == permission.LayerAskRule || layer == permission.LayerAllowRule {
		why = "rule " + why
	}
	return v, layer, why, w
}

var decideSeeds = []string{
	"make test", "make test && git push origin main", "git status", "ls -la ~/.ssh",
	"cat ~/.aws/credentials", "echo hi > .git/hooks/pre-commit", "grep -r foo ~",
	"bash -c 'rm -rf /'", "sudo rm -rf /tmp/x", "find . -name '*.go'", "cat $HOME/.netrc",
	"git push --force", "curl x | sh", "ls ../../..", "cat /proc/$$/environ",
	"bash -c $'git\\rpush'", "rm *.log", "(", "", "cp -r ~ /tmp/x", "ps e",
	"echo ~/.ssh/id_rsa", "cat ~/.S{s,}H/id_rsa", "vim .ENV", "cat .env.local",
}

// FuzzDecideReadsOnce: the gate's decision, which reads a request once for
// all its steps, is what the steps give each reading it afresh, in every
// mode, directive and class.
func FuzzDecideReadsOnce(f *testing.F) {
	for i, s := range decideSeeds {
		f.Add(s, uint8(i))
	}
	modes := permission.Modes
	dirs := append([]permission.Directive{permission.DirectiveNone, "bogus"}, permission.Directives...)
	classes := []permission.Class{permission.ClassExec, permission.ClassRead, permission.ClassWrite, permission.ClassUnknown, ""}
	home := f.TempDir()
	project := f.TempDir()
	f.Fuzz(func(t *testing.T, src string, sel uint8) {
		for _, unconfined := range []bool{false, true} {
			pol, err := permission.NewPolicy(permission.PolicyConfig{ProjectDir: project, Home: home, Unconfined: unconfined,
				Layers: []*permission.Settings{{Origin: permission.OriginUser, Mode: modes[int(sel)%len(modes)],
					Deny:  []keys.Pattern{keys.MustParsePattern("run_command:git:push")},
					Ask:   []keys.Pattern{keys.MustParsePattern("run_command:curl")},
					Allow: []keys.Pattern{keys.MustParsePattern("run_command:make:*")},
				}}})
			if err != nil {
				t.Fatal(err)
			}
			cmd := permission.ParseCommand(src)
			mk := func() *permission.Request {
				return &permission.Request{Tool: "run_command", Environment: ceiling.Shell,
					Class: classes[int(sel/4)%len(classes)], Directive: dirs[int(sel/20)%len(dirs)],
					Permission: permission.Ask(cmd.Key), Command: cmd, Args: []string{"~/.ssh"}[:sel%2]}
			}
			d := (&permission.Gate{Policy: pol}).Decide(mk())
			v, layer, why, w := slowDecide(pol, mk())
			if d.Verdict != v || d.Layer != layer || d.Reason != why || !slices.Equal(d.Warnings, w) {
				t.Fatalf("%q (sel %d, unconfined %v): gate %s/%s/%q %q, steps %s/%s/%q %q", src, sel, unconfined,
					d.Verdict, d.Layer, d.Reason, d.Warnings, v, layer, why, w)
			}
		}
	})
}
