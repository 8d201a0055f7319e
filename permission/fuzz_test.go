package permission

import (
	"testing"

	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/shellcmd"
)

// FuzzParseCommand checks, for any text, what checkCommand checks: no
// panic; a valid key that prints and parses back to itself; a compound
// key matched by no wildcard nor by a pattern of any word in it; the tree
// that runs a compound command the same as the tree of its source; and
// shown text printable ASCII. It also checks that keying is deterministic
// and that the canonical text of a compound command keys the same, and
// that a rule written as the text of a compound command matches its key.
//
// Its seed corpus is keyTests, plus testdata/fuzz/FuzzParseCommand.
func FuzzParseCommand(f *testing.F) {
	for _, tt := range keyTests {
		f.Add(tt.src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		c := ParseCommand(src)
		checkCommand(t, c)
		if again := ParseCommand(src); again.Key != c.Key || again.Canonical != c.Canonical {
			t.Fatalf("keyed %q twice: %s then %s", src, c.Key, again.Key)
		}
		if c.Compound && c.Err == nil && c.Canonical != shellcmd.CanonicalEmpty {
			if again := ParseCommand(c.Canonical); again.Compound && again.Key != c.Key {
				t.Fatalf("%q keys as %s, its canonical text %q as %s", src, c.Key, c.Canonical, again.Key)
			}
			// A rule written as the command's text is its key's pattern.
			rule := keys.Key{Tool: keys.ShellTool, Action: src, Exact: true}.String()
			if p, err := keys.ParsePattern(rule); err == nil && !p.Match(c.Key) {
				t.Fatalf("rule %s does not match the key %s of its own text", rule, c.Key)
			}
		}
	})
}
