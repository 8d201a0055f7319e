package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/allowlist"
)

// demoOptions are `ccrun demo`'s flag.
type demoOptions struct {
	keep bool // --keep: the demo project stays
}

// demoCommand is `ccrun demo`; it parses its flag and calls runF (nil:
// runDemo).
func (a *app) demoCommand(runF func(context.Context, *demoOptions) error) *cobra.Command {
	if runF == nil {
		runF = a.runDemo
	}
	o := &demoOptions{}
	c := &cobra.Command{
		Use:   "demo",
		Short: "Run the bundled @wasm example through the gate (no daemon, no network)",
		Args:  cobra.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return runF(c.Context(), o) },
	}
	c.Flags().BoolVar(&o.keep, "keep", false, "keep the demo project instead of removing it")
	return c
}

// runDemo runs ccrun's main job on an embedded default: it writes the
// bundled @wasm capability into a fresh project and runs it through the
// gate, twice — asked the first time, allowed by the project grant the
// second. It needs no daemon and no network.
func (a *app) runDemo(ctx context.Context, o *demoOptions) error {
	dir, err := os.MkdirTemp("", "ccrun-demo-")
	if err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(dir)
	}
	w := a.io.out
	fmt.Fprintf(w, "project %s\n", dir)
	capDir, err := capabilities.Scaffold(dir, "hello", ceiling.Wasm)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "capability %s (a bundled WASI module)\n", capDir)
	ask := permission.ApproverFunc(func(_ context.Context, p *permission.Prompt) (ceiling.Grant, error) {
		fmt.Fprintf(w, "gate asks: %s (%s) under %s; the demo answers %s\n",
			p.Request.Tool, p.Request.Environment, p.Decision.Key, ceiling.AlwaysThisProject)
		return ceiling.AlwaysThisProject, nil
	})
	// The demo's trust records stay in its own directory: a record
	// for a project the demo then deletes would outlive it.
	rt, err := ccrun.New(append(a.eng.Options(EngineChoices{}), ccrun.WithProjectDir(dir), ccrun.WithApprover(ask),
		ccrun.WithTrustDir(filepath.Join(dir, ".ccrun", "trust")))...)
	if err != nil {
		return err
	}
	defer rt.Close()
	for i := 1; i <= 2; i++ {
		fmt.Fprintf(w, "\nrun %d: ccrun exec hello\n", i)
		out, err := rt.Exec(ctx, &ccrun.Call{Capability: "hello", Stdout: w, Stderr: a.io.err})
		if err != nil {
			return err
		}
		d := out.Decision
		fmt.Fprintf(w, "decision: %s by %s (%s); exit %d in %s\n", d.Verdict, d.Layer, d.Reason,
			out.Result.ExitCode, out.Result.Duration.Round(1000))
	}
	data, err := os.ReadFile(allowlist.ProjectFile(dir))
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nccrun.json now holds the grant, bound to the capability's digest:\n%s", data)
	return nil
}
