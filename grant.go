package ccrun

import (
	"context"
	"fmt"

	"github.com/ccrun/ccrun/ceiling"
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
