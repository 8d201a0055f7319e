package cli

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun/internal/confine"
)

// doctorReport is what `ccrun doctor --json` prints. Its fields are
// stable: add fields, never rename.
type doctorReport struct {
	OS       string         `json:"os"`
	Arch     string         `json:"arch"`
	Kernel   string         `json:"kernel,omitempty"`
	Landlock landlockReport `json:"landlock"`
	Seccomp  bool           `json:"seccomp"` // confined programs also get the seccomp filter
	UserNS   userNSReport   `json:"user_namespaces"`
	// Workspace: approved @shell commands run in the workspace tier
	// (Landlock, and a mount namespace: as root, or in a user namespace)
	Workspace workspaceReport `json:"workspace"`
	// Refusals: what the tiers refuse a command's programs (not only the
	// script's own redirections) is said, read from Landlock's records
	Refusals workspaceReport `json:"program_refusals"`
	Docker   DockerReport    `json:"docker"`
	Engine   EngineReport    `json:"docker_engine"` // where a @docker call runs
	Cgroup   string          `json:"cgroup"`        // "2", "1", "hybrid" or "none"
	Missing  []string        `json:"missing"`
}

type landlockReport struct {
	Available bool     `json:"available"` // read-only @shell commands run confined
	ABI       int      `json:"abi"`
	Reason    string   `json:"reason,omitempty"` // why not, when not
	Gives     []string `json:"gives"`            // what each ABI level up to this one adds
}

type workspaceReport struct {
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"` // why not, when not
}

type userNSReport struct {
	Available bool   `json:"available"`
	Detail    string `json:"detail,omitempty"`
}

// landlockLevels says what each Landlock ABI level adds, and since which
// Linux release.
var landlockLevels = []string{
	1: "files: read, write, execute, make, remove (Linux 5.13)",
	2: "files: rename and link across directories (5.19)",
	3: "files: truncate (6.2)",
	4: "network: TCP bind and connect (6.7)",
	5: "devices: ioctl (6.10)",
	6: "scoping: abstract unix sockets and signals (6.12)",
	7: "audit logs of denials (6.15)",
}

// doctorOptions are `ccrun doctor`'s flags.
type doctorOptions struct {
	json   bool   // --json
	engine string // --engine: docker or kubernetes; "": as the settings say
}

// doctorCommand is `ccrun doctor`; it parses its flags and calls runF
// (nil: runDoctor).
func (a *app) doctorCommand(runF func(context.Context, *doctorOptions) error) *cobra.Command {
	if runF == nil {
		runF = a.runDoctor
	}
	o := &doctorOptions{}
	c := &cobra.Command{
		Use:   "doctor [--json]",
		Short: "Report which protections this machine gives ccrun",
		Long: `Report which protections this machine gives: Landlock (whether @shell commands judged
read-only run confined by the kernel, and what each ABI level adds), the seccomp filter,
user namespaces, the Docker Engine (reachable, version) and the cgroup version. Exits 0
whatever is missing; --json prints the report with stable fields.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runF(c.Context(), o) },
	}
	c.Flags().BoolVar(&o.json, "json", false, "print the report as JSON")
	c.Flags().StringVar(&o.engine, "engine", "", "report the @docker engine as ccrun exec --engine would use it: docker or kubernetes")
	return c
}

// runDoctor reports which protections this machine gives.
func (a *app) runDoctor(ctx context.Context, o *doctorOptions) error {
	r := a.doctor(ctx)
	if o.engine != "" { // --engine: where a @docker call would run with that flag
		r.Engine = a.eng.EngineInfo(ctx, o.engine)
	}
	if o.json {
		return writeJSON(a.io.out, r)
	}
	printDoctor(a, r)
	return nil
}

// doctor checks the machine; the engines' lines are Engines'.
func (a *app) doctor(ctx context.Context) doctorReport {
	r := doctorReport{OS: runtime.GOOS, Arch: runtime.GOARCH, Kernel: kernelRelease(), Cgroup: cgroupVersion(), Missing: []string{}}
	abi, err := confine.Available()
	r.Landlock.ABI, r.Landlock.Gives = abi, []string{}
	for l := 1; l < len(landlockLevels) && l <= abi; l++ {
		r.Landlock.Gives = append(r.Landlock.Gives, landlockLevels[l])
	}
	if abi >= len(landlockLevels) {
		r.Landlock.Gives = append(r.Landlock.Gives, fmt.Sprintf("and what ABI %d..%d add", len(landlockLevels), abi))
	}
	if err != nil {
		r.Landlock.Reason = err.Error()
		r.Missing = append(r.Missing, "landlock: @shell commands judged read-only cannot be confined by the kernel")
	} else {
		r.Landlock.Available = true
		r.Seccomp = confine.Seccomp()
		if !r.Seccomp {
			r.Missing = append(r.Missing, "seccomp filter: not on "+runtime.GOARCH+"; confined programs can open UDP and unix sockets")
		}
	}
	r.UserNS = userNamespaces()
	if !r.UserNS.Available {
		r.Missing = append(r.Missing, "user namespaces")
	}
	switch {
	case !r.Landlock.Available:
		r.Workspace.Reason = "no Landlock"
	case os.Geteuid() != 0 && !r.UserNS.Available:
		r.Workspace.Reason = "no user namespaces, which a mount namespace needs when not root"
	default:
		r.Workspace.Available = true
	}
	if !r.Workspace.Available {
		r.Missing = append(r.Missing, "workspace tier ("+r.Workspace.Reason+"): approved @shell commands run with all of the person's rights")
	}
	if r.Landlock.Available {
		// not a guarantee, so not in Missing: what is refused stays refused
		if err := confine.ProgramRefusals(); err != nil {
			r.Refusals.Reason = err.Error()
		} else {
			r.Refusals.Available = true
		}
	}
	r.Docker = a.eng.DockerInfo(ctx)
	r.Engine = a.eng.EngineInfo(ctx, "")
	if !r.Docker.Reachable {
		r.Missing = append(r.Missing, "docker engine: @docker tools cannot run")
	}
	if r.Cgroup == "none" {
		r.Missing = append(r.Missing, "cgroups")
	}
	return r
}

func printDoctor(a *app, r doctorReport) {
	w := a.io.out
	fmt.Fprintf(w, "system:           %s/%s %s\n", r.OS, r.Arch, r.Kernel)
	if r.Landlock.Available {
		fmt.Fprintf(w, "landlock:         ABI %d: @shell commands judged read-only run confined by the kernel\n", r.Landlock.ABI)
	} else {
		fmt.Fprintf(w, "landlock:         missing (%s): @shell commands judged read-only cannot be confined\n", r.Landlock.Reason)
	}
	for _, g := range r.Landlock.Gives {
		fmt.Fprintf(w, "                  - %s\n", g)
	}
	switch {
	case !r.Landlock.Available:
	case r.Seccomp:
		fmt.Fprintln(w, "seccomp filter:   yes: confined programs open no socket, change no mode, owner, time or xattr")
	default:
		fmt.Fprintln(w, "seccomp filter:   no: confined programs can open UDP and unix sockets")
	}
	ns := "available"
	if !r.UserNS.Available {
		ns = "missing"
	}
	if r.UserNS.Detail != "" {
		ns += " (" + r.UserNS.Detail + ")"
	}
	fmt.Fprintf(w, "user namespaces:  %s\n", ns)
	if r.Workspace.Available {
		fmt.Fprintln(w, "workspace tier:   yes: approved @shell commands write only the project (its protected paths bound read-only), their TMPDIR and the writable directories")
	} else {
		fmt.Fprintf(w, "workspace tier:   no (%s): approved @shell commands run with all of the person's rights\n", r.Workspace.Reason)
	}
	switch {
	case r.Refusals.Available:
		fmt.Fprintln(w, "refusals said:    yes: what the sandbox refuses a command's programs is said (Landlock's audit records)")
	case r.Landlock.Available:
		fmt.Fprintf(w, "refusals said:    the script's own only (%s): what the sandbox refuses its programs is refused, not said\n", r.Refusals.Reason)
	}
	if r.Docker.Reachable {
		fmt.Fprintf(w, "docker engine:    reachable at %s", r.Docker.Host)
		if r.Docker.Version != "" {
			fmt.Fprintf(w, ", version %s (API %s)", r.Docker.Version, r.Docker.APIVersion)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "docker engine:    not reachable: %s\n", strings.TrimPrefix(r.Docker.Error, "docker: "))
	}
	printEngine(w, r.Engine)
	cg := "v" + r.Cgroup
	if r.Cgroup == "none" || r.Cgroup == "hybrid" {
		cg = r.Cgroup
	}
	fmt.Fprintf(w, "cgroup:           %s\n", cg)
}
