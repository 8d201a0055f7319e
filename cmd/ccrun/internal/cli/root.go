package cli

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/cmd/ccrun/internal/handoff"
	"github.com/ccrun/ccrun/internal/projectdir"
	"github.com/ccrun/ccrun/internal/suggest"
	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/ccrun/ccrun/runtime/job"
)

// app is one run of the CLI: its streams, global flags, and the result of
// the tool it ran, if any.
type app struct {
	io         stdio
	args       []string // as given to run: completion reads what was typed
	projectDir string
	result     *job.Result
	session    *allowlist.SessionAllowlist // the running session, once runtime has opened it
	noted      bool                        // an unusable CCRUN_SESSION was reported

	// trustDigest is --trust-digest; loosenFlags names the loosening
	// flags given besides --approve, --mode and --allow (see checkLock).
	trustDigest string
	loosenFlags []string

	// eng is what the whole ccrun links (engines.go); nil in the front,
	// which has only the commands handoff.Serves lets through.
	eng *Engines
	// oneShotProcess says this run is ccrun's main (Main), which exits
	// once it returns, not a test calling run.
	oneShotProcess bool
	// choices are exec's for the engines (execEngines), given to every
	// Runtime of this run (runtimeEngines).
	choices EngineChoices

	// options are given to every Runtime of this run after the CLI's
	// own: none in ccrun's main; a test's backends.
	options []ccrun.Option
}

// execute runs the command line a.args and returns the exit code.
func (a *app) execute() int {
	root := a.command()
	root.SetArgs(a.args)
	root.SetIn(a.io.in)
	root.SetOut(a.io.out)
	root.SetErr(a.io.err)
	err := root.Execute()
	if err != nil {
		report(a.io.err, err)
		if isCobraUsage(err) {
			err = usageError{err}
		}
	}
	return exitCode(a.result, err)
}

// isCobraUsage tells cobra's own argument errors, which carry no class.
func isCobraUsage(err error) bool {
	var ue usageError
	if errors.As(err, &ue) {
		return false
	}
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument",
		"invalid argument", "accepts ", "requires at least", "requires at most", "if any flags in the group",
		"none of the others can be", "at least one of the flags", "required flag(s)"} {
		if strings.HasPrefix(msg, p) || strings.Contains(msg, " "+p) {
			return true
		}
	}
	return false
}

func (a *app) command() *cobra.Command {
	root := a.rootCommand()
	root.AddCommand(a.commands()...)
	if a.eng == nil {
		// cobra's completion command is the whole ccrun's (completion
		// and __complete are handed over): the front does not make it
		// at every run.
		root.CompletionOptions.DisableDefaultCmd = true
	} else {
		// cobra's completion scripts go to the writer set when the
		// command is made: the run's, not os.Stdout
		root.SetOut(a.io.out)
		strictCompletion(root)
	}
	strictFlags(root) // flags.go
	return root
}

// commands are ccrun's commands: every one, given the engines; without
// them (the front), the ones handoff.Serves serves, which the front's
// handoff lets through (handoff.Served: one function decides both).
func (a *app) commands() []*cobra.Command {
	all := []*cobra.Command{a.execCommand(nil), a.checkCommand(nil), a.versionCommand(nil), a.keyCommand(nil)}
	if a.eng == nil {
		served := handoff.Served()
		return slices.DeleteFunc(all, func(c *cobra.Command) bool { _, ok := served[c.Name()]; return !ok })
	}
	return append(all, a.allowlistCommand(), a.capabilityCommand(), a.sessionCommand(), a.trustCommand(nil),
		a.gcCommand(nil), a.demoCommand(nil), a.doctorCommand(nil), a.mcpCommand(nil))
}

// strictCompletion makes cobra's completion command refuse a shell it has
// no script for, as a usage error (64) that lists the valid ones: cobra's
// own prints its help and exits 0.
func strictCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	c, _, err := root.Find([]string{"completion"})
	if err != nil || c == root {
		return
	}
	c.Args = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		var shells []string
		for _, s := range c.Commands() {
			shells = append(shells, s.Name())
		}
		return usagef("%q is not a shell ccrun completes; valid: %s", args[0], strings.Join(shells, ", "))
	}
	c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
}

// rootCommand is the root command, its flags, and none of its commands.
func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "ccrun",
		Short: "Run the tools an AI agent calls, each in its environment, behind one permission gate",
		Long: `ccrun runs agent tools — @shell on the host, @wasm in wazero, @docker in a container —
behind one permission gate. A @shell grant lasts at most for the session; a sandboxed
(@wasm, @docker) one may be kept for the project in ccrun.json.

Exit codes: the tool's own code when it ran; 64 bad usage; 77 denied; 78 bad
configuration; 124 timeout; 125 ccrun's own failure or the environment unavailable;
130 interrupted (Ctrl-C); 137 stopped by ccrun (memory, output limit).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&a.projectDir, "project-dir", "", "project root (default: the nearest directory upwards with a ccrun.json, else git's top level, else the current one)")
	root.PersistentFlags().StringVar(&a.trustDigest, "trust-digest", "", "trust the project's files when they loosen exactly this digest (ccrun trust --digest; default: $"+trustDigestEnv+")")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{flagSuggestion(c, flagValueError(err))} })
	return root
}

// project returns the project root the flags point at.
func (a *app) project() (string, error) {
	if a.projectDir != "" {
		fi, err := os.Stat(a.projectDir)
		if err != nil {
			return "", usagef("--project-dir: %w", err)
		}
		if !fi.IsDir() {
			return "", usagef("--project-dir %s: not a directory", a.projectDir)
		}
		return a.projectDir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return projectdir.Find(wd)
}

// session opens the session named by $CCRUN_SESSION, or returns nil when
// none is set.
func openSession() (*allowlist.SessionAllowlist, error) {
	id := os.Getenv("CCRUN_SESSION")
	if id == "" {
		return nil, nil
	}
	s, err := allowlist.OpenSession(sessionDir(), id)
	if err != nil {
		return nil, fmt.Errorf("CCRUN_SESSION=%s: %w (start a new one: eval \"$(ccrun session start)\", or unset CCRUN_SESSION)", id, err)
	}
	return s, nil
}

func sessionDir() string {
	if d := os.Getenv("CCRUN_SESSION_DIR"); d != "" {
		return d
	}
	return allowlist.DefaultSessionDir()
}

// flagSuggestion adds to an unknown flag's error the flags of c it was
// probably meant to be, as cobra does for an unknown command.
func flagSuggestion(c *cobra.Command, err error) error {
	word, ok := strings.CutPrefix(err.Error(), "unknown flag: ")
	if !ok {
		return err
	}
	word, _, _ = strings.Cut(strings.TrimPrefix(word, "--"), "=")
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	near := suggest.Closest(word, names)
	for i, n := range near {
		near[i] = "--" + n
	}
	if line := suggest.Line(near); line != "" {
		return fmt.Errorf("%w%s", err, line)
	}
	return err
}
