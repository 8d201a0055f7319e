package wasm

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/ccrun/ccrun/runtime/job"
)

func ExampleExecutor_Run() {
	ctx := context.Background()
	e, err := New(ctx, WithCacheDir(sharedCache)) // compiled modules kept there across processes
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close(ctx)

	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	res, err := e.Run(ctx, Spec{
		Module: guests["probe"], // a Go program built with GOOS=wasip1 GOARCH=wasm
		Name:   "probe",
		Args:   []string{"exit", "3"},
		Mounts: []job.Mount{{Host: dir, Guest: "/data"}}, // read-only
		Limits: job.Limits{Timeout: time.Minute, Memory: 64 << 20},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Reason, res.ExitCode)
	// Output: exit 3
}
