package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/ccrun/ccrun/permission/allowlist"
)

// gcReport is `ccrun gc --json`.
type gcReport struct {
	Processes  []string `json:"processes_ended"`    // orphaned helper processes ended, as "what pid"
	Sessions   []string `json:"sessions_removed"`   // ids of expired sessions whose files were removed
	Containers []string `json:"containers_removed"` // ids of the containers removed, and "pod NAME" for each pod
	Engines    []string `json:"engines"`            // the engines and clusters gc reached, each as a person reads it
	Errors     []string `json:"errors"`             // what could not be cleaned, one message each
	// DryRun is set by --dry-run: nothing was removed, and WouldRemove
	// says what would have been.
	DryRun      bool    `json:"dry_run"`
	WouldRemove *gcPlan `json:"would_remove,omitempty"`
}

// gcPlan is what `ccrun gc --dry-run` found: what gc would remove now.
type gcPlan struct {
	Processes  []string `json:"processes"`  // orphaned helper processes gc would end, as "what pid"
	Sessions   []string `json:"sessions"`   // ids of the expired sessions whose files gc would remove
	Containers []string `json:"containers"` // ids of the containers gc would remove (with --pool, the idle pooled ones too), and "pod NAME" for each pod
}

// gcDryRun lists what gc would remove, and removes nothing: the orphaned
// helper processes, the expired session files, the containers of a killed
// ccrun (and with --pool the idle warm-pool containers) and its pods, on
// every engine gc visits (Engines.Sites; --engine kubernetes adds the
// kubeconfig's cluster).
func (a *app) gcDryRun(ctx context.Context, o *gcOptions) error {
	plan := &gcPlan{Processes: []string{}, Sessions: []string{}, Containers: []string{}}
	r := gcReport{Processes: []string{}, Sessions: []string{}, Containers: []string{}, Engines: []string{}, Errors: []string{},
		DryRun: true, WouldRemove: plan}
	note := func(err error) {
		r.Errors = append(r.Errors, err.Error())
		if !o.json {
			fmt.Fprintf(a.io.err, "ccrun: note: %v\n", err)
		}
	}
	found, err := findOrphans(a.eng.Helpers)
	for _, o := range found {
		plan.Processes = append(plan.Processes, fmt.Sprintf("%s %d", o.what, o.pid))
	}
	if err != nil {
		note(err)
	}
	ids, err := allowlist.ExpiredSessions(sessionDir())
	plan.Sessions = append(plan.Sessions, ids...)
	if err != nil {
		note(err)
	}
	sites, err := a.eng.Sites(o.engine == "kubernetes")
	if err != nil {
		note(err)
	}
	for i, site := range sites {
		sctx, cancel := context.WithTimeout(ctx, gcSiteTimeout)
		listed, err := a.eng.Garbage(sctx, site, o.pool)
		cancel()
		plan.Containers = append(plan.Containers, listed...)
		switch {
		case err == nil:
			r.Engines = append(r.Engines, site.String())
		case i == 0:
			note(fmt.Errorf("containers not listed: %w", err))
		default:
			note(fmt.Errorf("%s: not listed: %w", site, err))
		}
	}
	if o.json {
		return writeJSON(a.io.out, r)
	}
	w := a.io.out
	for _, p := range plan.Processes {
		fmt.Fprintf(w, "would end orphaned %s\n", p)
	}
	for _, id := range plan.Sessions {
		fmt.Fprintf(w, "would remove expired session %s\n", id)
	}
	for _, id := range plan.Containers {
		if strings.HasPrefix(id, "pod ") {
			fmt.Fprintf(w, "would remove %s\n", id)
		} else {
			fmt.Fprintf(w, "would remove container %s\n", id)
		}
	}
	fmt.Fprintf(w, "would end %s and remove %s and %s; nothing was removed (--dry-run)\n",
		plural(len(plan.Processes), "process", "processes"), plural(len(plan.Sessions), "session", "sessions"),
		removedCount(plan.Containers))
	return nil
}
