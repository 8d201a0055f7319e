package runtimehook

import (
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/allowlist"
)

// Lint checks every entry of rt's project allowlist — its key form, the
// ceiling of its environment, whether a capability grant still matches
// the capability — and the rules of the settings layers
// (keys.CheckPattern): `ccrun allowlist lint` and `list`. It returns
// every entry with what it found; when there is any problem, the error is
// of class ccrun.ErrInvalidConfig too (the problems are in the Allowlist,
// not in the error).
var Lint func(rt any) (*Allowlist, error)

// ReloadAllowlist reads rt's project allowlist again, for the MCP server,
// a long-lived process, after someone else changed the file (it is never
// reloaded on its own). The trust of the project stays as New found it.
var ReloadAllowlist func(rt any) error

// Allowlist is the project allowlist as Lint found it, with the rules of
// the settings layers that match nothing.
type Allowlist struct {
	File    string           // where it is kept (ccrun.json); "" for none
	Entries []AllowlistEntry // in the file's order
	Rules   []RuleProblem    // the rules that match no command, in layer order
}

// RuleProblem is an allow, ask or deny rule of a settings layer that
// matches nothing as written (keys.CheckPattern): an exact
// run_command rule whose text is not a compound command that parses.
type RuleProblem struct {
	Kind string // allow, ask or deny
	permission.Rule
	Problem error
}

// AllowlistEntry is one entry of the project allowlist and what Lint
// found about it.
type AllowlistEntry struct {
	allowlist.Entry
	// Problem, when set, makes the entry wrong: a key of no known form
	// (ccrun.ErrUnknownKey), a grant past the ceiling
	// (ccrun.ErrCeilingViolation), a capability that is gone. Such an
	// entry allows nothing.
	Problem error
	// Warning, when set, says the entry counts less than it seems: the
	// capability changed since it was approved, or the grant is bound to
	// no digest.
	Warning string
}

// Problems counts the entries with a Problem and the rules that match
// nothing.
func (a *Allowlist) Problems() int {
	n := len(a.Rules)
	for _, e := range a.Entries {
		if e.Problem != nil {
			n++
		}
	}
	return n
}
