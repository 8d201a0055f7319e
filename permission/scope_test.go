package permission

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/internal/errclass"
)

// TestParseScope: a scope is full or read-only, exactly; every other
// spelling, the aliases it once took included, is an error listing both.
func TestParseScope(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Scope{"": ScopeFull, "full": ScopeFull, "read-only": ScopeReadOnly} {
		if got, err := ParseScope(in); err != nil || got != want {
			t.Errorf("ParseScope(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, s := range []Scope{ScopeFull, ScopeReadOnly} {
		if got, err := ParseScope(s.String()); err != nil || got != s {
			t.Errorf("ParseScope(%q) = %q, %v; want %q", s.String(), got, err, s)
		}
	}
	for _, bad := range []string{"readonly", "read-only-explorer", "full-access", "Full", "READ-ONLY", " full", "none"} {
		_, err := ParseScope(bad)
		if !errors.Is(err, errclass.InvalidConfig) || !strings.Contains(fmt.Sprint(err), "want full or read-only") {
			t.Errorf("ParseScope(%q) error = %v, want errclass.InvalidConfig listing the scopes", bad, err)
		}
	}
}
