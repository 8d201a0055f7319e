package mcpserver

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
)

func promptOf(env ceiling.Environment, offerUnconfined bool) *permission.Prompt {
	c := permission.ParseCommand("make test")
	return &permission.Prompt{
		Request: &permission.Request{Tool: "run_command", Environment: env, Command: c, Display: "make test", Permission: permission.Ask(c.Key)},
		Decision: &permission.Decision{Verdict: permission.AskUser, Key: c.Key, Offer: ceiling.Of(env), Reason: "mode default: exec calls ask",
			OfferUnconfined: offerUnconfined},
	}
}

// TestChoiceUnconfined: "unconfined" is a choice of its own, labelled,
// offered only where the decision offers it and the question can carry
// it; only that word is unconfined, and given where it was not offered it
// is refused, never taken as "once".
func TestChoiceUnconfined(t *testing.T) {
	t.Parallel()
	accept := func(w string) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"grant": w}}
	}
	words := func(cs []choice) string {
		var w []string
		for _, c := range cs {
			w = append(w, c.word)
		}
		return strings.Join(w, ",")
	}
	offered := choicesOf(promptOf(ceiling.Shell, true), true)
	if got := words(offered); got != "once,session,unconfined,deny" {
		t.Fatalf("offered %s", got)
	}
	for _, tc := range []struct {
		word       string
		grant      ceiling.Grant
		unconfined bool
	}{{"once", ceiling.Once, false}, {"session", ceiling.AlwaysThisSession, false}, {"unconfined", ceiling.Once, true}, {"deny", ceiling.Deny, false}} {
		c, err := choiceOf(accept(tc.word), offered)
		if err != nil || c.grant != tc.grant || c.unconfined != tc.unconfined {
			t.Errorf("%s: %v unconfined=%v %v; want %v unconfined=%v", tc.word, c.grant, c.unconfined, err, tc.grant, tc.unconfined)
		}
	}
	// not offered: a decision that does not offer it, or a question
	// asked through Approve (which cannot carry it)
	for name, p := range map[string]struct {
		p *permission.Prompt
		u bool
	}{"@wasm": {promptOf(ceiling.Wasm, false), false}, "no offer": {promptOf(ceiling.Shell, false), false}, "Approve": {promptOf(ceiling.Shell, true), false}} {
		cs := choicesOf(p.p, p.u)
		if strings.Contains(words(cs), "unconfined") {
			t.Errorf("%s: offered %s", name, words(cs))
		}
		if c, err := choiceOf(accept("unconfined"), cs); err == nil || c.grant != ceiling.Deny || c.unconfined {
			t.Errorf("%s: the word unconfined, not offered, gave %v unconfined=%v %v; want refused", name, c.grant, c.unconfined, err)
		}
		q := question(p.p, cs, nil)
		if strings.Contains(q.Message, "outside the sandbox") {
			t.Errorf("%s: a question without the choice speaks of it:\n%s", name, q.Message)
		}
	}
	// the label and the meaning are the choice's own
	q := question(promptOf(ceiling.Shell, true), offered, nil)
	g := q.RequestedSchema.(map[string]any)["properties"].(map[string]any)["grant"].(map[string]any)
	labels := g["enumNames"].([]string)
	if len(labels) != 4 || labels[2] != "run once outside the sandbox" {
		t.Errorf("enumNames %q", labels)
	}
	if d := g["description"].(string); !strings.Contains(d, "unconfined: run once outside the sandbox, this call only, with all your rights") {
		t.Errorf("description %q", d)
	}
}
