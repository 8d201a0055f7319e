package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/job"
)

// The shapes that --json prints, one per command; docs/cli.md lists them.
// They are stable: add fields, never rename or remove one.

// versionReport is `ccrun version --json`.
type versionReport struct {
	Version  string `json:"version"`            // the module version, "(devel)" for a build from a work tree
	Revision string `json:"revision,omitempty"` // the VCS revision the binary was built from
	Time     string `json:"time,omitempty"`     // the revision's commit time, RFC 3339
	Modified bool   `json:"modified"`           // the work tree had changes not in Revision
	Go       string `json:"go"`                 // the Go toolchain
}

// entryReport is one grant, in allowlist list and session status.
type entryReport struct {
	Key     string `json:"key"`               // the pattern the grant covers
	Grant   string `json:"grant"`             // AlwaysThisSession or AlwaysThisProject
	Digest  string `json:"digest,omitempty"`  // the content it is bound to
	Expires string `json:"expires,omitempty"` // RFC 3339; absent: never
	Problem string `json:"problem,omitempty"` // why it does not count as written (allowlist list)
	Warning string `json:"warning,omitempty"` // a note that does not stop it counting (allowlist list)
}

// sessionReport is `ccrun session status --json`, and the session of
// `allowlist list --json`.
type sessionReport struct {
	ID      string        `json:"id"`                // "" when CCRUN_SESSION is not set
	Active  bool          `json:"active"`            // the session runs: its grants count
	Expires string        `json:"expires,omitempty"` // RFC 3339, when active
	Reason  string        `json:"reason,omitempty"`  // why it is not active
	Entries []entryReport `json:"entries"`
}

// allowlistReport is `ccrun allowlist list --json`.
type allowlistReport struct {
	Project struct {
		Path    string        `json:"path"`
		Entries []entryReport `json:"entries"`
	} `json:"project"`
	Session *sessionReport `json:"session"` // null when CCRUN_SESSION is not set
}

// capabilityReport is one capability of `ccrun capability list --json`.
type capabilityReport struct {
	Name        string `json:"name"`
	Environment string `json:"environment"`
	Description string `json:"description"`
	Digest      string `json:"digest"`
	Dir         string `json:"dir"`
}

// capabilitiesReport is `ccrun capability list --json`.
type capabilitiesReport struct {
	Capabilities []capabilityReport `json:"capabilities"`
	Errors       []string           `json:"errors"` // capabilities that do not load, one message each
}

// keyReport is `ccrun key --json`.
type keyReport struct {
	Command  string `json:"command"`
	Key      string `json:"key"`
	Exact    bool   `json:"exact"`    // keyed by its whole text: matched only by a rule of this command
	Compound bool   `json:"compound"` // more than one plain simple command (or text that does not parse); implies exact
	Rule     string `json:"rule"`     // the rule to write in ccrun.json's permissions, as a JSON string
	Parses   bool   `json:"parses"`   // false: the text is not a shell command and cannot run
}

func entryOf(e allowlist.Entry) entryReport {
	r := entryReport{Key: e.Pattern.String(), Grant: e.Grant.String(), Digest: e.Digest}
	if e.Expiry != allowlist.Never {
		r.Expires = time.Unix(e.Expiry, 0).UTC().Format(time.RFC3339)
	}
	return r
}

// writeJSON prints v indented, as every --json does.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// plural counts in plain language: "1 entry", "2 entries".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// stopReason words why ccrun stopped a tool, the same in every
// environment; a refusal keeps its detail (what was refused).
func stopReason(r *job.Result) string {
	switch r.Reason {
	case job.Timeout:
		return "it ran past its timeout and was killed"
	case job.Memory:
		return "it went past its memory limit and was killed"
	case job.OutputCap:
		return "it wrote more than its output limit to one stream and was killed"
	case job.Cancelled:
		return "interrupted (Ctrl-C or a signal to ccrun); it was killed"
	case job.Refused:
		return "a step was refused where it runs (the line above says which)"
	}
	if r.Detail != "" {
		return fmt.Sprintf("%s (%s)", r.Reason, r.Detail)
	}
	return string(r.Reason)
}

// shellQuote quotes s for a POSIX shell, so that a printed command line can
// be pasted as is.
func shellQuote(s string) string {
	out := "'"
	for _, r := range s {
		if r == '\'' {
			out += `'\''`
		} else {
			out += string(r)
		}
	}
	return out + "'"
}

// versionOptions are `ccrun version`'s flag.
type versionOptions struct {
	json bool // --json
}

// versionCommand parses `ccrun version` into its options and calls runF
// with them (nil: runVersion).
func (a *app) versionCommand(runF func(context.Context, *versionOptions) error) *cobra.Command {
	if runF == nil {
		runF = a.runVersion
	}
	o := &versionOptions{}
	c := &cobra.Command{
		Use:   "version",
		Short: "Print ccrun's version and the revision it was built from",
		Args:  cobra.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return runF(c.Context(), o) },
	}
	c.Flags().BoolVar(&o.json, "json", false, "print the version as JSON")
	return c
}

// runVersion prints ccrun's version and what it was built from.
func (a *app) runVersion(_ context.Context, o *versionOptions) error {
	r := buildVersion()
	if o.json {
		return writeJSON(a.io.out, r)
	}
	fmt.Fprintf(a.io.out, "ccrun %s", r.Version)
	if r.Revision != "" {
		rev := r.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		fmt.Fprintf(a.io.out, " (%s", rev)
		if r.Modified {
			fmt.Fprint(a.io.out, ", modified")
		}
		if r.Time != "" {
			fmt.Fprintf(a.io.out, ", %s", r.Time)
		}
		fmt.Fprint(a.io.out, ")")
	}
	fmt.Fprintf(a.io.out, " %s\n", r.Go)
	return nil
}

// version is the version `make build` stamps (-ldflags -X
// main.version=…, from git describe): a build from a work tree, whose
// module version is "(devel)", and which carries no VCS stamp when built
// outside a repository, still says what it is.
var version string

// buildVersion reads the version from the binary's build information: the
// module version of a `go install …@version` binary, else the version make
// stamped, with the VCS revision of a build from a work tree.
func buildVersion() versionReport {
	r := versionReport{Version: "(devel)"}
	if version != "" {
		r.Version = version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return r
	}
	r.Go = bi.GoVersion
	if v := bi.Main.Version; v != "" && (v != "(devel)" || version == "") {
		r.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			r.Revision = s.Value
		case "vcs.time":
			r.Time = s.Value
		case "vcs.modified":
			r.Modified = s.Value == "true"
		}
	}
	return r
}

// describe returns the description of the capability named tool, for the
// prompt; "" for a built-in tool or one that does not load.
func (a *app) describe(tool string) string {
	switch tool {
	case keys.ShellTool, keys.WasmTool, keys.DockerTool:
		return ""
	}
	dir, err := a.project()
	if err != nil {
		return ""
	}
	c, err := capabilities.Find(dir, tool)
	if err != nil {
		return ""
	}
	return c.Manifest.Description
}
