// Package ceiling says how far a person may trust a tool, given where the
// tool runs. It is the smallest package of ccrun on purpose: an environment,
// a grant, the highest grant each environment may reach, and the error that
// says a grant went past it. Nothing else.
//
// The reason: a @shell tool runs with the user's own
// rights, so a grant for it never outlives the session; a @wasm or @docker
// tool is confined by its sandbox, so a project may trust it for good.
//
// The set of environments is open to a Go program that registers a
// backend of its own (Register): such an environment is trusted at most as
// far as the host, for the session, since ccrun cannot tell whether it
// confines anything. An environment nobody registered is invalid.
//
// Everything here is safe for concurrent use; only Register changes
// anything, and what it registers stays for the life of the process.
package ceiling

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/containerd/errdefs"
)

// Environment is where a tool's code runs.
type Environment string

// The environments ccrun builds in. Any other value is invalid unless
// registered (Register).
const (
	Shell  Environment = "@shell"  // the host, through os/exec
	Wasm   Environment = "@wasm"   // wazero, WASI preview 1
	Docker Environment = "@docker" // a container, through the Docker Engine API
)

// Environments lists the built-in environments, in a stable order.
var Environments = []Environment{Shell, Wasm, Docker}

// registered holds the environments Register added, with their ceilings.
var registered sync.Map // Environment → Grant

// Register adds environment e, whose tools may be granted at most max,
// for a backend a Go program brings (ccrun.WithBackend). e is "@" and a
// lowercase letter, then lowercase letters, digits and "-", at most 32 in
// all, and not a built-in environment. max is Once or AlwaysThisSession:
// AlwaysThisProject belongs to the sandboxes whose confinement ccrun
// builds and tests (@wasm, @docker), and a backend that runs elsewhere
// reaches it only as an engine of one of them, not by saying it confines.
// Registering e again with the same ceiling does nothing; with another, it
// is an error (a ceiling never changes while grants made under it exist).
// Errors are of class errdefs.ErrInvalidArgument.
func Register(e Environment, max Grant) error {
	if e.Builtin() {
		return fmt.Errorf("environment %s: built in, with its own ceiling: %w", e, errdefs.ErrInvalidArgument)
	}
	if !validName(string(e)) {
		return fmt.Errorf("environment %q: want @ and a lowercase letter, then lowercase letters, digits and -, at most 32: %w", e, errdefs.ErrInvalidArgument)
	}
	if max != Once && max != AlwaysThisSession {
		return fmt.Errorf("environment %s: ceiling %s: want Once or AlwaysThisSession (only @wasm and @docker reach AlwaysThisProject; register an engine of one of them instead): %w", e, max, errdefs.ErrInvalidArgument)
	}
	if prev, loaded := registered.LoadOrStore(e, max); loaded && prev.(Grant) != max {
		return fmt.Errorf("environment %s: registered already with ceiling %s, not %s: %w", e, prev.(Grant), max, errdefs.ErrInvalidArgument)
	}
	return nil
}

func validName(s string) bool {
	if len(s) < 2 || len(s) > 32 || s[0] != '@' || s[1] < 'a' || s[1] > 'z' {
		return false
	}
	for _, c := range s[2:] {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// registeredCeiling is the ceiling Register gave e; false when it did not.
func registeredCeiling(e Environment) (Grant, bool) {
	g, ok := registered.Load(e)
	if !ok {
		return Deny, false
	}
	return g.(Grant), true
}

// Registered lists the environments Register added, sorted by name: what a
// message naming the valid environments shows beside the built-in ones.
func Registered() []Environment {
	var out []Environment
	registered.Range(func(k, _ any) bool {
		out = append(out, k.(Environment))
		return true
	})
	slices.Sort(out)
	return out
}

// ErrUnknownEnvironment is the class of ParseEnvironment's error.
var ErrUnknownEnvironment = errdefs.ErrInvalidArgument.WithMessage("unknown environment")

// ParseEnvironment reads "@shell", "@wasm", "@docker" or a registered
// environment. The leading "@" may be left out. Anything else is an error
// of class ErrUnknownEnvironment.
func ParseEnvironment(s string) (Environment, error) {
	e := Environment("@" + strings.TrimPrefix(s, "@"))
	if e.Valid() {
		return e, nil
	}
	reg := "none registered"
	for i, r := range Registered() {
		if i == 0 {
			reg = "registered: " + string(r)
		} else {
			reg += ", " + string(r)
		}
	}
	return "", fmt.Errorf("environment %q: want one of @shell, @wasm, @docker or one a Go program registered (%s): %w", s, reg, ErrUnknownEnvironment)
}

// Valid reports whether e is one of Environments or registered.
func (e Environment) Valid() bool {
	if e.Builtin() {
		return true
	}
	_, ok := registeredCeiling(e)
	return ok
}

// Builtin reports whether e is one of the environments ccrun builds in
// (Environments), not one a Go program registered.
func (e Environment) Builtin() bool { return e == Shell || e == Wasm || e == Docker }

// Sandboxed reports whether e confines the tool's code (@wasm, @docker).
// A registered environment is not: ccrun cannot tell that it confines.
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
// AlwaysThisSession for @shell, AlwaysThisProject for @wasm and @docker,
// what Register said for a registered environment. An invalid environment
// gets Once: what ccrun cannot place, it trusts least.
func Of(e Environment) Grant {
	switch e {
	case Wasm, Docker:
		return AlwaysThisProject
	case Shell:
		return AlwaysThisSession
	}
	if g, ok := registeredCeiling(e); ok {
		return g
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

// Error says which key went past its environment's ceiling, and how far.
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
