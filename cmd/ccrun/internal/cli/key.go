package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/shellcmd"
)

// keyOptions are `ccrun key`'s argument and flag.
type keyOptions struct {
	command string // COMMAND, the shell command
	json    bool   // --json
}

// keyCommand parses `ccrun key` into its options and calls runF with them
// (nil: runKey).
func (a *app) keyCommand(runF func(context.Context, *keyOptions) error) *cobra.Command {
	if runF == nil {
		runF = a.runKey
	}
	o := &keyOptions{}
	c := &cobra.Command{
		Use:   "key COMMAND",
		Short: "Print the key a shell command is asked under, and the rule to write for it",
		Long: `Print the key ccrun gives a shell command (as --shell would run it) and the rule that
matches it, ready to paste into the "permissions" of ccrun.json, into --allow/--ask/--deny,
or into ccrun allowlist add. A simple command keys by its program and first operand
(run_command:git:push), or by its program alone when it has none (run_command:make; the
rule of that command alone is run_command:make:"", as run_command:make is every make). A
compound command (&&, pipes, redirections, substitutions…), and a simple one whose
program and operand cannot say what runs (a wrapper such as timeout or sudo, a glob or
quoted text as operand, an option before the operand, options alone: rm *.log, kubectl -n
prod get pods, ls -la) keys by its whole text, and is matched only by a rule of that
command, however the rule spaces or quotes it (a rule is read as a command); never by a
wildcard. Give the command as one argument, quoted.`,
		Example: `  ccrun key 'git push origin main'
  ccrun key 'make test && make lint'`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			o.command = args[0]
			return runF(c.Context(), o)
		},
	}
	c.Flags().BoolVar(&o.json, "json", false, "print the key and the rule as JSON")
	return c
}

// runKey prints the key of o.command and the rule that matches it.
func (a *app) runKey(_ context.Context, o *keyOptions) error {
	cmd := permission.ParseCommand(o.command)
	key := cmd.Key.String()
	// The rule and the grant of this key only: for a command with
	// no operand, the pattern of no detail (run_command:make:""),
	// as the prompt grants it; run_command:make is every make.
	pat := keys.PatternOf(cmd.Key).String()
	var rule strings.Builder
	enc := json.NewEncoder(&rule)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(pat); err != nil {
		return err
	}
	r := keyReport{Command: o.command, Key: key, Exact: cmd.Key.Exact, Compound: cmd.Compound,
		Rule: strings.TrimSpace(rule.String()), Parses: cmd.File != nil}
	if o.json {
		return writeJSON(a.io.out, r)
	}
	w := a.io.out
	fmt.Fprintf(w, "key:      %s\n", key)
	switch {
	case !r.Parses:
		fmt.Fprintf(w, "          (the text does not parse as a shell command, so it cannot run: %v)\n", cmd.Err)
	case r.Compound:
		fmt.Fprintln(w, "          (compound: only a rule of this command matches it, however spaced or quoted; run_command:* does not)")
	case r.Exact:
		fmt.Fprintf(w, "          (keyed by its whole text: only a rule of this command matches it, however spaced or quoted; run_command:* and run_command:%s do not)\n",
			shellcmd.Escape(cmd.Program))
	}
	fmt.Fprintf(w, "rule:     %s   in ccrun.json: \"permissions\": {\"allow\"|\"ask\"|\"deny\": [...]}\n", r.Rule)
	fmt.Fprintf(w, "flag:     --allow %s\n", shellQuote(pat))
	fmt.Fprintf(w, "grant:    ccrun allowlist add %s --scope session\n", shellQuote(pat))
	if !r.Exact {
		broad := keys.Key{Tool: cmd.Key.Tool, Action: cmd.Key.Action}
		fmt.Fprintf(w, "broader:  %s covers every %s command\n", broad, shellcmd.Escape(cmd.Key.Action))
	}
	return nil
}
