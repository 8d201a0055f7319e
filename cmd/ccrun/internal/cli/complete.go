package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun/internal/runtimehook"
	"github.com/ccrun/ccrun/shellcmd"
)

// completeWords completes a flag from a fixed list of values.
func completeWords(words ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(_ *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
		var out []string
		for _, w := range words {
			if strings.HasPrefix(w, prefix) {
				out = append(out, w)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeCapabilities completes the name of one of the project's
// capabilities that this ccrun runs, with its description (a capability
// name comes first, and once only); for exec and check (the commands of a
// call, with --shell), an environment of backends.go too, whose target
// comes next.
func (a *app) completeCapabilities(c *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 || a.dashTyped() {
		return nil, cobra.ShellCompDirectiveDefault
	}
	rt, err := a.adminRuntime()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	defer rt.Close()
	caps, _ := rt.Capabilities()
	var out []string
	for _, cp := range caps {
		if strings.HasPrefix(cp.Manifest.Name, prefix) {
			out = append(out, cp.Manifest.Name+"\t"+shellcmd.Escape(cp.Manifest.Description))
		}
	}
	if c.Flags().Lookup("shell") != nil {
		for _, e := range rt.Environments().List() {
			if !e.Builtin() && strings.HasPrefix(string(e), prefix) {
				out = append(out, string(e)+"\t"+"run a target in "+string(e))
			}
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeEnvironments completes an environment this ccrun runs: the
// built-in ones and those of backends.go.
func (a *app) completeEnvironments(_ *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	rt, err := a.adminRuntime()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	defer rt.Close()
	var words []string
	for _, e := range rt.Environments().List() {
		words = append(words, string(e))
	}
	return completeWords(words...)(nil, nil, prefix)
}

// completeProjectKeys completes a key of the project allowlist.
func (a *app) completeProjectKeys(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	rt, err := a.adminRuntime()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	defer rt.Close()
	var out []string
	al, _ := runtimehook.Lint(rt)
	for _, e := range al.Entries {
		if k := e.Pattern.String(); strings.HasPrefix(k, prefix) {
			out = append(out, k+"\t"+e.Grant.String())
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeCallFlags registers the completion of --wasm, for exec and
// check; their flags with a fixed list of values complete from that list
// (enumFlags, strictFlags).
func completeCallFlags(c *cobra.Command) {
	_ = c.RegisterFlagCompletionFunc("wasm", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"wasm"}, cobra.ShellCompDirectiveFilterFileExt
	})
}

// dashTyped reports whether the command line being completed holds a "--"
// before the word to complete: what follows it is the capability's own
// arguments. (Cobra's completion parses the words with a "--" appended, so
// ArgsLenAtDash cannot tell a typed one from its own.)
func (a *app) dashTyped() bool {
	if len(a.args) < 2 || (a.args[0] != cobra.ShellCompRequestCmd && a.args[0] != cobra.ShellCompNoDescRequestCmd) {
		return false
	}
	for _, w := range a.args[1 : len(a.args)-1] {
		if w == "--" {
			return true
		}
	}
	return false
}
