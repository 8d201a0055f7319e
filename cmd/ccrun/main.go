// Command ccrun runs the tools an AI agent calls, each in the environment
// the tool declares, behind one permission gate. See the README.
package main

import (
	"io"
	"os"
)

// stdio is where a run of the CLI reads and writes.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

func main() {
	os.Exit(run(os.Args[1:], stdio{os.Stdin, os.Stdout, os.Stderr}))
}
