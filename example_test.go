package ccrun_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
)

// An agent embeds ccrun to run the shell commands its model asks for. The
// approver is the agent's own: here a callback that allows each call once.
func Example() {
	dir, _ := os.MkdirTemp("", "ccrun-example")
	defer os.RemoveAll(dir)

	ask := permission.ApproverFunc(func(_ context.Context, p *permission.Prompt) (ceiling.Grant, error) {
		fmt.Println("asked for", p.Decision.Key)
		return ceiling.Once, nil
	})
	rt, err := ccrun.New(ccrun.WithProjectDir(dir), ccrun.WithApprover(ask))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	out, err := rt.Exec(context.Background(), &ccrun.Call{
		Command: "mkdir build && echo built",
		Stdout:  os.Stdout,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("exit", out.Result.ExitCode, "decided by", out.Decision.Layer)
	// Output:
	// asked for run_command:"mkdir build && echo built"
	// built
	// exit 0 decided by approver
}

// A sub-agent sees only tools that never ask: its calls with side effects
// are denied by the gate's scope step, and it cannot spawn a sub-agent of
// its own.
func ExampleRuntime_SubAgent() {
	dir, _ := os.MkdirTemp("", "ccrun-example")
	defer os.RemoveAll(dir)
	rt, _ := ccrun.New(ccrun.WithProjectDir(dir))
	defer rt.Close()

	sub, err := rt.SubAgent()
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := sub.Exec(context.Background(), &ccrun.Call{Command: "touch notes.txt"})
	fmt.Println(errors.Is(err, ccrun.ErrPermissionDenied), out.Decision.Layer)
	_, err = sub.SubAgent()
	fmt.Println(errors.Is(err, permission.ErrDepthExceeded))
	// Output:
	// true scope
	// true
}
