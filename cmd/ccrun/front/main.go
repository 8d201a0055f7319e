//go:build ccrunfront

package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun"
	_ "github.com/ccrun/ccrun/cmd/ccrun/internal/handoff/early" // first: hands the rest over
)

// The front: `make build`'s bin/ccrun. An agent calls ccrun thousands of
// times, most often for a @shell command, and a process that links the
// Docker, Kubernetes, wazero and MCP libraries spends most of its start in
// their package init (docs/RATIONALE.md). The front links the gate and
// @shell alone. It serves the commands that need nothing else, with the
// same code as the whole ccrun (the root package, which links no engine,
// and this one, built with the ccrunfront tag, which leaves out package
// engines and the commands of the engines); every other command it hands,
// before anything is read, decided or written, to the whole ccrun beside
// it (handoff.FullName), by execve: the same arguments, environment,
// streams and process (package handoff, run from early's init).

// What the whole ccrun has and the front does not. The front never
// reaches them (what needs them was handed over in early's init): the
// engines' options are none, and the image check refuses.

func serveHelper([]string) (int, bool) { return 0, false }

// commands are the ones the front serves (handoff.Serves): the others
// never reach it.
func (a *app) commands() []*cobra.Command {
	return []*cobra.Command{a.execCommand(nil), a.checkCommand(nil), a.versionCommand(nil), a.keyCommand(nil)}
}

// frontRoot: cobra's completion command is the whole ccrun's (completion
// and __complete are handed over), so the front does not make it at every
// run.
func frontRoot(root *cobra.Command) { root.CompletionOptions.DisableDefaultCmd = true }

func (a *app) execEngines(string, bool) error { return nil }

func (a *app) runtimeEngines(string) []ccrun.Option { return nil }

func withCompileProgress(ctx context.Context, _ *status) context.Context { return ctx }

// checkImage refuses: the front cannot run @docker. It is the guard
// behind handing such a command over, so that a mistake in handoff.Serves
// is an error, not a quieter run (the root package the front links runs
// @shell alone: package engines has the others, and the front links none).
func checkImage(string) error {
	return fmt.Errorf("this ccrun is the front (the gate and @shell only): %w", ccrun.ErrInvalidCall)
}
