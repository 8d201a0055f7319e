package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun/permission"
)

func (a *app) sessionCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "session",
		Short: "Start, end and show a session: grants that later exec calls share",
		Long: `A session keeps "this session" grants across ccrun processes (an agent calls ccrun exec
many times). Its grants live in a file only you can read, under your runtime directory;
it ends on request or when its lifetime runs out.`,
	}
	var lifetime time.Duration
	start := &cobra.Command{
		Use:     "start",
		Short:   "Start a session and print the line to export",
		Example: `  eval "$(ccrun session start)"`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if lifetime <= 0 {
				return usagef("--lifetime %s: must be positive", lifetime)
			}
			s, err := permission.StartSession(sessionDir(), lifetime)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.io.out, "export CCRUN_SESSION=%s\n", s.ID())
			return nil
		},
	}
	start.Flags().DurationVar(&lifetime, "lifetime", permission.DefaultSessionLifetime, "how long the session lasts")
	end := &cobra.Command{
		Use:   "end",
		Short: "End the session named by $CCRUN_SESSION, dropping its grants",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			s, err := openSession()
			if err != nil {
				return usageError{err}
			}
			if s == nil {
				return usagef("no session: CCRUN_SESSION is not set")
			}
			if err := s.End(); err != nil {
				return err
			}
			fmt.Fprintf(a.io.out, "ended session %s\nunset CCRUN_SESSION\n", s.ID())
			return nil
		},
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "Show the session named by $CCRUN_SESSION and its grants",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if os.Getenv("CCRUN_SESSION") == "" {
				fmt.Fprintln(a.io.out, "no session (CCRUN_SESSION is not set)")
				return nil
			}
			s, err := openSession()
			if err != nil {
				return usageError{err}
			}
			fmt.Fprintf(a.io.out, "session %s, ends %s\n", s.ID(), s.Expires().Local().Format(time.RFC3339))
			for _, e := range s.Entries() {
				fmt.Fprintf(a.io.out, "  %s\n", e)
			}
			return nil
		},
	}
	c.AddCommand(start, end, status)
	return c
}
