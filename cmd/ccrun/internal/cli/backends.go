package cli

import (
	"strings"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
)

// backends are the environments this ccrun runs beside the built-in
// @shell, @wasm and @docker: one ccrun.WithBackend line each, as a Go
// program that builds its own ccrun adds them, e.g.
//
//	ccrun.WithBackend("@vm", ceiling.AlwaysThisSession, vm.New),
//
// Every Runtime the CLI makes is given them (runtime), so every command
// knows them: exec and check (`ccrun exec @vm TARGET`), capability list,
// validate and new, the completions, allowlist and mcp.
var backends []ccrun.Option

// targetArgs reads the arguments of an ad-hoc call of an environment of
// backends: @ENV TARGET.
func targetArgs(before []string) (ceiling.Environment, string, error) {
	if len(before) != 2 || before[1] == "" {
		return "", "", usagef("%s: want `%s TARGET`, the target its backend runs (its arguments after --)", before[0], before[0])
	}
	return ceiling.Environment(before[0]), before[1], nil
}

// isEnvironmentArg reports whether an argument where a capability's name
// goes names an environment instead (@ENV TARGET).
func isEnvironmentArg(before []string) bool {
	return len(before) > 0 && strings.HasPrefix(before[0], "@")
}
