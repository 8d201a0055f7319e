//go:build !ccrunfront

package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/internal/housekeep"
	"github.com/ccrun/ccrun/permission/allowlist"
)

func (a *app) gcCommand() *cobra.Command {
	var pool, asJSON, dryRun bool
	var engine string // --engine kubernetes: the pods of the Kubernetes engine (kube.go)
	c := &cobra.Command{
		Use:   "gc",
		Short: "Remove what ccrun left behind: orphaned helpers, expired session files, containers of a killed ccrun",
		Long: `End your helper processes of ccrun that lost their ccrun (a @wasm worker whose ccrun died,
a docker refiller past its time), remove the files of sessions whose lifetime ran out, then every container labelled by
ccrun whose owning process is gone (a ccrun killed mid-run). With --pool, also remove the idle
warm-pool containers. With --dry-run, list what would be removed and remove nothing.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) (err error) {
			if dryRun {
				return a.gcDryRun(c.Context(), pool, engine, asJSON) // gcdry.go
			}
			r := gcReport{Processes: []string{}, Sessions: []string{}, Containers: []string{}, Errors: []string{}}
			say := func(format string, args ...any) { // a line for a person; --json prints the report instead
				if !asJSON {
					fmt.Fprintf(a.io.out, format, args...)
				}
			}
			note := func(err error) {
				r.Errors = append(r.Errors, err.Error())
				if !asJSON {
					fmt.Fprintf(a.io.err, "ccrun: note: %v\n", err)
				}
			}
			defer func() {
				if asJSON {
					if err != nil {
						r.Errors = append(r.Errors, err.Error())
					}
					if jerr := writeJSON(a.io.out, r); err == nil {
						err = jerr
					}
				}
			}()
			ended, err := endOrphans()
			for _, o := range ended {
				r.Processes = append(r.Processes, fmt.Sprintf("%s %d", o.what, o.pid))
				say("ended orphaned %s %d\n", o.what, o.pid)
			}
			if err != nil {
				note(err)
			}
			socks, err := housekeep.CollectWasmSockets() // of @wasm servers that were killed
			for _, s := range socks {
				say("removed stale wasm server socket %s\n", s)
			}
			if err != nil {
				note(err)
			}
			ids, err := allowlist.PruneSessions(sessionDir())
			for _, id := range ids {
				r.Sessions = append(r.Sessions, id)
				say("removed expired session %s\n", id)
			}
			if err != nil {
				note(err)
			}
			if pods, err := collectPods(c.Context(), engine, pool); err != nil {
				note(fmt.Errorf("pods not collected: %w", err))
			} else {
				r.Containers = append(r.Containers, pods...)
				for _, p := range pods {
					say("removed %s\n", p)
				}
			}
			removed, err := housekeep.CollectContainers(c.Context(), pool)
			r.Containers = append(r.Containers, removed...)
			for _, id := range removed {
				say("removed %s\n", id)
			}
			if errors.Is(err, ccrun.ErrUnavailable) {
				// no engine, no containers of ours to remove: what could be
				// done was, so gc succeeds and says what it could not reach
				note(fmt.Errorf("containers not collected: %w", err))
				return nil
			}
			if err != nil {
				return err
			}
			say("%s removed\n", plural(len(removed), "container", "containers"))
			return nil
		},
	}
	c.Flags().BoolVar(&pool, "pool", false, "also remove idle warm-pool containers")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be removed, and remove nothing (pods on Kubernetes are not listed)")
	c.Flags().StringVar(&engine, "engine", "", "also collect the pods of ccrun on Kubernetes: kubernetes (default: when the settings' docker.engine says so)")
	c.Flags().BoolVar(&asJSON, "json", false, "print what was removed as JSON (docs/cli.md)")
	return c
}
