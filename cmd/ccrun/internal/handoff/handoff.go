// Package handoff is the first thing the front of ccrun does
// (cmd/ccrun/front): from the init of package early, before the init
// of the gate's packages and their libraries, it hands a command the front
// does not serve to the whole ccrun beside it, by execve. Both import only
// what is initialized by then, so that Go's init order (packages sorted by
// import path, each once its imports are done) runs early's init among the
// first: a command the whole ccrun runs pays the runtime's start and
// little more.
//
// Serves is a reading of the arguments that errs towards handing over:
// what it lets through, the front parses with cobra and runs with the same
// code as the whole ccrun; anything it is unsure of goes to the whole
// ccrun, which serves every command.
package handoff

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// FullName is the file name of the whole ccrun, in the front's directory.
const FullName = "ccrun-full"

// ExitInternal is the exit code when the whole ccrun cannot be run: ccrun's
// own failure (package cli's exitInternal).
const ExitInternal = 125

// served lists the commands the front serves, each with the flags it
// serves it with (true: the flag takes a value); exec and check only with
// --shell, since their other tools run in an engine. gateFlags, the gate's
// and the root's, are served with each.
var served = map[string]map[string]bool{
	"version": {"json": false},
	"key":     {"json": false},
	"exec": {"shell": true, "approve": true, "events": true, "env": true, "input": true, "timeout": true,
		"memory": true, "output": true},
	"check": {"shell": true, "json": false, "session-allow": true, "env": true, "input": true},
}

var gateFlags = map[string]bool{"mode": true, "allow": true, "ask": true, "deny": true, "directive": true}

var rootFlags = map[string]bool{"project-dir": true, "trust-digest": true}

// Served returns, for each command the front serves, its flags (true: the
// flag takes a value), the gate's and the root's included: a copy, for
// the test that holds it to the CLI's own flags.
func Served() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for cmd, flags := range served {
		m := map[string]bool{}
		for f, v := range flags {
			m[f] = v
		}
		for f := range rootFlags {
			m[f] = true
		}
		if cmd == "exec" || cmd == "check" {
			for f := range gateFlags {
				m[f] = true
			}
		}
		out[cmd] = m
	}
	return out
}

// Serves reports whether the front serves args (ccrun's, without the
// program name): a served command, then only its served flags (long ones,
// --name VALUE or --name=VALUE), --shell among them for exec and check.
// A short flag, help, an unknown flag, or a flag that is not the command's
// goes to the whole ccrun.
func Serves(args []string) bool {
	i := 0
	for ; i < len(args); i++ { // the root's flags, before the command
		name, value, ok := long(args[i])
		if !ok || !rootFlags[name] {
			break
		}
		if !value {
			i++ // its value is the next argument
		}
	}
	if i >= len(args) {
		return false
	}
	flags, ok := served[args[i]]
	if !ok {
		return false
	}
	cmd := args[i]
	shell := false
	for i++; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break // the rest are arguments
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue // an argument
		}
		name, value, ok := long(a)
		if !ok {
			return false // a short flag, -h among them
		}
		takes, known := flags[name]
		switch {
		case known:
		case gateFlags[name] && (cmd == "exec" || cmd == "check"), rootFlags[name]:
			takes = true
		default:
			return false
		}
		shell = shell || name == "shell"
		if takes && !value {
			i++ // its value: the next argument, whatever it looks like
		}
	}
	switch cmd {
	case "exec", "check":
		return shell
	}
	return true
}

// long splits a long flag: --name or --name=value (value: the value is in
// the argument). ok is false for anything else.
func long(a string) (name string, value, ok bool) {
	if !strings.HasPrefix(a, "--") || len(a) == 2 {
		return "", false, false
	}
	name, _, value = strings.Cut(a[2:], "=")
	if name == "" || strings.HasPrefix(name, "-") {
		return "", false, false
	}
	return name, value, true
}

// Full is the whole ccrun beside the executable exe.
func Full(exe string) (string, error) {
	// Not path/filepath: its init would come first (see the package
	// comment). exe is absolute (os.Executable).
	full := exe[:strings.LastIndexByte(exe, '/')+1] + FullName
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

// Run hands args to the whole ccrun, by execve, unless the front serves
// them (Serves); when it cannot, it says why and exits 125: nothing was
// read, decided or run. Package early calls it from its init.
func Run(args []string) {
	if Serves(args) {
		return
	}
	exe, err := os.Executable()
	var full string
	if err == nil {
		full, err = Full(exe)
	}
	if err == nil {
		err = syscall.Exec(full, append([]string{full}, args...), os.Environ())
	}
	fmt.Fprintf(os.Stderr, "ccrun: %v\n", err)
	os.Exit(ExitInternal)
}
