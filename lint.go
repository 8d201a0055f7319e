package ccrun

import (
	"fmt"

	"github.com/ccrun/ccrun/internal/runtimehook"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/ccrun/ccrun/permission/keys"
)

func init() {
	runtimehook.Lint = func(rt any) (*runtimehook.Allowlist, error) { return rt.(*Runtime).lint() }
	runtimehook.ReloadAllowlist = func(rt any) error { return rt.(*Runtime).reloadAllowlist() }
}

// reloadAllowlist is runtimehook.ReloadAllowlist: it reads the project
// allowlist again.
func (r *Runtime) reloadAllowlist() error {
	if r.gate.Project == nil {
		return nil
	}
	return r.gate.Project.Reload()
}

// lint is runtimehook.Lint: what `ccrun allowlist lint` reports of the
// project allowlist and the settings' rules.
func (r *Runtime) lint() (*runtimehook.Allowlist, error) {
	a := &runtimehook.Allowlist{File: r.AllowlistFile(), Entries: []runtimehook.AllowlistEntry{}}
	if r.gate.Project != nil {
		for _, e := range r.gate.Project.Entries() {
			le := runtimehook.AllowlistEntry{Entry: e}
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
					a.Rules = append(a.Rules, runtimehook.RuleProblem{Kind: l.kind, Rule: rule, Problem: err})
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
