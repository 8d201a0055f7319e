//go:build !ccrunfront

package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/internal/housekeep"
	"github.com/ccrun/ccrun/permission/allowlist"
)

// gcReport is `ccrun gc --json`.
type gcReport struct {
	Processes  []string `json:"processes_ended"`    // orphaned helper processes ended, as "what pid"
	Sessions   []string `json:"sessions_removed"`   // ids of expired sessions whose files were removed
	Containers []string `json:"containers_removed"` // ids of the containers removed
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
	Containers []string `json:"containers"` // ids of the containers gc would remove (with --pool, the idle pooled ones too)
}

// gcDryRun lists what gc would remove, and removes nothing: the orphaned
// helper processes, the expired session files, the containers of a killed
// ccrun (and with pool the idle warm-pool containers) on the local Docker
// Engine. Pods on Kubernetes are not listed: it says so when @docker runs
// there (engine, else the settings).
func (a *app) gcDryRun(ctx context.Context, pool bool, engine string, asJSON bool) error {
	plan := &gcPlan{Processes: []string{}, Sessions: []string{}, Containers: []string{}}
	r := gcReport{Processes: []string{}, Sessions: []string{}, Containers: []string{}, Errors: []string{},
		DryRun: true, WouldRemove: plan}
	note := func(err error) {
		r.Errors = append(r.Errors, err.Error())
		if !asJSON {
			fmt.Fprintf(a.io.err, "ccrun: note: %v\n", err)
		}
	}
	found, err := findOrphans()
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
	kind, _, _, err := ccrun.DefaultDockerEngine()
	if engine != "" {
		kind, err = engine, nil
	}
	if err == nil && kind == ccrun.EngineKubernetes {
		note(errors.New("pods on Kubernetes are not listed by --dry-run; ccrun gc removes those a killed ccrun left"))
	}
	listed, err := housekeep.GarbageContainers(ctx, pool)
	plan.Containers = append(plan.Containers, listed...)
	if err != nil {
		note(fmt.Errorf("containers not listed: %w", err))
	}
	if asJSON {
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
		fmt.Fprintf(w, "would remove container %s\n", id)
	}
	fmt.Fprintf(w, "would end %s and remove %s; nothing was removed (--dry-run)\n",
		plural(len(plan.Processes), "process", "processes"), strings.Join([]string{
			plural(len(plan.Sessions), "session", "sessions"),
			plural(len(plan.Containers), "container", "containers")}, " and "))
	return nil
}
