package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/spf13/cobra"
)

// liveSession opens the session named by $CCRUN_SESSION. One that expired,
// ended or does not exist is reported once, on stderr, and ccrun goes on
// without a session (nil): read-only commands still run, grants are asked.
// An id that is not a session id, or storage someone else could touch, is
// an error.
func (a *app) liveSession() (*allowlist.SessionAllowlist, error) {
	id := os.Getenv("CCRUN_SESSION")
	s, err := openSession()
	if err != nil && errors.Is(err, allowlist.ErrSessionNotFound) && validID(id) {
		if !a.noted {
			a.noted = true
			fmt.Fprintf(a.io.err, "ccrun: note: %s; going on without a session: its grants no longer count (start a new one: eval \"$(ccrun session start)\", or unset CCRUN_SESSION)\n", sessionGone(id, err))
		}
		return nil, nil
	}
	if err != nil {
		return nil, usageError{err}
	}
	return s, nil
}

// sessionGone says in a few words why session id cannot be opened.
func sessionGone(id string, err error) string {
	var ue usageError
	if errors.As(err, &ue) {
		err = ue.err
	}
	return fmt.Sprintf("the session %s has ended or expired (%v)", id, errors.Unwrap(err))
}

// validID reports whether id has the form of a session id (32 lowercase
// hex digits), as opposed to a mistake or a hostile value.
func validID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func (a *app) sessionCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "session",
		Short: "Start, end and show a session: grants that later exec calls share",
		Long: `A session keeps "this session" grants across ccrun processes (an agent calls ccrun exec
many times). Its grants live in a file only you can read, under your runtime directory;
it ends on request or when its lifetime runs out. A session that ran out is reported once
and ccrun goes on without it: grants are asked again.`,
	}
	c.AddCommand(a.sessionStartCommand(nil), a.sessionEndCommand(nil), a.sessionStatusCommand(nil))
	return c
}

// sessionStartOptions are `ccrun session start`'s flag.
type sessionStartOptions struct {
	lifetime time.Duration // --lifetime
}

// sessionStartCommand parses `session start` into its options and calls
// runF with them (nil: runSessionStart).
func (a *app) sessionStartCommand(runF func(context.Context, *sessionStartOptions) error) *cobra.Command {
	if runF == nil {
		runF = a.runSessionStart
	}
	o := &sessionStartOptions{}
	start := &cobra.Command{
		Use:     "start",
		Short:   "Start a session and print the line to export",
		Example: `  eval "$(ccrun session start)"`,
		Args:    cobra.NoArgs,
		RunE:    func(c *cobra.Command, _ []string) error { return runF(c.Context(), o) },
	}
	start.Flags().DurationVar(&o.lifetime, "lifetime", allowlist.DefaultSessionLifetime, "how long the session lasts")
	return start
}

// runSessionStart starts a session and prints the line that exports it.
func (a *app) runSessionStart(_ context.Context, o *sessionStartOptions) error {
	if o.lifetime <= 0 {
		return usagef("--lifetime %s: must be positive", o.lifetime)
	}
	s, err := allowlist.StartSession(sessionDir(), o.lifetime)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.io.out, "export CCRUN_SESSION=%s\n", s.ID())
	if isTerminal(a.io.out) {
		// Printed to a person, not read by eval: the session
		// does not reach this shell, and lasts its lifetime.
		fmt.Fprintf(a.io.err, "ccrun: session %s started (until %s), but this shell does not have it: start one with eval \"$(ccrun session start)\"\n"+
			"ccrun: end this one now with: CCRUN_SESSION=%s ccrun session end\n", s.ID(), s.Expires().Format("2006-01-02 15:04"), s.ID())
	}
	return nil
}

// sessionEndOptions are `ccrun session end`'s: none (the session is
// $CCRUN_SESSION's).
type sessionEndOptions struct{}

// sessionEndCommand parses `session end` and calls runF (nil:
// runSessionEnd).
func (a *app) sessionEndCommand(runF func(context.Context, *sessionEndOptions) error) *cobra.Command {
	if runF == nil {
		runF = a.runSessionEnd
	}
	o := &sessionEndOptions{}
	return &cobra.Command{
		Use:     "end",
		Short:   "End the session named by $CCRUN_SESSION, dropping its grants, and print the line to eval",
		Example: `  eval "$(ccrun session end)"`,
		Args:    cobra.NoArgs,
		RunE:    func(c *cobra.Command, _ []string) error { return runF(c.Context(), o) },
	}
}

// runSessionEnd ends the session of $CCRUN_SESSION and prints the line
// that unsets it.
func (a *app) runSessionEnd(context.Context, *sessionEndOptions) error {
	id := os.Getenv("CCRUN_SESSION")
	if id == "" {
		return usagef("no session: CCRUN_SESSION is not set")
	}
	s, err := openSession()
	if err != nil && errors.Is(err, allowlist.ErrSessionNotFound) && validID(id) {
		fmt.Fprintf(a.io.err, "ccrun: %s: nothing to end\n", sessionGone(id, err))
		fmt.Fprintln(a.io.out, "unset CCRUN_SESSION")
		return nil
	}
	if err != nil {
		return usageError{err}
	}
	if err := s.End(); err != nil {
		return err
	}
	// stdout is shell code only: eval "$(ccrun session end)".
	fmt.Fprintf(a.io.err, "ccrun: ended session %s\n", s.ID())
	fmt.Fprintln(a.io.out, "unset CCRUN_SESSION")
	if isTerminal(a.io.out) {
		fmt.Fprintln(a.io.err, `ccrun: this shell still has CCRUN_SESSION (ended now): unset CCRUN_SESSION, or end a session with eval "$(ccrun session end)"`)
	}
	return nil
}

// sessionStatusOptions are `ccrun session status`'s flag.
type sessionStatusOptions struct {
	json bool // --json
}

// sessionStatusCommand parses `session status` into its options and calls
// runF with them (nil: runSessionStatus).
func (a *app) sessionStatusCommand(runF func(context.Context, *sessionStatusOptions) error) *cobra.Command {
	if runF == nil {
		runF = a.runSessionStatus
	}
	o := &sessionStatusOptions{}
	status := &cobra.Command{
		Use:   "status",
		Short: "Show the session named by $CCRUN_SESSION and its grants",
		Args:  cobra.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return runF(c.Context(), o) },
	}
	status.Flags().BoolVar(&o.json, "json", false, "print the session as JSON")
	return status
}

// runSessionStatus prints the session of $CCRUN_SESSION and its grants.
func (a *app) runSessionStatus(_ context.Context, o *sessionStatusOptions) error {
	r, err := a.sessionStatus()
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(a.io.out, r)
	}
	switch {
	case r.ID == "":
		fmt.Fprintln(a.io.out, "no session (CCRUN_SESSION is not set)")
	case !r.Active:
		fmt.Fprintf(a.io.out, "%s: its grants no longer count (start a new one: eval \"$(ccrun session start)\", or unset CCRUN_SESSION)\n", r.Reason)
	default:
		fmt.Fprintf(a.io.out, "session %s, ends %s, %s\n", r.ID, r.Expires, plural(len(r.Entries), "grant", "grants"))
		for _, e := range r.Entries {
			fmt.Fprintf(a.io.out, "  %s → %s%s\n", e.Key, e.Grant, digestNote(e.Digest))
		}
	}
	return nil
}

// sessionStatus reports the session named by $CCRUN_SESSION (an empty ID
// when it is not set).
func (a *app) sessionStatus() (*sessionReport, error) {
	id := os.Getenv("CCRUN_SESSION")
	r := &sessionReport{ID: id, Entries: []entryReport{}}
	if id == "" {
		return r, nil
	}
	s, err := openSession()
	if err != nil && errors.Is(err, allowlist.ErrSessionNotFound) && validID(id) {
		r.Reason = sessionGone(id, err)
		return r, nil
	}
	if err != nil {
		return nil, usageError{err}
	}
	r.Active = true
	r.Expires = s.Expires().UTC().Format(time.RFC3339)
	for _, e := range s.Entries() {
		r.Entries = append(r.Entries, entryOf(e))
	}
	return r, nil
}

func digestNote(d string) string {
	if d == "" {
		return ""
	}
	return " @" + d
}
