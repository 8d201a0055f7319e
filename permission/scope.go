package permission

import (
	"fmt"

	"github.com/ccrun/ccrun/internal/errclass"
)

// Scope decides which tools a caller sees (a sub-agent's policy has
// ScopeReadOnly; docs/policy.md). A tool outside the caller's scope is not listed to it and is
// denied at the gate's first step. The zero Scope is ScopeFull.
type Scope string

// The scopes.
const (
	// ScopeFull sees every tool (a deny rule may still hide one).
	ScopeFull Scope = ""
	// ScopeReadOnly sees only tools whose permission is None: tools that
	// never ask because they change nothing. It is the scope of a
	// sub-agent.
	ScopeReadOnly Scope = "read-only"
)

// Sees reports whether a caller in scope s sees a tool whose permission is
// None (none true) or Ask (none false).
func (s Scope) Sees(none bool) bool {
	switch s {
	case ScopeFull:
		return true
	case ScopeReadOnly:
		return none
	}
	return false // an unknown scope sees nothing
}

// String names the scope.
func (s Scope) String() string {
	if s == ScopeFull {
		return "full"
	}
	return string(s)
}

// ParseScope reads a scope's name: full or read-only, exactly as written
// here (String's names). There are no aliases and case counts: every other
// spelling (readonly, full-access, Full) is an error, of class
// ccrun.ErrInvalidConfig, that lists the two. The empty string is ScopeFull (no
// scope set).
func ParseScope(s string) (Scope, error) {
	switch s {
	case "", "full":
		return ScopeFull, nil
	case string(ScopeReadOnly):
		return ScopeReadOnly, nil
	}
	return "", fmt.Errorf("scope %q: want full or read-only: %w", s, errclass.InvalidConfig)
}
