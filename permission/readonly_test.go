package permission

import (
	"testing"

	"github.com/ccrun/ccrun/internal/hostile"
	"github.com/ccrun/ccrun/permission/keys"
)

// TestHostileCorpus: no command gathered from public reports of allowlist
// bypasses is ever allowed silently in default mode (shellcmd's
// TestReadOnlyHostileCorpus: none is read-only either).
func TestHostileCorpus(t *testing.T) {
	t.Parallel()
	p, err := NewPolicy(PolicyConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range hostile.Corpus(t, "hostile") {
		if v, layer, why := p.Decide(shellRequest(e.Command)); v == Allow {
			t.Errorf("Decide(%q) = allow (%s: %s), want ask", e.Command, layer, why)
		}
	}
}

// TestReadOnlyCorpus: everyday read-only commands are allowed without asking.
func TestReadOnlyCorpus(t *testing.T) {
	t.Parallel()
	p, err := NewPolicy(PolicyConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range hostile.Corpus(t, "readonly") {
		if v, layer, why := p.Decide(shellRequest(e.Command)); v != Allow || layer != LayerReadOnly {
			t.Errorf("Decide(%q) = %s %s (%s), want allow read-only", e.Command, v, layer, why)
		}
	}
}

// shellRequest is a run_command call of class exec as the gate builds it,
// minus the parsed command (another helper's ParseCommand).
func shellRequest(src string) *Request {
	return &Request{
		Tool:        "run_command",
		Environment: "@shell",
		Permission:  Ask(keys.Key{Tool: "run_command", Action: src, Exact: true}),
		Class:       ClassExec,
		Command:     &Command{Source: src},
	}
}
