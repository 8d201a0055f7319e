package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/runtime/docker"
)

func (a *app) gcCommand() *cobra.Command {
	var pool bool
	c := &cobra.Command{
		Use:   "gc",
		Short: "Remove what ccrun left behind: orphaned helpers, expired session files, containers of a killed ccrun",
		Long: `End your helper processes of ccrun that lost their ccrun (a @wasm worker whose ccrun died,
a docker refiller past its time), remove the files of sessions whose lifetime ran out, then every container labelled by
ccrun whose owning process is gone (a ccrun killed mid-run). With --pool, also remove the idle
warm-pool containers.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ended, err := endOrphans()
			for _, o := range ended {
				fmt.Fprintf(a.io.out, "ended orphaned %s %d\n", o.what, o.pid)
			}
			if err != nil {
				fmt.Fprintf(a.io.err, "ccrun: note: %v\n", err)
			}
			ids, err := permission.PruneSessions(sessionDir())
			for _, id := range ids {
				fmt.Fprintf(a.io.out, "removed expired session %s\n", id)
			}
			if err != nil {
				fmt.Fprintf(a.io.err, "ccrun: note: %v\n", err)
			}
			e, err := docker.New(c.Context())
			if err != nil {
				return err
			}
			defer e.Close()
			removed, err := e.GC(c.Context())
			if pool && err == nil {
				var more []string
				more, err = e.DrainPool(c.Context())
				removed = append(removed, more...)
			}
			for _, id := range removed {
				fmt.Fprintf(a.io.out, "removed %s\n", id)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.io.out, "%d containers removed\n", len(removed))
			return nil
		},
	}
	c.Flags().BoolVar(&pool, "pool", false, "also remove idle warm-pool containers")
	return c
}
