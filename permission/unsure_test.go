package permission

import (
	"testing"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission/keys"
)

// TestDenyInsideDivergentText: a deny rule looking inside bash -c text that
// bash may read unlike mvdan/sh neither matches nor misses: it is asked,
// Once only, before any grant.
func TestDenyInsideDivergentText(t *testing.T) {
	t.Parallel()
	pol, err := NewPolicy(PolicyConfig{Layers: []*Settings{{Origin: OriginUser, Mode: ModeTrust,
		Deny: []keys.Pattern{keys.MustParsePattern("run_command:rm")}}}})
	if err != nil {
		t.Fatal(err)
	}
	g := &Gate{Policy: pol}
	for _, cmd := range []string{
		"bash -c 'echo x\r#;rm f'",
		"bash -c 'echo x\u00a0rm f'",
		"sh -c 'echo a &>f rm -rf x'",
		"zsh -c 'echo hi'",
		"bash -c 'echo `echo hi`'",
		"bash -c 'shopt -s extglob\necho @(a|b)'",
		"watch -n1 'echo x\rrm f'",
		"env -S 'echo \\x'",
	} {
		d := g.Decide(shellRequest(cmd))
		if d.Verdict != AskUser || d.Layer != LayerDenyRule || d.Offer != ceiling.Once {
			t.Errorf("Decide(%q) = %s %s offer %s (%s), want ask deny-rule offer once", cmd, d.Verdict, d.Layer, d.Offer, d.Reason)
		}
	}
	for cmd, want := range map[string]Verdict{
		"bash -c 'rm -rf x'":    Refuse, // seen: denied
		"bash -c 'echo x'":      Allow,  // seen, not rm: trust allows it
		"echo x\r#;rm f":        Allow,  // ccrun's own interpreter reads it: no divergence
		"bash -c 'x\r'; rm foo": Refuse,
	} {
		if d := g.Decide(shellRequest(cmd)); d.Verdict != want {
			t.Errorf("Decide(%q) = %s %s (%s), want %s", cmd, d.Verdict, d.Layer, d.Reason, want)
		}
	}
}
