package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/internal/ctr"
	"github.com/ccrun/ccrun/permission/allowlist"
)

// gcOptions are `ccrun gc`'s flags.
type gcOptions struct {
	pool   bool   // --pool
	json   bool   // --json
	dryRun bool   // --dry-run
	engine string // --engine kubernetes: also the kubeconfig's cluster
}

// gcCommand is `ccrun gc`; it parses its flags into gcOptions and calls
// runF with them (nil: runGC).
func (a *app) gcCommand(runF func(context.Context, *gcOptions) error) *cobra.Command {
	if runF == nil {
		runF = a.runGC
	}
	o := &gcOptions{}
	c := &cobra.Command{
		Use:   "gc",
		Short: "Remove what ccrun left behind: orphaned helpers, expired session files, containers of a killed ccrun",
		Long: `End your helper processes of ccrun that lost their ccrun (a @wasm worker whose ccrun died,
a docker refiller past its time), remove the files of sessions whose lifetime ran out, then every container labelled by
ccrun whose owning process is gone (a ccrun killed mid-run), and every such pod. gc visits the
Docker Engine of the environment, the Kubernetes engine the settings choose, and every engine and
cluster ccrun recorded starting something on ($XDG_STATE_HOME/ccrun/engines.jsonl); one that does
not answer is reported and skipped. With --pool, also remove the idle warm-pool containers and pods.
With --dry-run, list what would be removed and remove nothing.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runF(c.Context(), o) },
	}
	c.Flags().BoolVar(&o.pool, "pool", false, "also remove idle warm-pool containers")
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "list what would be removed (containers and pods), and remove nothing")
	c.Flags().StringVar(&o.engine, "engine", "", "kubernetes: also the kubeconfig's cluster, where ccrun recorded nothing (default: the settings' docker.engine, and every cluster ccrun ran on)")
	c.Flags().BoolVar(&o.json, "json", false, "print what was removed as JSON (docs/cli.md)")
	return c
}

// runGC removes what ccrun left behind: the orphaned helper processes,
// the sockets of killed @wasm servers, the expired session files, then the
// containers and pods of a killed ccrun on every engine gc visits.
func (a *app) runGC(ctx context.Context, o *gcOptions) (err error) {
	if o.dryRun {
		return a.gcDryRun(ctx, o) // gcdry.go
	}
	r := gcReport{Processes: []string{}, Sessions: []string{}, Containers: []string{}, Engines: []string{}, Errors: []string{}}
	say := func(format string, args ...any) { // a line for a person; --json prints the report instead
		if !o.json {
			fmt.Fprintf(a.io.out, format, args...)
		}
	}
	note := func(err error) {
		r.Errors = append(r.Errors, err.Error())
		if !o.json {
			fmt.Fprintf(a.io.err, "ccrun: note: %v\n", err)
		}
	}
	defer func() {
		if o.json {
			if err != nil {
				r.Errors = append(r.Errors, err.Error())
			}
			if jerr := writeJSON(a.io.out, r); err == nil {
				err = jerr
			}
		}
	}()
	ended, err := endOrphans(a.eng.Helpers)
	for _, o := range ended {
		r.Processes = append(r.Processes, fmt.Sprintf("%s %d", o.what, o.pid))
		say("ended orphaned %s %d\n", o.what, o.pid)
	}
	if err != nil {
		note(err)
	}
	socks, err := a.eng.WasmSockets() // of @wasm servers that were killed
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
	// Every engine ccrun started something on, each within its
	// bound: one that does not answer is a note, not a hang.
	sites, err := a.eng.Sites(o.engine == "kubernetes")
	if err != nil {
		note(err)
	}
	var failed error
	for i, site := range sites {
		sctx, cancel := context.WithTimeout(ctx, gcSiteTimeout)
		removed, err := a.eng.Collect(sctx, site, o.pool)
		cancel()
		r.Containers = append(r.Containers, removed...)
		for _, id := range removed {
			say("removed %s\n", id)
		}
		switch {
		case err == nil:
			r.Engines = append(r.Engines, site.String())
		case i > 0:
			// a recorded place that is gone, or not ours any more:
			// reported, and skipped
			note(fmt.Errorf("%s: not collected: %w", site, err))
		case errors.Is(err, ccrun.ErrUnavailable) && !errors.Is(err, ctr.ErrRefused), errors.Is(err, context.DeadlineExceeded):
			// no engine, no containers of ours to remove: what could
			// be done was, so gc succeeds and says what it could not
			// reach (an engine that refuses us may hold some: gc
			// fails)
			note(fmt.Errorf("containers not collected: %w", err))
		default:
			failed = err
		}
	}
	if failed != nil {
		return failed
	}
	say("%s removed\n", removedCount(r.Containers))
	return nil
}

// gcSiteTimeout bounds gc's work at one engine: an engine or cluster that
// accepts a connection and never answers is skipped after it.
var gcSiteTimeout = 2 * time.Minute

// removedCount says how many containers and pods ids holds ("pod NAME"
// for a pod).
func removedCount(ids []string) string {
	pods := 0
	for _, id := range ids {
		if strings.HasPrefix(id, "pod ") {
			pods++
		}
	}
	out := plural(len(ids)-pods, "container", "containers")
	if pods > 0 {
		out += " and " + plural(pods, "pod", "pods")
	}
	return out
}
