//go:build ccrunfront

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ccrun/ccrun"
)

// The front: `make build`'s bin/ccrun. An agent calls ccrun thousands of
// times, most often for a @shell command, and a process that links the
// Docker, Kubernetes, wazero and MCP libraries spends most of its start in
// their package init (docs/RATIONALE.md). The front links the gate and
// @shell alone. It serves the commands that need nothing else, with the
// same code as the whole ccrun (the root package and this one, built with
// the ccrunfront tag); every other command it hands, before anything is
// read, decided or written, to the whole ccrun beside it (fullName), by
// execve: the same arguments, environment, streams and process.

// served lists the commands the front serves, each with the flags it
// serves it with: anything else (another flag, help) goes to the whole
// ccrun. exec and check only with --shell: their other tools run in an
// engine. The gate's flags and the root's are served with each (gateFlags).
var served = map[string]struct {
	make  func(*app) *cobra.Command
	flags map[string]bool
}{
	"version": {(*app).versionCommand, map[string]bool{"json": true}},
	"key":     {(*app).keyCommand, map[string]bool{"json": true}},
	"exec": {(*app).execCommand, map[string]bool{"shell": true, "approve": true, "events": true, "env": true,
		"input": true, "timeout": true, "memory": true, "output": true}},
	"check": {(*app).checkCommand, map[string]bool{"shell": true, "json": true, "session-allow": true, "env": true, "input": true}},
}

var gateFlags = map[string]bool{"mode": true, "allow": true, "ask": true, "deny": true, "directive": true,
	"project-dir": true, "trust-digest": true}

// frontServes reports whether the front serves args itself. It builds the
// root and the one command args name (not the whole tree), and lets cobra
// find and parse them as the run will.
func frontServes(args []string) bool {
	name := commandName(args)
	cmd, ok := served[name]
	if !ok {
		return false
	}
	a := &app{io: stdio{in: os.Stdin, out: io.Discard, err: io.Discard}}
	root := a.rootCommand()
	root.AddCommand(cmd.make(a))
	c, rest, err := root.Find(args)
	if err != nil || c.Name() != name || c.Parent() != root {
		return false
	}
	c.SetOut(io.Discard)
	c.SetErr(io.Discard)
	if err := c.ParseFlags(rest); err != nil {
		return false // the whole ccrun says what is wrong
	}
	all := true
	c.Flags().Visit(func(f *pflag.Flag) { all = all && (cmd.flags[f.Name] || gateFlags[f.Name]) })
	if !all {
		return false
	}
	switch name {
	case "exec", "check":
		return c.Flags().Changed("shell")
	}
	return true
}

// commandName is the first argument that is neither one of the root's
// flags (--project-dir, --trust-digest, each with its value) nor a value
// of one: the command args name, or "" when there is none.
func commandName(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--project-dir" || a == "--trust-digest":
			i++
		case strings.HasPrefix(a, "--project-dir=") || strings.HasPrefix(a, "--trust-digest="):
		case strings.HasPrefix(a, "-"):
			return ""
		default:
			return a
		}
	}
	return ""
}

// handOff execs the whole ccrun with args unless the front serves them.
// When it cannot, it says why and exits: nothing was decided or run.
func handOff(args []string) {
	if frontServes(args) {
		return
	}
	full, err := fullPath()
	if err == nil {
		argv := append([]string{full}, args...)
		err = syscall.Exec(full, argv, os.Environ())
	}
	report(os.Stderr, err)
	os.Exit(exitInternal)
}

// fullPath is the whole ccrun beside this executable.
func fullPath() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find the whole ccrun (%s): %w", fullName, err)
	}
	full := filepath.Join(filepath.Dir(exe), fullName)
	fi, err := os.Stat(full)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("this ccrun (%s) serves only @shell and the gate; the rest needs %s beside it, which is missing: build both with `make build`, or install the one binary that does all: go install github.com/ccrun/ccrun/cmd/ccrun@latest", exe, full)
	case err != nil:
		return "", fmt.Errorf("the whole ccrun %s: %w", full, err)
	case !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0:
		return "", fmt.Errorf("the whole ccrun %s is not an executable file", full)
	}
	return full, nil
}

// What the whole ccrun has and the front does not: it never reaches these
// (handOff), and each refuses rather than do less.

func serveHelper([]string) (int, bool) { return 0, false }

func (a *app) engineCommands() []*cobra.Command { return nil }

func (a *app) execEngines(string, bool) ([]ccrun.Option, error) { return nil, nil }

func (a *app) runtimeEngines(string) []ccrun.Option { return nil }

func withCompileProgress(ctx context.Context, _ *status) context.Context { return ctx }

func checkImage(string) error { return ccrun.ErrFront }
