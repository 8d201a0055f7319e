package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/runtimehook"
	"github.com/ccrun/ccrun/permission/keys"
)

// allowlistCommand is `ccrun allowlist` and its commands. Each, as gh
// builds one, parses its command line into its options and hands them to
// its run function (runAllowlistAdd …), which needs nothing of cobra.
func (a *app) allowlistCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "allowlist",
		Short: "List, add, remove and lint grants (session and project allowlists)",
	}
	c.AddCommand(a.allowlistListCommand(nil), a.allowlistAddCommand(nil), a.allowlistRemoveCommand(nil), a.allowlistLintCommand(nil))
	return c
}

// allowlistAddOptions are `ccrun allowlist add`'s argument and flag.
type allowlistAddOptions struct {
	pattern string // KEY
	scope   string // --scope: session or project
}

// allowlistAddCommand parses `allowlist add` into its options and calls
// runF with them (nil: runAllowlistAdd).
func (a *app) allowlistAddCommand(runF func(context.Context, *allowlistAddOptions) error) *cobra.Command {
	if runF == nil {
		runF = a.runAllowlistAdd
	}
	o := &allowlistAddOptions{}
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
			o.pattern = args[0]
			return runF(c.Context(), o)
		},
	}
	add.Flags().StringVar(&o.scope, "scope", "", "session or project (required)")
	_ = add.MarkFlagRequired("scope")
	return add
}

// runAllowlistAdd grants o.pattern for o.scope.
func (a *app) runAllowlistAdd(ctx context.Context, o *allowlistAddOptions) error {
	p, err := keys.ParsePattern(o.pattern)
	if err != nil {
		return usageError{err}
	}
	rt, err := a.adminRuntime()
	if err != nil {
		return err
	}
	defer rt.Close()
	var grant ceiling.Grant
	switch o.scope {
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
		return notValid("scope", o.scope, []string{"session", "project"}, "")
	}
	e, err := rt.Grant(ctx, p, grant)
	if v := (*ceiling.Violation)(nil); errors.As(err, &v) {
		// the ceiling is the Runtime's: an environment of backends.go
		// may reach the session, or only once
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
}

// removeScopeWhy says why allowlist remove takes --scope project alone.
const removeScopeWhy = "only the project's grants are removed one by one; end the session to drop its grants"

// allowlistRemoveOptions are `ccrun allowlist remove`'s argument and flag.
type allowlistRemoveOptions struct {
	key   string // KEY, as the project allowlist has it
	scope string // --scope: project, the only one
}

// allowlistRemoveCommand parses `allowlist remove` into its options and
// calls runF with them (nil: runAllowlistRemove).
func (a *app) allowlistRemoveCommand(runF func(context.Context, *allowlistRemoveOptions) error) *cobra.Command {
	if runF == nil {
		runF = a.runAllowlistRemove
	}
	o := &allowlistRemoveOptions{}
	remove := &cobra.Command{
		Use:   "remove KEY",
		Short: "Remove a grant from the project allowlist (or the session's with --scope session)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.key = args[0]
			return runF(c.Context(), o)
		},
	}
	remove.Flags().StringVar(&o.scope, "scope", "project", "project")
	remove.ValidArgsFunction = a.completeProjectKeys
	return remove
}

// runAllowlistRemove removes o.key from the project allowlist.
func (a *app) runAllowlistRemove(_ context.Context, o *allowlistRemoveOptions) error {
	if o.scope != "project" {
		return notValid("scope", o.scope, []string{"project"}, removeScopeWhy)
	}
	rt, err := a.adminRuntime()
	if err != nil {
		return err
	}
	defer rt.Close()
	ok, err := rt.Revoke(o.key)
	if err != nil {
		return err
	}
	if !ok {
		return usagef("%s is not in %s", o.key, rt.AllowlistFile())
	}
	fmt.Fprintf(a.io.out, "removed %s\n", o.key)
	return nil
}

// allowlistListOptions are `ccrun allowlist list`'s flag.
type allowlistListOptions struct {
	json bool // --json
}

// allowlistListCommand parses `allowlist list` into its options and calls
// runF with them (nil: runAllowlistList).
func (a *app) allowlistListCommand(runF func(context.Context, *allowlistListOptions) error) *cobra.Command {
	if runF == nil {
		runF = a.runAllowlistList
	}
	o := &allowlistListOptions{}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the project's and the session's grants",
		Args:  cobra.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return runF(c.Context(), o) },
	}
	list.Flags().BoolVar(&o.json, "json", false, "print the grants as JSON")
	return list
}

// runAllowlistList prints the project's grants and the session's.
func (a *app) runAllowlistList(_ context.Context, o *allowlistListOptions) error {
	rt, err := a.adminRuntime()
	if err != nil {
		return err
	}
	defer rt.Close()
	var r allowlistReport
	al, _ := runtimehook.Lint(rt) // the problems are shown with the entries
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
	if o.json {
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
}

// allowlistLintOptions are `ccrun allowlist lint`'s: none.
type allowlistLintOptions struct{}

// allowlistLintCommand parses `allowlist lint` and calls runF (nil:
// runAllowlistLint).
func (a *app) allowlistLintCommand(runF func(context.Context, *allowlistLintOptions) error) *cobra.Command {
	if runF == nil {
		runF = a.runAllowlistLint
	}
	o := &allowlistLintOptions{}
	return &cobra.Command{
		Use:   "lint",
		Short: "Check the project allowlist and the settings' rules: exits non-zero on a ceiling violation, an unknown key form or a rule that matches no command",
		Args:  cobra.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return runF(c.Context(), o) },
	}
}

// runAllowlistLint reports the project allowlist's problems and the
// settings' rules that match no command: a configuration error if any.
func (a *app) runAllowlistLint(context.Context, *allowlistLintOptions) error {
	rt, err := a.adminRuntime()
	if err != nil {
		return err
	}
	defer rt.Close()
	al, err := runtimehook.Lint(rt)
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
}
