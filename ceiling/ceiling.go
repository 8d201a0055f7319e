// Package ceiling says how far a person may trust a tool, given where the
// tool runs. It is the smallest package of ccrun on purpose: an environment,
// a grant, the highest grant each environment may reach, and the error that
// says a grant went past it. Nothing else.
//
// The rule: a @shell tool runs with the user's own rights, so a grant for
// it never outlives the session; a @wasm or @docker tool is confined by its
// sandbox, so a project may trust it for good.
//
// The set of environments is open to a Go program that brings a backend of
// its own (ccrun.WithBackend): such an environment is trusted at most as far
// as the host, for the session, since ccrun cannot tell whether it confines
// anything. Which environments there are is a value, a Set, that each
// Runtime holds for itself: nothing here is global, and two Runtimes of one
// process never see each other's.
//
// Everything here is safe for concurrent use.
package ceiling

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/containerd/errdefs"
)

// Environment is where a tool's code runs.
type Environment string

// The environments ccrun builds in. Any other is one a Set holds (With).
const (
	Shell  Environment = "@shell"  // the host, through os/exec
	Wasm   Environment = "@wasm"   // wazero, WASI preview 1
	Docker Environment = "@docker" // a container, through the Docker Engine API
)

// Environments lists the built-in environments, in a stable order.
var Environments = []Environment{Shell, Wasm, Docker}

// Valid reports whether e has the form of an environment's name: "@" and
// a lowercase letter, then lowercase letters, digits and "-", at most 32
// in all (the built-in ones have it). It says nothing of whether any
// Runtime runs e: that is its Set's to say (Set.Has).
func (e Environment) Valid() bool {
	s := string(e)
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

// Builtin reports whether e is one of the environments ccrun builds in
// (Environments), not one a Go program added.
func (e Environment) Builtin() bool { return e == Shell || e == Wasm || e == Docker }

// Sandboxed reports whether e confines the tool's code (@wasm, @docker).
// An added environment is not: ccrun cannot tell that it confines.
func (e Environment) Sandboxed() bool { return e == Wasm || e == Docker }

// Set is the environments a Runtime runs, each with its ceiling: the
// built-in ones, always, and those added for the backends a Go program
// brings (With, from ccrun.WithBackend). A Set is a value: With returns a
// new Set and leaves the old one as it was, so a Set never changes once
// made, is safe for concurrent use, and is never shared by accident. The
// zero Set holds the built-in environments only.
type Set struct{ added map[Environment]Grant }

// With returns s with environment e added, whose tools may be granted at
// most max. e is a Valid name and not a built-in one. max is Once or
// AlwaysThisSession: AlwaysThisProject belongs to the sandboxes whose
// confinement ccrun builds and tests (@wasm, @docker), and a backend that
// runs elsewhere reaches it only as an engine of one of them, not by
// saying it confines. Adding e again with the same ceiling changes
// nothing; with another, it is an error (a ceiling does not change while
// grants made under it exist). Errors are of class
// errdefs.ErrInvalidArgument.
func (s Set) With(e Environment, max Grant) (Set, error) {
	if e.Builtin() {
		return s, fmt.Errorf("environment %s: built in, with its own ceiling: %w", e, errdefs.ErrInvalidArgument)
	}
	if !e.Valid() {
		return s, fmt.Errorf("environment %q: want @ and a lowercase letter, then lowercase letters, digits and -, at most 32: %w", e, errdefs.ErrInvalidArgument)
	}
	if max != Once && max != AlwaysThisSession {
		return s, fmt.Errorf("environment %s: ceiling %s: want Once or AlwaysThisSession (only @wasm and @docker reach AlwaysThisProject; register an engine of one of them instead): %w", e, max, errdefs.ErrInvalidArgument)
	}
	if prev, ok := s.added[e]; ok {
		if prev != max {
			return s, fmt.Errorf("environment %s: added already with ceiling %s, not %s: %w", e, prev, max, errdefs.ErrInvalidArgument)
		}
		return s, nil
	}
	added := maps.Clone(s.added)
	if added == nil {
		added = map[Environment]Grant{}
	}
	added[e] = max
	return Set{added: added}, nil
}

// Has reports whether e is in s: a built-in environment, or one added.
func (s Set) Has(e Environment) bool {
	if e.Builtin() {
		return true
	}
	_, ok := s.added[e]
	return ok
}

// List lists the environments of s: the built-in ones in the order of
// Environments, then the added ones by name.
func (s Set) List() []Environment {
	added := slices.Sorted(maps.Keys(s.added))
	return append(slices.Clone(Environments), added...)
}

// String lists the environments of s for a message: "@shell, @wasm,
// @docker, @vm".
func (s Set) String() string {
	names := make([]string, 0, len(Environments)+len(s.added))
	for _, e := range s.List() {
		names = append(names, string(e))
	}
	return strings.Join(names, ", ")
}

// ErrUnknownEnvironment is the class of the error that says an environment
// is not one a Set holds (Require, Parse).
var ErrUnknownEnvironment = errdefs.ErrInvalidArgument.WithMessage("unknown environment")

// Require returns nil when s has e, and otherwise an error of class
// ErrUnknownEnvironment that names e and lists the environments s has.
func (s Set) Require(e Environment) error {
	if s.Has(e) {
		return nil
	}
	return fmt.Errorf("environment %q: not one this runtime runs (%s; a Go program adds one with ccrun.WithBackend): %w",
		string(e), s, ErrUnknownEnvironment)
}

// Parse reads the name of an environment of s; the leading "@" may be
// left out. Anything else is Require's error.
func (s Set) Parse(name string) (Environment, error) {
	e := Environment("@" + strings.TrimPrefix(name, "@"))
	if s.Has(e) {
		return e, nil
	}
	if name == "" || !e.Valid() {
		e = Environment(name) // named as given
	}
	return "", s.Require(e)
}

// Of returns the highest grant a tool in environment e may be given:
// AlwaysThisSession for @shell, AlwaysThisProject for @wasm and @docker,
// what With said for an added environment. An environment not in s gets
// Once: what ccrun cannot place, it trusts least.
func (s Set) Of(e Environment) Grant {
	switch e {
	case Wasm, Docker:
		return AlwaysThisProject
	case Shell:
		return AlwaysThisSession
	}
	if g, ok := s.added[e]; ok {
		return g
	}
	return Once
}

// Check returns nil when g is within e's ceiling in s (Of), and a
// *Violation otherwise. key names what the grant was for; it is only used
// in the error.
func (s Set) Check(e Environment, key string, g Grant) error {
	if c := s.Of(e); g > c {
		return &Violation{Environment: e, Key: key, Grant: g, Ceiling: c}
	}
	return nil
}

// Of is the zero Set's Of: the ceiling of a built-in environment, and
// Once for any other. An added environment's is its Set's.
func Of(e Environment) Grant { return Set{}.Of(e) }

// Check is the zero Set's Check: the ceiling of a built-in environment,
// and Once for any other. An added environment's is its Set's.
func Check(e Environment, key string, g Grant) error { return Set{}.Check(e, key, g) }

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

// ErrViolation is the class of every *Violation: errors.Is(err, ErrViolation).
// It is of class errdefs.ErrPermissionDenied too: a grant past the ceiling
// is refused.
var ErrViolation = errdefs.ErrPermissionDenied.WithMessage("ceiling violation")

// Violation says a grant went past its environment's ceiling: a person chose
// AlwaysThisProject for a @shell key, or ccrun.json holds a @shell key.
type Violation struct {
	Environment Environment // the key's environment
	Key         string      // the key granted, as written
	Grant       Grant       // what was asked for or found
	Ceiling     Grant       // the most the environment allows
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
