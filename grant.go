package ccrun

import (
	"context"
	"fmt"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/ccrun/ccrun/permission/keys"
)

// Grant keeps a grant of p, as a person's "always" at the prompt does but
// without a call: scope ceiling.AlwaysThisProject writes it to the
// project allowlist (ccrun.json, atomically, under a lock);
// ceiling.AlwaysThisSession adds it to the runtime's session allowlist
// (WithSession). A capability grant is bound to the capability's current
// digest, so it counts only as long as the capability's files stay as
// they are. It returns the entry kept.
//
// The policy is checked here, not by the caller: a scope past the ceiling
// of p's environment (a @shell key for the project) is an error of class
// ErrCeilingViolation and ErrInvalidArgument; a key of no known form is
// ErrUnknownKey; another scope is ErrInvalidArgument; a settings file
// that locks loosening ("flags": "no-loosening", LoosenLock) or a
// sub-agent's runtime makes it ErrPermissionDenied. In a project the
// person has not trusted, a project grant is kept in the file but counts
// only once the person trusts the project (Trust).
func (r *Runtime) Grant(ctx context.Context, p keys.Pattern, scope ceiling.Grant) (allowlist.Entry, error) {
	if err := ctx.Err(); err != nil {
		return allowlist.Entry{}, err
	}
	if r.narrow.subAgent {
		return allowlist.Entry{}, fmt.Errorf("grant %s: a sub-agent cannot grant: %w", p, ErrPermissionDenied)
	}
	if by, locked := r.LoosenLock(); locked {
		return allowlist.Entry{}, fmt.Errorf("grant %s refused: %s locks the flags that loosen the gate (\"flags\": \"no-loosening\"); a person grants at the prompt, or edits the settings: %w", p, by, ErrPermissionDenied)
	}
	env, capa, err := r.environmentOf(p)
	if err != nil {
		return allowlist.Entry{}, err
	}
	e := allowlist.Entry{Pattern: p, Grant: scope, Expiry: allowlist.Never}
	if capa != nil {
		e.Digest = capa.Digest
	}
	if err := r.Environments().Check(env, p.String(), scope); err != nil {
		return allowlist.Entry{}, fmt.Errorf("%w: %w", err, ErrInvalidArgument)
	}
	switch scope {
	case ceiling.AlwaysThisProject:
		if r.gate.Project == nil {
			return allowlist.Entry{}, fmt.Errorf("grant %s: no project allowlist: %w", p, ErrUnavailable)
		}
		// checked again inside, for a built-in environment; any other
		// is never a project's (ceiling.Set.With)
		e.Environment = env
		err = r.gate.Project.Add(e)
		e.Environment = ""
	case ceiling.AlwaysThisSession:
		err = r.gate.Session.Add(e) // the ceiling of env is this Runtime's, checked above
	default:
		return allowlist.Entry{}, fmt.Errorf("grant %s: scope %s: want AlwaysThisSession or AlwaysThisProject: %w", p, scope, ErrInvalidArgument)
	}
	if err != nil {
		return allowlist.Entry{}, err
	}
	return e, nil
}

// Revoke removes the grant of pattern (as keys.ParsePattern reads
// it) from the project allowlist, and reports whether there was one.
// Session grants are not revoked one by one: they end with the session.
func (r *Runtime) Revoke(pattern string) (removed bool, err error) {
	if r.gate.Project == nil {
		return false, nil
	}
	return r.gate.Project.Remove(pattern)
}

// AllowlistFile is the file the project allowlist is kept in (ccrun.json),
// or "" when there is none.
func (r *Runtime) AllowlistFile() string {
	if r.gate.Project == nil {
		return ""
	}
	return r.gate.Project.Path()
}

// ReloadAllowlist reads the project allowlist again, for a long-lived
// process after someone else changed the file (it is never reloaded on
// its own). The trust of the project stays as New found it.
func (r *Runtime) ReloadAllowlist() error {
	if r.gate.Project == nil {
		return nil
	}
	return r.gate.Project.Reload()
}

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
	// (ErrUnknownKey), a grant past the ceiling (ErrCeilingViolation), a
	// capability that is gone. Such an entry allows nothing.
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

// Lint checks every entry of the project allowlist — its key form, the
// ceiling of its environment, whether a capability grant still matches
// the capability — and the rules of the settings layers
// (keys.CheckPattern). It returns every entry with what it found;
// when there is any problem, the error is of class ErrInvalidConfig too
// (the problems are in the Allowlist, not in the error).
func (r *Runtime) Lint() (*Allowlist, error) {
	a := &Allowlist{File: r.AllowlistFile(), Entries: []AllowlistEntry{}}
	if r.gate.Project != nil {
		for _, e := range r.gate.Project.Entries() {
			le := AllowlistEntry{Entry: e}
			le.Warning, le.Problem = r.lintEntry(e)
			a.Entries = append(a.Entries, le)
		}
	}
	if pol := r.gate.Policy; pol != nil {
		allow, ask, deny := pol.Rules()
		for _, l := range []struct {
			kind  string
			rules []permission.Rule
		}{{"allow", allow}, {"ask", ask}, {"deny", deny}} {
			for _, rule := range l.rules {
				if err := keys.CheckPattern(rule.Pattern); err != nil {
					a.Rules = append(a.Rules, RuleProblem{Kind: l.kind, Rule: rule, Problem: err})
				}
			}
		}
	}
	if n := a.Problems(); n > 0 {
		s := "s"
		if n == 1 {
			s = ""
		}
		return a, fmt.Errorf("allowlist %s: %d problem%s: %w", a.File, n, s, ErrInvalidConfig)
	}
	return a, nil
}

// lintEntry checks one project entry: an unknown key form or a grant past
// the ceiling is a problem; a capability that changed since approval is a
// warning.
func (r *Runtime) lintEntry(e allowlist.Entry) (warning string, problem error) {
	env, capa, err := r.environmentOf(e.Pattern)
	if err != nil {
		return "", err
	}
	if err := r.Environments().Check(env, e.Pattern.String(), e.Grant); err != nil {
		return "", err
	}
	if capa != nil && e.Digest != "" && e.Digest != capa.Digest {
		return "the capability changed since approval; it will be asked again", nil
	}
	if capa != nil && e.Digest == "" {
		return "not bound to a digest, so it allows nothing; grant it again with ccrun allowlist add", nil
	}
	return "", nil
}
