package docker_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/ccrun/ccrun/runtime/docker"
	"github.com/ccrun/ccrun/runtime/job"
)

// Run a command in a hardened container: no network, read-only root, no
// capabilities, non-root, limits. (Not run by go test: it needs an engine
// and the test image; `make testimage` builds it.)
func ExampleExecutor_Run() {
	ctx := context.Background()
	e, err := docker.New(ctx)
	if err != nil {
		log.Fatal(err) // errors.Is(err, docker.ErrUnavailable): no engine answers
	}
	defer e.Close()
	res, err := e.Run(ctx, docker.Spec{
		Image:  "ccrun-test:busybox",
		Cmd:    []string{"/bin/busybox", "echo", "hello"},
		Limits: job.Limits{Timeout: time.Minute},
	})
	if err != nil {
		log.Fatal(err) // the program could not run: missing image, bad spec...
	}
	fmt.Printf("%s %d %s", res.Reason, res.ExitCode, res.Stdout)
}

// What a Spec loosens from the defaults, for the approval prompt.
func ExampleSpec_Loosens() {
	s := docker.Spec{Image: "golang:1.26", Network: "bridge", Mounts: []job.Mount{{Host: "/src", Guest: "/src"}}}
	for _, l := range s.Loosens() {
		fmt.Println(l)
	}
	// Output:
	// network: bridge (the program can reach other hosts)
	// mount: /src at /src, read-only
}
