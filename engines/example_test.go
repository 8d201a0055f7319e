package engines_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/permission"
)

// A Runtime given the engines runs @wasm and @docker tools besides @shell
// ones: here the hello capability, a bundled WASI module, allowed once.
// Without them the same call is refused before anyone is asked, naming
// the option that adds the engine.
func ExampleAll() {
	dir, _ := os.MkdirTemp("", "ccrun-example")
	defer os.RemoveAll(dir)
	if _, err := capabilities.Scaffold(dir, "hello", ceiling.Wasm); err != nil {
		fmt.Println(err)
		return
	}
	ask := permission.ApproverFunc(func(_ context.Context, p *permission.Prompt) (ceiling.Grant, error) {
		fmt.Println("asked for", p.Decision.Key, "in", p.Request.Environment)
		return ceiling.Once, nil
	})
	opts := []ccrun.Option{ccrun.WithProjectDir(dir), ccrun.WithApprover(ask), ccrun.WithAuditLog("")}

	shellOnly, _ := ccrun.New(opts...)
	defer shellOnly.Close()
	_, err := shellOnly.Exec(context.Background(), &ccrun.Call{Capability: "hello"})
	fmt.Println("without the engines:", errors.Is(err, ccrun.ErrUnavailable))

	rt, err := ccrun.New(append(opts, engines.All()...)...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	out, err := rt.Exec(context.Background(), &ccrun.Call{Capability: "hello", Stdout: os.Stdout})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("exit", out.Result.ExitCode)
	// Output:
	// without the engines: true
	// asked for capability:hello in @wasm
	// hello
	// exit 0
}
