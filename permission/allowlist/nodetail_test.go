package allowlist

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission/keys"
)

// TestSessionFileKeepsNoDetail: the grant of a command with no argument
// (make: run_command:make:"") is written to the session's file with its
// empty detail and read back by another process as the same grant, which
// covers make and not make deploy; an entry of the program written by a
// person (or by an older ccrun) still covers every make.
func TestSessionFileKeepsNoDetail(t *testing.T) {
	t.Parallel()
	dir := alSessionDir(t)
	first := alStart(t, dir, alClockAt(alNow))
	bare := keys.Key{Tool: keys.ShellTool, Action: "make"}
	grant := keys.PatternOf(bare)
	if err := first.Add(Entry{Pattern: grant, Grant: ceiling.AlwaysThisSession, Expiry: Never}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, first.ID()+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"pattern": "run_command:make:\"\""`) {
		t.Fatalf("the session file does not hold the grant of no detail:\n%s", data)
	}
	second, err := OpenSession(dir, first.ID(), alClockAt(alNow))
	if err != nil {
		t.Fatal(err)
	}
	es := second.Entries()
	if len(es) != 1 || es[0].Pattern != grant {
		t.Fatalf("read back %v, want %s", es, grant)
	}
	deploy := keys.Key{Tool: keys.ShellTool, Action: "make", Detail: "deploy"}
	for _, s := range []*SessionAllowlist{first, second} {
		if m := s.Lookup(bare, "", alNow); !m.OK || m.Entry.Pattern != grant {
			t.Errorf("make under the grant of make: %+v", m)
		}
		if m := s.Lookup(deploy, "", alNow); m.OK {
			t.Errorf("make deploy under the grant of make: allowed by %s", m.Entry.Pattern)
		}
	}

	// An entry of the program itself, as a person adds it (ccrun allowlist
	// add run_command:make) or an older ccrun granted it: every make.
	if err := second.Add(alEntry("run_command:make", ceiling.AlwaysThisSession, Never, "")); err != nil {
		t.Fatal(err)
	}
	if es := first.Entries(); len(es) != 2 {
		t.Fatalf("entries %v, want the grant of make and the rule of every make apart", es)
	}
	if m := first.Lookup(deploy, "", alNow); !m.OK || m.Entry.Pattern.String() != "run_command:make" {
		t.Errorf("make deploy under run_command:make: %+v", m)
	}
}

// TestSessionFileNoDetailHostile: an empty detail is read only as the
// whole quoted segment "" of a pattern; other spellings are a corrupt file.
func TestSessionFileNoDetailHostile(t *testing.T) {
	t.Parallel()
	for _, pat := range []string{`run_command:make:`, `run_command:make:\"\"x`, `run_command:\"\":\"\"`, `run_command:make:\"\":\"\"`} {
		t.Run(pat, func(t *testing.T) {
			t.Parallel()
			data := `{"version":1,"id":"` + strings.Repeat("a", 32) + `","created":1,"expires":9999999999,"entries":[{"pattern":"` +
				pat + `","grant":"AlwaysThisSession","expiry":-1}]}`
			if _, err := decodeSessionFile("s.json", []byte(data)); err == nil {
				t.Fatalf("a session file with pattern %s was read", pat)
			}
		})
	}
}
