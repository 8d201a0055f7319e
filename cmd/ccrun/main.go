// Command ccrun runs the tools an AI agent calls, each in the environment
// the tool declares, behind one permission gate: the whole ccrun, every
// command and every environment (`go install`, `make build`'s
// bin/ccrun-full). See the README, and cmd/ccrun/front for the fast front
// that serves the gate and @shell alone.
package main

import (
	"os"

	"github.com/ccrun/ccrun/cmd/ccrun/internal/cli"
	"github.com/ccrun/ccrun/cmd/ccrun/internal/full"
)

func main() { os.Exit(cli.Main(full.Engines())) }
