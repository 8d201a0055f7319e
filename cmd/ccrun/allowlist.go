package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission/keys"
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
a @shell key (run_command:…, or a @shell capability) is refused there by the ceiling, and so is
a key of an environment a Go program added (its ceiling is the session at most).
A capability grant is bound to the capability's current digest: if its files change, it
is asked again. --scope session needs a session (eval "$(ccrun session start)").`,
		Example: `  ccrun allowlist add capability:fmt-json --scope project
  ccrun allowlist add 'run_command:git:*' --scope session`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			p, err := keys.ParsePattern(args[0])
			if err != nil {
				return usageError{err}
			}
			rt, err := a.adminRuntime()
			if err != nil {
				return err
			}
			defer rt.Close()
			var grant ceiling.Grant
			switch scope {
			case "project":
				grant = ceiling.AlwaysThisProject
			case "session":
				grant = ceiling.AlwaysThisSession
				s, err := openSession()
				if err != nil {
					return usageError{err}
				}
				if s == nil {
					return usagef("no session: start one with eval \"$(ccrun session start)\"")
				}
			default:
				return usagef("--scope %q: want session or project", scope)
			}
			e, err := rt.Grant(c.Context(), p, grant)
			if v := (*ceiling.Violation)(nil); errors.As(err, &v) {
				// the ceiling is the Runtime's: an environment of
				// backends.go may reach the session, or only once
				if v.Ceiling >= ceiling.AlwaysThisSession {
					return usageError{fmt.Errorf("%w; use --scope session", err)}
				}
				return usageError{fmt.Errorf("%w; it is allowed once at a time, when asked (--approve once)", err)}
			}
			if err != nil {
				return err
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
			ok, err := rt.Revoke(args[0])
			if err != nil {
				return err
			}
			if !ok {
				return usagef("%s is not in %s", args[0], rt.AllowlistFile())
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
			al, _ := rt.Lint() // the problems are shown with the entries
			r.Project.Path = al.File
			r.Project.Entries = []entryReport{}
			for _, e := range al.Entries {
				er := entryOf(e.Entry)
				if e.Problem != nil {
					er.Problem = e.Problem.Error()
				}
				er.Warning = e.Warning
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
			al, err := rt.Lint()
			for _, e := range al.Entries {
				if e.Problem != nil {
					fmt.Fprintf(a.io.err, "%s: %s: %v\n", al.File, e.Pattern, e.Problem)
				} else if e.Warning != "" {
					fmt.Fprintf(a.io.err, "%s: %s: warning: %s\n", al.File, e.Pattern, e.Warning)
				}
			}
			for _, r := range al.Rules {
				fmt.Fprintf(a.io.err, "%s: %s rule %v\n", r.Source, r.Kind, r.Problem)
			}
			if err != nil {
				return fmt.Errorf("allowlist lint: %s: %w", plural(al.Problems(), "problem", "problems"), ccrun.ErrInvalidConfig)
			}
			fmt.Fprintf(a.io.out, "%s: %s, no problems\n", al.File, plural(len(al.Entries), "entry", "entries"))
			return nil
		},
	}
	c.AddCommand(list, add, remove, lint)
	return c
}
