package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
)

func (a *app) allowlistCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "allowlist",
		Short: "List, add, remove and lint grants (session and project allowlists)",
	}
	var scope string
	add := &cobra.Command{
		Use:   "add KEY --scope session|project",
		Short: "Grant a key pattern for the session or the project",
		Long: `Grant a key pattern. --scope project writes it to ccrun.json (atomically, under a lock);
a @shell key (run_command:…, or a @shell capability) is refused there by the ceiling.
A capability grant is bound to the capability's current digest: if its files change, it
is asked again. --scope session needs a session (eval "$(ccrun session start)").`,
		Example: `  ccrun allowlist add capability:fmt-json --scope project
  ccrun allowlist add 'run_command:git:*' --scope session`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			p, err := permission.ParsePattern(args[0])
			if err != nil {
				return usageError{err}
			}
			rt, err := a.adminRuntime()
			if err != nil {
				return err
			}
			defer rt.Close()
			if by, locked := rt.LoosenLock(); locked {
				return fmt.Errorf("allowlist add refused: %s locks the flags that loosen the gate (\"flags\": \"no-loosening\"); a person grants at the prompt, or edits the settings: %w", by, permission.ErrPermissionDenied)
			}
			env, capa, err := rt.EnvironmentOf(p)
			if err != nil {
				return usageError{err}
			}
			e := permission.Entry{Pattern: p, Expiry: permission.Never}
			if capa != nil {
				e.Digest = capa.Digest
			}
			switch scope {
			case "project":
				e.Grant = ceiling.AlwaysThisProject
				if err := ceiling.Check(env, p.String(), e.Grant); err != nil {
					return usageError{fmt.Errorf("%w; use --scope session", err)}
				}
				if err := rt.Gate().Project.Add(e); err != nil {
					return err
				}
			case "session":
				e.Grant = ceiling.AlwaysThisSession
				s, err := openSession()
				if err != nil {
					return usageError{err}
				}
				if s == nil {
					return usagef("no session: start one with eval \"$(ccrun session start)\"")
				}
				if err := s.Add(e); err != nil {
					return err
				}
			default:
				return usagef("--scope %q: want session or project", scope)
			}
			fmt.Fprintf(a.io.out, "added %s\n", e)
			return nil
		},
	}
	add.Flags().StringVar(&scope, "scope", "", "session or project (required)")
	_ = add.MarkFlagRequired("scope")

	var rmScope string
	remove := &cobra.Command{
		Use:   "remove KEY",
		Short: "Remove a grant from the project allowlist (or the session's with --scope session)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if rmScope != "project" {
				return usagef("--scope %q: only project grants can be removed one by one; end the session to drop its grants", rmScope)
			}
			rt, err := a.adminRuntime()
			if err != nil {
				return err
			}
			defer rt.Close()
			ok, err := rt.Gate().Project.Remove(args[0])
			if err != nil {
				return err
			}
			if !ok {
				return usagef("%s is not in %s", args[0], rt.Gate().Project.Path())
			}
			fmt.Fprintf(a.io.out, "removed %s\n", args[0])
			return nil
		},
	}
	remove.Flags().StringVar(&rmScope, "scope", "project", "project")
	remove.ValidArgsFunction = a.completeProjectKeys

	var listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the project's and the session's grants",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			rt, err := a.adminRuntime()
			if err != nil {
				return err
			}
			defer rt.Close()
			var r allowlistReport
			r.Project.Path = rt.Gate().Project.Path()
			r.Project.Entries = []entryReport{}
			for _, e := range rt.Gate().Project.Entries() {
				er := entryOf(e)
				warn, err := lintEntry(rt, e)
				if err != nil {
					er.Problem = err.Error()
				}
				er.Warning = warn
				r.Project.Entries = append(r.Project.Entries, er)
			}
			if os.Getenv("CCRUN_SESSION") != "" {
				if r.Session, err = a.sessionStatus(); err != nil {
					return err
				}
			}
			if listJSON {
				return writeJSON(a.io.out, r)
			}
			fmt.Fprintf(a.io.out, "project (%s): %s\n", r.Project.Path, plural(len(r.Project.Entries), "entry", "entries"))
			for _, e := range r.Project.Entries {
				note := ""
				switch {
				case e.Problem != "":
					note = "   ! " + e.Problem
				case e.Warning != "":
					note = "   (" + e.Warning + ")"
				}
				fmt.Fprintf(a.io.out, "  %s → %s%s%s\n", e.Key, e.Grant, digestNote(e.Digest), note)
			}
			switch s := r.Session; {
			case s == nil:
			case !s.Active:
				fmt.Fprintf(a.io.out, "%s\n", s.Reason)
			default:
				fmt.Fprintf(a.io.out, "session %s: %s\n", s.ID, plural(len(s.Entries), "entry", "entries"))
				for _, e := range s.Entries {
					fmt.Fprintf(a.io.out, "  %s → %s%s\n", e.Key, e.Grant, digestNote(e.Digest))
				}
			}
			return nil
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print the grants as JSON")

	lint := &cobra.Command{
		Use:   "lint",
		Short: "Check the project allowlist and the settings' rules: exits non-zero on a ceiling violation, an unknown key form or a rule that matches no command",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			rt, err := a.adminRuntime()
			if err != nil {
				return err
			}
			defer rt.Close()
			var bad []error
			for _, e := range rt.Gate().Project.Entries() {
				if warn, err := lintEntry(rt, e); err != nil {
					bad = append(bad, err)
					fmt.Fprintf(a.io.err, "%s: %s: %v\n", rt.Gate().Project.Path(), e.Pattern, err)
				} else if warn != "" {
					fmt.Fprintf(a.io.err, "%s: %s: warning: %s\n", rt.Gate().Project.Path(), e.Pattern, warn)
				}
			}
			if pol := rt.Gate().Policy; pol != nil {
				bad = append(bad, lintRules(a, pol)...)
			}
			if len(bad) > 0 {
				return &lintError{n: len(bad), errs: bad}
			}
			fmt.Fprintf(a.io.out, "%s: %s, no problems\n", rt.Gate().Project.Path(), plural(len(rt.Gate().Project.Entries()), "entry", "entries"))
			return nil
		},
	}
	c.AddCommand(list, add, remove, lint)
	return c
}

// lintEntry checks one project entry: an unknown key form or a grant past
// the ceiling is an error; a capability that changed since approval is a
// warning.
func lintEntry(rt *ccrun.Runtime, e permission.Entry) (warning string, err error) {
	env, capa, err := rt.EnvironmentOf(e.Pattern)
	if err != nil {
		return "", err
	}
	if err := ceiling.Check(env, e.Pattern.String(), e.Grant); err != nil {
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

// lintRules checks the allow, ask and deny rules of every settings layer
// (permission.CheckPattern: an exact run_command rule whose text is not a
// compound command that parses matches nothing), writes each problem to
// stderr and returns them.
func lintRules(a *app, pol *permission.Policy) []error {
	allow, ask, deny := pol.Rules()
	var bad []error
	for _, l := range []struct {
		kind  string
		rules []permission.Rule
	}{{"allow", allow}, {"ask", ask}, {"deny", deny}} {
		for _, r := range l.rules {
			if err := permission.CheckPattern(r.Pattern); err != nil {
				bad = append(bad, err)
				fmt.Fprintf(a.io.err, "%s: %s rule %v\n", r.Source, l.kind, err)
			}
		}
	}
	return bad
}

// lintError is a failed lint: a configuration error.
type lintError struct {
	n    int
	errs []error
}

func (e *lintError) Error() string {
	return "allowlist lint: " + plural(e.n, "problem", "problems")
}

func (e *lintError) Unwrap() []error {
	return append([]error{permission.ErrInvalidConfig}, e.errs...)
}
