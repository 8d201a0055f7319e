// Package ceiling says how far a person may trust a tool, given where the
// tool runs. It is the smallest package of ccrun on purpose: an environment,
// a grant, the highest grant each environment may reach, and the error that
// says a grant went past it. Nothing else.
//
// The rule comes from seed 000 §4.3: a @shell tool runs with the user's own
// rights, so a grant for it never outlives the session; a @wasm or @docker
// tool is confined by its sandbox, so a project may trust it for good.
//
// Everything here is immutable and safe for concurrent use.
package ceiling

import (
	"errors"
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
)

// Environment is where a tool's code runs.
type Environment string

// The environments ccrun knows. Any other value is invalid.
const (
	Shell  Environment = "@shell"  // the host, through os/exec
	Wasm   Environment = "@wasm"   // wazero, WASI preview 1
	Docker Environment = "@docker" // a container, through the Docker Engine API
)

// Environments lists every valid environment, in a stable order.
var Environments = []Environment{Shell, Wasm, Docker}

// ErrUnknownEnvironment is the class of ParseEnvironment's error.
var ErrUnknownEnvironment = errdefs.ErrInvalidArgument.WithMessage("unknown environment")

// ParseEnvironment reads "@shell", "@wasm" or "@docker". The leading "@" may
// be left out. Anything else is an error of class ErrUnknownEnvironment.
func ParseEnvironment(s string) (Environment, error) {
	e := Environment("@" + strings.TrimPrefix(s, "@"))
	if e.Valid() {
		return e, nil
	}
	return "", fmt.Errorf("environment %q: want one of @shell, @wasm, @docker: %w", s, ErrUnknownEnvironment)
}

// Valid reports whether e is one of Environments.
func (e Environment) Valid() bool { return e == Shell || e == Wasm || e == Docker }

// Sandboxed reports whether e confines the tool's code (@wasm, @docker).
func (e Environment) Sandboxed() bool { return e == Wasm || e == Docker }

// Grant is what a person chose when asked. Grants are ordered: a larger
// grant lasts longer. The zero value is Deny.
type Grant int

// The grants, from least to most lasting.
const (
	Deny              Grant = iota // not allowed
	Once                           // this call only
	AlwaysThisSession              // until the session ends or the grant expires
	AlwaysThisProject              // written to ccrun.json; survives sessions
)

var grantNames = [...]string{"Deny", "Once", "AlwaysThisSession", "AlwaysThisProject"}

// String returns the grant's name as it is written in ccrun.json.
func (g Grant) String() string {
	if g < 0 || int(g) >= len(grantNames) {
		return fmt.Sprintf("Grant(%d)", int(g))
	}
	return grantNames[g]
}

// ErrUnknownGrant is the class of ParseGrant's error.
var ErrUnknownGrant = errdefs.ErrInvalidArgument.WithMessage("unknown grant")

// ParseGrant reads a grant's name as String writes it, or one of the short
// forms "deny", "once", "session", "project" (case-insensitive).
func ParseGrant(s string) (Grant, error) {
	switch strings.ToLower(s) {
	case "deny":
		return Deny, nil
	case "once":
		return Once, nil
	case "session", "alwaysthissession":
		return AlwaysThisSession, nil
	case "project", "alwaysthisproject":
		return AlwaysThisProject, nil
	}
	return Deny, fmt.Errorf("grant %q: want Once, AlwaysThisSession, AlwaysThisProject or Deny: %w", s, ErrUnknownGrant)
}

// Of returns the highest grant a tool in environment e may be given:
// AlwaysThisSession for @shell, AlwaysThisProject for @wasm and @docker.
// An invalid environment gets Once: what ccrun cannot place, it trusts least.
func Of(e Environment) Grant {
	switch e {
	case Wasm, Docker:
		return AlwaysThisProject
	case Shell:
		return AlwaysThisSession
	}
	return Once
}

// Check returns nil when g is within e's ceiling, and a *Violation otherwise.
// key names what the grant was for; it is only used in the error.
func Check(e Environment, key string, g Grant) error {
	if g <= Of(e) {
		return nil
	}
	return &Violation{Environment: e, Key: key, Grant: g, Ceiling: Of(e)}
}

// ErrViolation is the class of every *Violation: errors.Is(err, ErrViolation).
// It is of class errdefs.ErrPermissionDenied too: a grant past the ceiling
// is refused.
var ErrViolation = errdefs.ErrPermissionDenied.WithMessage("ceiling violation")

// Violation says a grant went past its environment's ceiling: a person chose
// AlwaysThisProject for a @shell key, or ccrun.json holds a @shell key.
type Violation struct {
	Environment Environment
	Key         string
	Grant       Grant // what was asked for or found
	Ceiling     Grant // the most the environment allows
}

func (v *Violation) Error() string {
	return fmt.Sprintf("ceiling violation: %s is a %s key, which can be granted at most %s, not %s",
		v.Key, v.Environment, v.Ceiling, v.Grant)
}

// Is makes errors.Is(err, ErrViolation) true for every *Violation.
func (v *Violation) Is(target error) bool {
	return target == ErrViolation || errors.Is(ErrViolation, target)
}

// MarshalText writes g's name, so grants are strings in JSON.
func (g Grant) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// UnmarshalText reads a grant as ParseGrant does.
func (g *Grant) UnmarshalText(b []byte) error {
	v, err := ParseGrant(string(b))
	if err != nil {
		return err
	}
	*g = v
	return nil
}
