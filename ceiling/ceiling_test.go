package ceiling_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun/ceiling"
)

func TestOf(t *testing.T) {
	t.Parallel()
	for env, want := range map[ceiling.Environment]ceiling.Grant{
		ceiling.Shell:  ceiling.AlwaysThisSession,
		ceiling.Wasm:   ceiling.AlwaysThisProject,
		ceiling.Docker: ceiling.AlwaysThisProject,
		"@python":      ceiling.Once, // unknown: trusted least
		"":             ceiling.Once,
	} {
		if got := ceiling.Of(env); got != want {
			t.Errorf("Of(%q) = %s, want %s", env, got, want)
		}
		if builtin := env == ceiling.Shell || env.Sandboxed(); env.Builtin() != builtin {
			t.Errorf("%q.Builtin() = %v, want %v", env, env.Builtin(), builtin)
		}
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		env   ceiling.Environment
		grant ceiling.Grant
		ok    bool
	}{
		{ceiling.Shell, ceiling.Once, true},
		{ceiling.Shell, ceiling.AlwaysThisSession, true},
		{ceiling.Shell, ceiling.AlwaysThisProject, false},
		{ceiling.Wasm, ceiling.AlwaysThisProject, true},
		{ceiling.Docker, ceiling.AlwaysThisProject, true},
		{"@python", ceiling.AlwaysThisSession, false},
	}
	for _, c := range cases {
		err := ceiling.Check(c.env, "k:v", c.grant)
		if (err == nil) != c.ok {
			t.Errorf("Check(%s, %s) = %v, want ok=%v", c.env, c.grant, err, c.ok)
			continue
		}
		if err == nil {
			continue
		}
		var v *ceiling.Violation
		if !errors.As(err, &v) || !errors.Is(err, ceiling.ErrViolation) {
			t.Errorf("Check(%s, %s): %v is not a *Violation of class ErrViolation", c.env, c.grant, err)
		}
		if v.Grant != c.grant || v.Ceiling != ceiling.Of(c.env) || v.Key != "k:v" {
			t.Errorf("violation %+v", v)
		}
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]ceiling.Environment{"@shell": ceiling.Shell, "wasm": ceiling.Wasm, "@docker": ceiling.Docker} {
		if got, err := (ceiling.Set{}).Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %q, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "@", "@python", "shell ", "@Shell"} {
		_, err := (ceiling.Set{}).Parse(bad)
		if !errors.Is(err, ceiling.ErrUnknownEnvironment) || !strings.Contains(err.Error(), "@shell, @wasm, @docker") {
			t.Errorf("Parse(%q): %v, want ErrUnknownEnvironment listing the built-in environments", bad, err)
		}
	}
	for _, g := range []ceiling.Grant{ceiling.Deny, ceiling.Once, ceiling.AlwaysThisSession, ceiling.AlwaysThisProject} {
		if got, err := ceiling.ParseGrant(g.String()); err != nil || got != g {
			t.Errorf("ParseGrant(%s) = %s, %v", g, got, err)
		}
		b, err := json.Marshal(g)
		var back ceiling.Grant
		if err != nil || json.Unmarshal(b, &back) != nil || back != g {
			t.Errorf("%s does not round-trip through JSON: %s", g, b)
		}
	}
	if _, err := ceiling.ParseGrant("forever"); !errors.Is(err, ceiling.ErrUnknownGrant) {
		t.Errorf("ParseGrant(forever): %v", err)
	}
}

// TestValid: a name has the form of an environment's, or not; whether any
// Runtime runs it is not the name's to say.
func TestValid(t *testing.T) {
	t.Parallel()
	for _, ok := range []ceiling.Environment{ceiling.Shell, ceiling.Wasm, ceiling.Docker, "@vm", "@a", "@my-vm2", "@" + ceiling.Environment(strings.Repeat("x", 31))} {
		if !ok.Valid() {
			t.Errorf("%q.Valid() = false", ok)
		}
	}
	for _, bad := range []ceiling.Environment{"", "@", "vm", "@Vm", "@1vm", "@-vm", "@v m", "@v_m", "@vm\x00", "@" + ceiling.Environment(strings.Repeat("x", 32))} {
		if bad.Valid() {
			t.Errorf("%q.Valid() = true", bad)
		}
	}
}

// TestSet: an added environment is in its Set, with the ceiling it was
// added with, and in no other Set; it cannot claim a sandbox's ceiling,
// take a built-in's name, or change its ceiling later; adding returns a
// new Set and leaves the old one as it was.
func TestSet(t *testing.T) {
	t.Parallel()
	const env ceiling.Environment = "@added-test"
	var zero ceiling.Set
	if zero.Has(env) || zero.Of(env) != ceiling.Once || zero.Require(env) == nil {
		t.Fatalf("%s in the zero Set: has %v, ceiling %s", env, zero.Has(env), zero.Of(env))
	}
	s, err := zero.With(env, ceiling.AlwaysThisSession)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := s.With(env, ceiling.AlwaysThisSession); err != nil || !slices.Equal(again.List(), s.List()) {
		t.Errorf("added again with the same ceiling: %v, %v", again.List(), err)
	}
	if zero.Has(env) || len(zero.List()) != 3 {
		t.Errorf("With changed the Set it was called on: %v", zero.List())
	}
	if got, err := s.Parse("added-test"); err != nil || got != env {
		t.Errorf("Parse: %q %v", got, err)
	}
	if _, err := s.Parse("@not-added"); !errors.Is(err, ceiling.ErrUnknownEnvironment) || !strings.Contains(err.Error(), "@shell, @wasm, @docker, "+string(env)) {
		t.Errorf("Parse of an environment not in the Set: %v; want the Set's environments named", err)
	}
	if !s.Has(env) || env.Builtin() || env.Sandboxed() || s.Of(env) != ceiling.AlwaysThisSession || s.Require(env) != nil {
		t.Errorf("%s: has %v, sandboxed %v, ceiling %s", env, s.Has(env), env.Sandboxed(), s.Of(env))
	}
	if got, want := s.List(), []ceiling.Environment{ceiling.Shell, ceiling.Wasm, ceiling.Docker, env}; !slices.Equal(got, want) {
		t.Errorf("List() = %q, want %q", got, want)
	}
	if err := s.Check(env, "k:v", ceiling.AlwaysThisSession); err != nil {
		t.Errorf("AlwaysThisSession for %s: %v", env, err)
	}
	var v *ceiling.Violation
	if err := s.Check(env, "k:v", ceiling.AlwaysThisProject); !errors.As(err, &v) || v.Ceiling != ceiling.AlwaysThisSession {
		t.Errorf("AlwaysThisProject for %s: %v, want a violation of ceiling AlwaysThisSession", env, err)
	}
	// Another Set may hold the same name with another ceiling: the
	// ceilings are each Set's own.
	other, err := zero.With(env, ceiling.Once)
	if err != nil || other.Of(env) != ceiling.Once || s.Of(env) != ceiling.AlwaysThisSession {
		t.Errorf("two Sets of %s: %v, ceilings %s and %s", env, err, other.Of(env), s.Of(env))
	}
	if err := ceiling.Check(env, "k:v", ceiling.AlwaysThisSession); !errors.Is(err, ceiling.ErrViolation) {
		t.Errorf("the package's Check knows %s: %v", env, err)
	}
	for _, bad := range []struct {
		env ceiling.Environment
		max ceiling.Grant
	}{
		{env, ceiling.Once},                           // another ceiling
		{"@sandbox-claim", ceiling.AlwaysThisProject}, // a sandbox's ceiling
		{"@deny", ceiling.Deny},
		{ceiling.Docker, ceiling.AlwaysThisSession}, // a built-in's name
		{"nope", ceiling.Once},
		{"@Upper", ceiling.Once},
		{"@", ceiling.Once},
	} {
		got, err := s.With(bad.env, bad.max)
		if !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("With(%q, %s): %v, want an invalid argument", bad.env, bad.max, err)
		}
		if !slices.Equal(got.List(), s.List()) || got.Of(env) != ceiling.AlwaysThisSession {
			t.Errorf("a refused With(%q, %s) changed the Set: %v", bad.env, bad.max, got.List())
		}
	}
}
