package shellcmd

import (
	"strings"
	"testing"
)

// TestMayDrop: the prefilter that spares most words the SQL regexp says
// what the regexp says, whatever the case, spacing or bytes around.
func TestMayDrop(t *testing.T) {
	corpus := []string{
		"", "true", "git status", "drop", "DROP TABLE users", "dRoP\t\tdAtAbAsE x", "psql -c 'drop schema s'",
		"xdrop table", "drop_table", "TRUNCATE TABLE t", "truncate  table", "truncate", "DELETE FROM t;",
		"delete from t", "delete from t where x", "Delete\nFrom\nT ;", "ＤＲＯＰ TABLE x", "drop\u00a0table x",
		"dr\u0000op table", "\xff\xfeDROP VIEW v", "drop user bob", "drop index i", "DROPTABLE", "dropped table",
		"undelete from x", "-c=DROP TABLE x", "KELVIN \u212a drop table",
	}
	for _, w := range dropWords { // every case of every word, alone and in a match
		up := strings.ToUpper(w)
		corpus = append(corpus, w, up, up+" table x", up+" from x;", w+" table")
	}
	for _, s := range corpus {
		if got, want := mayDrop(s), sqlDrop().MatchString(s); got != want {
			t.Errorf("mayDrop(%q) = %v, the regexp says %v", s, got, want)
		}
	}
	if containsASCIIFold("DrOp", "drop") != true || containsASCIIFold("dro", "drop") || containsASCIIFold("d\x00op", "drop") {
		t.Error("containsASCIIFold")
	}
}

// FuzzMayDrop holds the prefilter to the regexp on any bytes.
func FuzzMayDrop(f *testing.F) {
	f.Add("DROP TABLE x")
	f.Add("delete from t;")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := mayDrop(s), sqlDrop().MatchString(s); got != want {
			t.Errorf("mayDrop(%q) = %v, the regexp says %v", s, got, want)
		}
	})
}
