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
		if got, err := ceiling.ParseEnvironment(in); err != nil || got != want {
			t.Errorf("ParseEnvironment(%q) = %q, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "@", "@python", "shell "} {
		if _, err := ceiling.ParseEnvironment(bad); !errors.Is(err, ceiling.ErrUnknownEnvironment) {
			t.Errorf("ParseEnvironment(%q): %v, want ErrUnknownEnvironment", bad, err)
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

// TestRegister: a registered environment is valid, with the ceiling it
// registered; it cannot claim a sandbox's ceiling, take a built-in's name,
// or change its ceiling later.
func TestRegister(t *testing.T) {
	t.Parallel()
	const env ceiling.Environment = "@registered-test"
	if env.Valid() || ceiling.Of(env) != ceiling.Once {
		t.Fatalf("%s before Register: valid %v, ceiling %s", env, env.Valid(), ceiling.Of(env))
	}
	if err := ceiling.Register(env, ceiling.AlwaysThisSession); err != nil {
		t.Fatal(err)
	}
	if err := ceiling.Register(env, ceiling.AlwaysThisSession); err != nil {
		t.Errorf("registered again with the same ceiling: %v", err)
	}
	if got, err := ceiling.ParseEnvironment("registered-test"); err != nil || got != env {
		t.Errorf("ParseEnvironment: %q %v", got, err)
	}
	if _, err := ceiling.ParseEnvironment("@not-registered"); err == nil || !strings.Contains(err.Error(), string(env)) {
		t.Errorf("ParseEnvironment of an unknown environment: %v; want the registered ones named", err)
	}
	if !env.Valid() || env.Builtin() || env.Sandboxed() || ceiling.Of(env) != ceiling.AlwaysThisSession {
		t.Errorf("%s: valid %v, sandboxed %v, ceiling %s", env, env.Valid(), env.Sandboxed(), ceiling.Of(env))
	}
	if got := ceiling.Registered(); !slices.Contains(got, env) || slices.ContainsFunc(got, ceiling.Environment.Builtin) || !slices.IsSorted(got) {
		t.Errorf("Registered() = %q: want %s among them, sorted, and no built-in", got, env)
	}
	if err := ceiling.Check(env, "k:v", ceiling.AlwaysThisProject); !errors.Is(err, ceiling.ErrViolation) {
		t.Errorf("AlwaysThisProject for %s: %v, want a violation", env, err)
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
		if err := ceiling.Register(bad.env, bad.max); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("Register(%q, %s): %v, want an invalid argument", bad.env, bad.max, err)
		}
	}
	if ceiling.Environment("@sandbox-claim").Valid() || ceiling.Of(ceiling.Docker) != ceiling.AlwaysThisProject {
		t.Error("a refused registration changed something")
	}
}
