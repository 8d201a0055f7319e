package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/ccrun/ccrun/permission/keys"
)

// checkReport is what `ccrun check --json` prints. Its fields are stable:
// users test their policies against them in CI. Add fields; never rename.
type checkReport struct {
	Decision    string   `json:"decision"`  // allow, ask or deny: the gate's own answer
	WouldRun    bool     `json:"would_run"` // whether exec would run it with nobody to ask (only on allow)
	Key         string   `json:"key"`
	Exact       bool     `json:"exact"`    // keyed by its whole text: matched only by a rule of this command
	Compound    bool     `json:"compound"` // an exact key of a compound shell command (or of text that does not parse)
	Tool        string   `json:"tool"`
	Environment string   `json:"environment"`
	Layer       string   `json:"layer"`          // the gate step that decided
	Rule        string   `json:"rule,omitempty"` // the rule or allowlist entry that decided
	Reason      string   `json:"reason"`
	Offer       string   `json:"offer,omitempty"` // on ask: the most a person may grant
	Digest      string   `json:"digest,omitempty"`
	Loosens     []string `json:"loosens"`
	Diagnostics []string `json:"diagnostics"`
	Warnings    []string `json:"warnings"`
	Network     string   `json:"network,omitempty"` // what a @shell or @docker call may reach (Runtime.Network)
	Missing     []string `json:"missing"`           // the guarantees a @shell call's sandbox lacks here (Runtime.ShellSandboxNotes)
}

// checkOptions are `ccrun check`'s flags and arguments as the command
// line gave them: runCheck needs nothing else, so that a test calls it
// without cobra (and checkCommand's runF sees what cobra parsed).
type checkOptions struct {
	call         callFlags // the call: --shell, --wasm, --docker, the limits' and the gate's flags
	args         []string  // a capability's NAME, and after -- the tool's arguments
	dash         int       // where -- stood in args; -1: nowhere
	json         bool      // --json
	sessionAllow []string  // --session-allow, repeated
}

// checkCommand is `ccrun check`; it parses the command line into
// checkOptions and calls runF with them (nil: runCheck).
func (a *app) checkCommand(runF func(context.Context, *checkOptions) error) *cobra.Command {
	if runF == nil {
		runF = a.runCheck
	}
	o := &checkOptions{}
	c := &cobra.Command{
		Use:   "check [--json] [--session-allow KEY]... (--shell CMD | NAME | --wasm FILE | --docker IMAGE)",
		Short: "Print the decision exec would take with nobody to ask, and run nothing",
		Long: `Print the decision that ccrun exec would take with nobody to ask: allow, ask or deny, the
key (and whether it is keyed by the whole text of the command), the gate step that decided, the rule, the reason and any
diagnostics (such as a ceiling violation). Nothing runs and nothing is written. With
nobody to ask, an ask is a deny: would_run is true only for allow. Exits 0 when the
decision could be made; the JSON fields are stable.`,
		Example: `  ccrun check --shell 'git status && git push'
  ccrun check --json --session-allow run_command:git --shell 'git push'`,
		RunE: func(c *cobra.Command, args []string) error {
			o.args, o.dash = args, c.ArgsLenAtDash()
			return runF(c.Context(), o)
		},
	}
	o.call.register(c, false)
	c.Flags().Lookup("shell").Usage = "decide on this shell command (bash syntax), as exec --shell would run it"
	c.Flags().BoolVar(&o.json, "json", false, "print the decision as JSON")
	c.Flags().StringArrayVar(&o.sessionAllow, "session-allow", nil, "add a session grant of this key pattern, for this evaluation only (repeatable)")
	c.ValidArgsFunction = a.completeCapabilities
	return c
}

// runCheck decides on the call o describes, as exec would with nobody to
// ask, and prints the decision; it runs nothing and writes nothing.
func (a *app) runCheck(ctx context.Context, o *checkOptions) error {
	call, err := o.call.call(o.args, o.dash, a.io.in, a)
	if err != nil {
		return err
	}
	layer, err := o.call.settings()
	if err != nil {
		return err
	}
	sess := allowlist.NewSessionAllowlist()
	if cur, err := a.liveSession(); err != nil {
		return err
	} else if cur != nil {
		for _, e := range cur.Entries() {
			if err := sess.Add(e); err != nil {
				return err
			}
		}
	}
	for _, k := range o.sessionAllow {
		p, err := keys.ParsePattern(k)
		if err != nil {
			return usagef("--session-allow: %w", err)
		}
		if err := sess.Add(allowlist.Entry{Pattern: p, Grant: ceiling.AlwaysThisSession}); err != nil {
			return usagef("--session-allow: %w", err)
		}
	}
	if len(o.sessionAllow) > 0 {
		a.loosenFlags = append(a.loosenFlags, "--session-allow")
	}
	rt, err := a.runtime(nil, layer, ccrun.WithSession(sess), ccrun.WithAuditLog(""))
	if err != nil {
		return err
	}
	defer rt.Close()
	out, err := rt.Check(ctx, call)
	if err != nil {
		return err
	}
	r := checkReportOf(out)
	r.Missing = nonNil(rt.ShellSandboxNotes(out))
	if env := out.Request.Environment; env == ceiling.Shell || env == ceiling.Docker {
		// @docker's own default is no network (--network): the lists
		// say something of it only when they limit it
		if n, err := rt.Network(call); err == nil && (env == ceiling.Shell || n.Limited) {
			r.Network = n.String()
		}
	}
	if o.json {
		enc := json.NewEncoder(a.io.out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(r)
	}
	printReport(a, r)
	return nil
}

func checkReportOf(out *ccrun.Outcome) checkReport {
	d, req := out.Decision, out.Request
	r := checkReport{
		Decision: string(d.Verdict), WouldRun: d.Verdict == permission.Allow,
		Key: d.Key.String(), Exact: d.Key.Exact, Compound: compoundKey(req, d.Key), Tool: req.Tool, Environment: string(req.Environment),
		Layer: string(d.Layer), Rule: d.Rule, Reason: d.Reason, Digest: req.Digest,
		Loosens: nonNil(req.Loosens), Diagnostics: nonNil(d.Diagnostics), Warnings: nonNil(d.Warnings),
	}
	if req.Permission.IsNone() {
		r.Key = ""
	}
	if d.Verdict == permission.AskUser {
		r.Offer = d.Offer.String()
	}
	return r
}

// compoundKey reports whether k, the key of req, is the exact key of a
// compound command (or of text that does not parse), not of a simple
// command keyed by its whole text (rm *.log, ls -la, timeout 60 true).
func compoundKey(req *permission.Request, k keys.Key) bool {
	if !k.Exact || k.Tool != keys.ShellTool {
		return false
	}
	if req.Command != nil {
		return req.Command.Compound
	}
	return permission.ParseCommand(k.Action).Compound
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func printReport(a *app, r checkReport) {
	w := a.io.out
	fmt.Fprintf(w, "decision:    %s\n", r.Decision)
	if r.Decision == "ask" {
		fmt.Fprintf(w, "             (with nobody to ask, exec denies; a person may grant up to %s)\n", r.Offer)
	}
	kind := "simple"
	switch {
	case r.Compound:
		kind = "compound: matched only by a rule of this command, however spaced or quoted"
	case r.Exact:
		kind = "keyed by its whole text: matched only by a rule of this command, however spaced or quoted"
	}
	fmt.Fprintf(w, "key:         %s (%s)\n", r.Key, kind)
	fmt.Fprintf(w, "tool:        %s (%s)\n", r.Tool, r.Environment)
	fmt.Fprintf(w, "layer:       %s\n", r.Layer)
	if r.Rule != "" {
		fmt.Fprintf(w, "rule:        %s\n", r.Rule)
	}
	fmt.Fprintf(w, "reason:      %s\n", r.Reason)
	for _, l := range r.Loosens {
		fmt.Fprintf(w, "loosens:     %s\n", l)
	}
	for _, x := range r.Diagnostics {
		fmt.Fprintf(w, "diagnostic:  %s\n", x)
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintf(w, "warnings:    %s\n", strings.Join(r.Warnings, "; "))
	}
	if r.Network != "" {
		fmt.Fprintf(w, "network:     %s\n", r.Network)
	}
	for _, m := range r.Missing {
		fmt.Fprintf(w, "kernel:      missing here: %s (see ccrun doctor)\n", m)
	}
}
