// Command front is ccrun's fast front: `make build`'s bin/ccrun. An agent
// calls ccrun thousands of times, most often for a @shell command, and a
// process that links the Docker, Kubernetes, wazero and MCP libraries
// spends most of its start in their package init (docs/RATIONALE.md).
// The front links the gate and @shell alone. It serves the commands
// handoff.Serves lets through with the same code as the whole ccrun
// (package cli, given no engines); every other command it hands, before
// anything is read, decided or written, to the whole ccrun beside it
// (handoff.FullName, cmd/ccrun), by execve: the same arguments,
// environment, streams and process (package handoff, run from early's
// init).
package main

import (
	"os"

	_ "github.com/ccrun/ccrun/cmd/ccrun/internal/handoff/early" // first: hands the rest over

	"github.com/ccrun/ccrun/cmd/ccrun/internal/cli"
)

func main() { os.Exit(cli.Main(nil)) }
