package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/internal/trust"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/allowlist"
)

// trustDigestEnv names the variable a CI configuration sets to the digest
// the reviewed project files must have (ccrun trust --digest).
const trustDigestEnv = "CCRUN_TRUST_DIGEST"

// trustOptions are the Runtime's trust options from --trust-digest and
// $CCRUN_TRUST_DIGEST (the flag wins). A malformed digest in the variable
// is a configuration error (exit 78), in the flag a usage error (64).
func (a *app) trustOptions() []ccrun.Option {
	if d := a.trustDigest; d != "" {
		opt := ccrun.WithTrustDigest(d)
		return []ccrun.Option{func(r *ccrun.Runtime) error {
			if opt(r) != nil {
				return usagef("--trust-digest %q: want sha256: and 64 lowercase hex digits (ccrun trust --digest prints it)", d)
			}
			return nil
		}}
	}
	if d := os.Getenv(trustDigestEnv); d != "" {
		return []ccrun.Option{ccrun.WithTrustDigest(d)}
	}
	return nil
}

// checkLock refuses the command line's loosening flags when a settings file
// says "flags": "no-loosening" (--mode and --allow are refused by
// ccrun.New itself). The error is of class ErrPermissionDenied: exit 77.
func (a *app) checkLock(rt *ccrun.Runtime, approver permission.Approver) error {
	by, locked := rt.LoosenLock()
	if !locked {
		return nil
	}
	flags := a.loosenFlags
	if _, ok := approver.(fixedApprover); ok && !slices.Contains(flags, "--approve") {
		flags = append(flags, "--approve")
	}
	if a.trustDigest != "" {
		flags = append(flags, "--trust-digest")
	}
	flags = append(flags, lockedEnv()...)
	if len(flags) == 0 {
		return nil
	}
	return fmt.Errorf("%s refused: %s locks the flags that loosen the gate (\"flags\": \"no-loosening\"); a person at a terminal answers instead: %w",
		strings.Join(flags, ", "), by, ccrun.ErrPermissionDenied)
}

// lockedEnv names the environment variables set that loosen the gate, each
// the twin of a flag and under the same lock (checkLock):
// CCRUN_TRUST_DIGEST (--trust-digest), and CCRUN_LANDLOCK=off, which
// turns the kernel's confinement of commands nobody approved off. The
// other CCRUN_ variables ccrun reads loosen nothing: CCRUN_SESSION and
// CCRUN_SESSION_DIR name where a person's session grants are,
// CCRUN_WASM_SERVER where a @wasm guest runs, and the CCRUN_WASM_SERVE_*
// and CCRUN_WASM_WORKER* ones the role of ccrun's own helper processes.
func lockedEnv() []string {
	var out []string
	if os.Getenv(trustDigestEnv) != "" {
		out = append(out, trustDigestEnv)
	}
	if strings.EqualFold(os.Getenv(landlockEnv), "off") {
		out = append(out, landlockEnv+"=off")
	}
	return out
}

// landlockEnv, set to "off", turns the kernel layer off (internal/confine).
const landlockEnv = "CCRUN_LANDLOCK"

// lockedAdmin refuses what, an input of an admin command that loosens the
// gate, when a settings file locks loosening; instead says what to do.
func (a *app) lockedAdmin(what, instead string) error {
	rt, err := a.adminRuntime()
	if err != nil {
		return err
	}
	by, locked := rt.LoosenLock()
	rt.Close()
	if locked {
		return fmt.Errorf("%s refused: %s locks the flags that loosen the gate (\"flags\": \"no-loosening\"); %s: %w", what, by, instead, ccrun.ErrPermissionDenied)
	}
	return nil
}

// trustListing is one line of `ccrun trust --list --json`. Add fields;
// never rename.
type trustListing struct {
	Path   string   `json:"path"`
	Digest string   `json:"digest"`
	Time   string   `json:"time"`
	State  string   `json:"state"` // trusted, changed (the files loosen something else now), missing, error
	Shown  []string `json:"shown"`
}

// trustOptions are `ccrun trust`'s flags: at most one of yes, revoke,
// list and digest; json with list.
type trustOptions struct {
	yes, revoke, list, json, digest bool
}

// trustCommand is `ccrun trust`; it parses its flags into trustOptions and
// calls runF with them (nil: runTrust).
func (a *app) trustCommand(runF func(context.Context, *trustOptions) error) *cobra.Command {
	if runF == nil {
		runF = a.runTrust
	}
	o := &trustOptions{}
	c := &cobra.Command{
		Use:   "trust [--yes | --revoke | --list [--json] | --digest]",
		Short: "Review what the project's files loosen, and trust them",
		Long: `A project's own files (ccrun.json, ccrun.local.json) can tighten the gate but loosen nothing
— no allow rules, no allowlist entries, no mode above default, no env.pass — until you
trust them. ccrun trust shows what they loosen, asks, and records the project's real path
and the digest of exactly those lines in your state directory
($XDG_STATE_HOME/ccrun/trust, never in the project). When what they loosen changes (a pull,
a hand edit, a sandbox), it stops counting until you trust it again; grants ccrun writes
when you answer keep the record current.

--digest prints the digest alone: a CI configuration passes it as CCRUN_TRUST_DIGEST (or
--trust-digest), so a pull request that changes what the files loosen is not trusted by
its own changes.`,
		Example: `  ccrun trust
  ccrun trust --yes
  ccrun trust --list --json
  CCRUN_TRUST_DIGEST=$(ccrun trust --digest) ccrun exec fmt-json   # what CI sets from a reviewed value`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runF(c.Context(), o) },
	}
	c.Flags().BoolVar(&o.yes, "yes", false, "trust without asking (for scripts): what is trusted is still printed")
	c.Flags().BoolVar(&o.revoke, "revoke", false, "forget the project's trust record")
	c.Flags().BoolVar(&o.list, "list", false, "list the trusted projects and whether their files still loosen what was trusted")
	c.Flags().BoolVar(&o.json, "json", false, "with --list: print JSON")
	c.Flags().BoolVar(&o.digest, "digest", false, "print the digest of what the project's files loosen (for CCRUN_TRUST_DIGEST) and record nothing")
	return c
}

// runTrust shows what the project's files loosen and, once a person says
// so (or --yes), records the trust; or lists, revokes, prints the digest.
func (a *app) runTrust(_ context.Context, o *trustOptions) error {
	picked := 0
	for _, b := range []bool{o.yes, o.revoke, o.list, o.digest} {
		if b {
			picked++
		}
	}
	if picked > 1 || o.json && !o.list {
		return usagef("give at most one of --yes, --revoke, --list, --digest (--json goes with --list)")
	}
	if o.yes {
		// --yes trusts without a person's answer: a harness that
		// locks the loosening flags hands out ccrun to agents.
		if err := a.lockedAdmin("--yes", "run ccrun trust at a terminal and answer"); err != nil {
			return err
		}
	}
	dir := trust.DefaultDir()
	if dir == "" && !o.digest {
		return fmt.Errorf("no state directory for trust records: set XDG_STATE_HOME or HOME")
	}
	store := trust.Open(dir)
	if o.list {
		return a.trustList(store, o.json)
	}
	proj, err := a.project()
	if err != nil {
		return err
	}
	if err := allowlist.CheckProjectDir(proj); err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(proj)
	if err != nil {
		return err
	}
	loos, err := permission.ReadLoosening(real)
	if err != nil {
		return err
	}
	switch {
	case o.digest:
		// The digest is what CCRUN_TRUST_DIGEST trusts: not for
		// whoever runs ccrun under the lock.
		if err := a.lockedAdmin("--digest", "a person prints it where nothing locks, and the CI configuration holds it"); err != nil {
			return err
		}
		fmt.Fprintln(a.io.out, loos.Digest())
		return nil
	case o.revoke:
		had := false
		err := store.Update(real, func(cur *trust.Record) (*trust.Record, error) { had = cur != nil; return nil, nil })
		if err != nil {
			return err
		}
		if had {
			fmt.Fprintf(a.io.out, "ccrun: %s is no longer trusted\n", real)
		} else {
			fmt.Fprintf(a.io.out, "ccrun: %s was not trusted\n", real)
		}
		return nil
	}
	showIgnored := func() {
		if len(loos.Ignored) == 0 {
			return
		}
		fmt.Fprintln(a.io.out, "Ignored by the gate, trusted or not:")
		for _, l := range loos.Ignored {
			fmt.Fprintf(a.io.out, "  %s\n", printable(l))
		}
	}
	if loos.Empty() {
		showIgnored()
		fmt.Fprintf(a.io.out, "ccrun: nothing in %s loosens the defaults; nothing to trust\n", real)
		return nil
	}
	fmt.Fprintf(a.io.out, "The files of %s loosen the defaults:\n", real)
	for _, l := range loos.Lines {
		fmt.Fprintf(a.io.out, "  %s\n", printable(l))
	}
	showIgnored()
	fmt.Fprintf(a.io.out, "(deny and ask rules always apply; they are not listed)\ndigest: %s\n", loos.Digest())
	if rec, err := store.Get(real); err == nil && rec != nil && rec.Digest == loos.Digest() {
		fmt.Fprintln(a.io.out, "ccrun: already trusted")
		return nil
	}
	if !o.yes {
		if !isTerminal(a.io.in) || !isTerminal(a.io.err) {
			return fmt.Errorf("not trusted: nobody at a terminal to ask (run ccrun trust at a terminal, or pass --yes): %w", ccrun.ErrPermissionDenied)
		}
		fmt.Fprint(a.io.err, "Trust exactly this? [y/N] ")
		line, _ := bufio.NewReader(a.io.in).ReadString('\n')
		if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
			return fmt.Errorf("not trusted: %w", ccrun.ErrPermissionDenied)
		}
	}
	// What is recorded must be what was shown: read again.
	again, err := permission.ReadLoosening(real)
	if err != nil {
		return err
	}
	if again.Digest() != loos.Digest() {
		return fmt.Errorf("the files changed while you were reviewing them: run ccrun trust again: %w", ccrun.ErrPermissionDenied)
	}
	err = store.Update(real, func(*trust.Record) (*trust.Record, error) {
		return &trust.Record{Digest: loos.Digest(), Shown: loos.Lines}, nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.io.out, "ccrun: trusted %s (%s)\n", real, loos.Digest())
	return nil
}

func (a *app) trustList(store *trust.Store, asJSON bool) error {
	recs, err := store.List()
	if err != nil {
		return err
	}
	out := make([]trustListing, 0, len(recs))
	for _, r := range recs {
		l := trustListing{Path: r.Path, Digest: r.Digest, Time: r.Time.UTC().Format("2006-01-02T15:04:05Z"), Shown: r.Shown}
		if l.Shown == nil {
			l.Shown = []string{}
		}
		switch loos, err := permission.ReadLoosening(r.Path); {
		case errors.Is(err, fs.ErrNotExist):
			l.State = "missing"
		case err != nil:
			l.State = "error"
		case loos.Digest() == r.Digest:
			l.State = "trusted"
		default:
			l.State = "changed"
		}
		if _, err := os.Stat(r.Path); errors.Is(err, fs.ErrNotExist) {
			l.State = "missing"
		}
		out = append(out, l)
	}
	if asJSON {
		enc := json.NewEncoder(a.io.out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(out)
	}
	for _, l := range out {
		fmt.Fprintf(a.io.out, "%-8s %s  %s  %s\n", l.State, l.Time, l.Digest, printable(l.Path))
	}
	return nil
}

// printable returns s as is when it is printable ASCII (and the arrow of
// an allowlist entry), else quoted with every other character escaped.
func printable(s string) string {
	for _, r := range s {
		if (r < 0x20 || r > 0x7e) && r != '→' {
			return strconv.QuoteToASCII(s)
		}
	}
	return s
}
