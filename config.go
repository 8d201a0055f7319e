package ccrun

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/ccrun/ccrun/internal/dotccrun"
	"github.com/ccrun/ccrun/internal/projectdir"
	"github.com/ccrun/ccrun/internal/trust"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/allowlist"
)

// TrustState is what a project's own files loosen past the defaults and
// whether that counts (README.md, "Workspace trust"). While a project is not trusted, its deny and ask rules apply and
// its allow rules, allowlist, mode above default and env.pass do not.
type TrustState struct {
	// Dir is the project's real path, as trust records name it.
	Dir string `json:"dir"`
	// Loosens lists what ccrun.json and ccrun.local.json loosen, one line
	// each: what `ccrun trust` shows and its digest covers.
	Loosens []string `json:"loosens"`
	// Digest is the digest of Loosens (permission.Loosening.Digest).
	Digest string `json:"digest"`
	// Trusted reports whether the loosening counts: nothing loosens, or
	// the person trusted exactly this digest, or the CI digest is it.
	Trusted bool `json:"trusted"`
	// By says how: "nothing to trust", "record" (ccrun trust), "digest"
	// (WithTrustDigest, CCRUN_TRUST_DIGEST); "" when not trusted.
	By string `json:"by,omitempty"`
	// Reason is allowlist.NotTrusted when not trusted; "" otherwise.
	Reason string `json:"reason,omitempty"`
}

// WithTrustDigest trusts the project when its files loosen exactly what
// the digest says (`ccrun trust --digest` prints it), as a reviewed trust
// record given by a CI configuration: a pull request that changes what the
// files loosen changes the digest and is not trusted by its own changes.
// Default: none (only records made by `ccrun trust` count). The CLI takes
// it from --trust-digest or CCRUN_TRUST_DIGEST.
func WithTrustDigest(digest string) Option {
	return func(r *Runtime) error {
		if digest != "" && !validTrustDigest(digest) {
			return fmt.Errorf("trust digest %q: want sha256: and 64 lowercase hex digits: %w", digest, ErrInvalidConfig)
		}
		r.trustDigest = digest
		return nil
	}
}

// WithTrustDir sets the directory of the trust records; "" keeps none, so
// only WithTrustDigest (or a project that loosens nothing) is trusted.
// Default: $XDG_STATE_HOME/ccrun/trust, else ~/.local/state/ccrun/trust.
func WithTrustDir(dir string) Option {
	return func(r *Runtime) error { r.trustDir, r.trustDirSet = dir, true; return nil }
}

func validTrustDigest(d string) bool {
	if len(d) != len("sha256:")+64 || d[:7] != "sha256:" {
		return false
	}
	for _, c := range d[7:] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// trustKeeper is the allowlist.Trust of one project: its record in the
// store and the CI digest.
type trustKeeper struct {
	store  *trust.Store // nil: no records
	path   string       // the project's real path
	digest string       // the CI digest; "" none
}

func (k *trustKeeper) how(d string) string {
	switch {
	case d == permission.EmptyDigest:
		return "nothing to trust"
	case k.digest != "" && d == k.digest:
		return "digest"
	case k.store == nil:
		return ""
	}
	rec, err := k.store.Get(k.path)
	if err == nil && rec != nil && rec.Digest == d {
		return "record"
	}
	return ""
}

// Trusted implements allowlist.Trust.
func (k *trustKeeper) Trusted(d string) bool { return k.how(d) != "" }

// Rebind implements allowlist.Trust.
func (k *trustKeeper) Rebind(prev, next string) error {
	if k.store == nil {
		return errors.New("no directory to keep trust records in (set XDG_STATE_HOME)")
	}
	return k.store.Update(k.path, func(cur *trust.Record) (*trust.Record, error) {
		if prev != permission.EmptyDigest && prev != k.digest && (cur == nil || cur.Digest != prev) {
			return nil, errors.New("the project's trust record changed meanwhile")
		}
		return &trust.Record{Digest: next, Shown: []string{"(kept current by a grant ccrun wrote)"}}, nil
	})
}

// loadFiles reads the settings layers and applies workspace trust: the
// project's own layers count in full only when trusted. It sets r.files,
// r.trust, r.envPass and the project allowlist.
func (r *Runtime) loadFiles() error {
	real, err := filepath.EvalSymlinks(r.dir)
	if err != nil {
		return fmt.Errorf("project dir: %w", err)
	}
	keeper := &trustKeeper{path: real, digest: r.trustDigest}
	dir := r.trustDir
	if !r.trustDirSet {
		dir = trust.DefaultDir()
	}
	if dir != "" {
		keeper.store = trust.Open(dir)
	}
	loc := permission.DefaultLocations(r.dir)
	layers, err := permission.LoadLayers(loc)
	if err != nil {
		return err
	}
	var project, local *permission.Settings
	for _, s := range layers {
		switch s.Origin {
		case permission.OriginProject:
			project = s
		case permission.OriginLocal:
			local = s
		}
	}
	loos, err := permission.ProjectLoosening(project, local)
	if err != nil {
		return err
	}
	st := TrustState{Dir: real, Loosens: loos.Lines, Digest: loos.Digest()}
	if st.Loosens == nil {
		st.Loosens = []string{}
	}
	st.By = keeper.how(st.Digest)
	st.Trusted = st.By != ""
	if !st.Trusted {
		st.Reason = allowlist.NotTrusted
		for i, s := range layers {
			if s.Origin == permission.OriginProject || s.Origin == permission.OriginLocal {
				layers[i] = s.Untrusted()
			}
		}
	} else {
		for _, s := range []*permission.Settings{project, local} {
			if s == nil {
				continue
			}
			pass, err := s.EnvPass()
			if err != nil {
				return err
			}
			r.envPass = append(r.envPass, pass...)
		}
	}
	r.trust, r.files = st, layers
	if r.gate.Project == nil {
		// from the bytes the settings layer read: ccrun.json is read once
		p, err := permission.OpenProject(allowlist.ProjectFile(r.dir), project, keeper, loc.Local, st.Digest)
		if err != nil {
			return err
		}
		r.gate.Project = p
	}
	if by, locked := permission.LoosenLock(layers); locked {
		for _, s := range r.layers {
			if s == nil || s.Origin != permission.OriginFlags && s.Origin != permission.OriginSession {
				continue
			}
			if l, _ := s.LoosensPast(layers); len(l) > 0 {
				return fmt.Errorf("%s: %q is locked by %s (\"flags\": \"no-loosening\"): %w", s.Name, l[0], by, ErrPermissionDenied)
			}
		}
	}
	return nil
}

// Trust returns what the project's files loosen and whether it counts, as
// read when the Runtime was built.
func (r *Runtime) Trust() TrustState {
	st := r.trust
	st.Loosens = append([]string(nil), st.Loosens...)
	return st
}

// SettingsFiles returns the layers of the settings files New read (the
// managed policy, the user's config, the project's two as trust left
// them: permission.Settings.Untrusted when the project is not trusted),
// so that a backend configured by a member of those files reads what the
// gate decides with, not the file again: package engines chooses the
// @docker engine from their "docker" member. The layers are r's own: the
// caller must not modify them.
func (r *Runtime) SettingsFiles() []*permission.Settings {
	return slices.Clone(r.files)
}

// LoosenLock reports whether a settings file (managed, user, or the
// project's own) sets "flags": "no-loosening", and which. A front end must
// then refuse whatever a caller passes to loosen the gate: an approval in
// advance, a mode above default, allow rules, session grants.
func (r *Runtime) LoosenLock() (by string, locked bool) {
	return permission.LoosenLock(r.files)
}

// auditRequired reports whether a settings file says "audit":
// "required", and which.
func (r *shared) auditRequired() (by string, required bool) {
	return permission.AuditRequired(r.files)
}

// shellSandbox is what the settings say of the sandbox of approved @shell
// commands (permission.ShellSandbox).
func (r *shared) shellSandbox() (sandbox, by string, writable []string) {
	home, _ := os.UserHomeDir()
	return permission.ShellSandbox(r.files, home)
}

// defaultAuditLog is the audit log of a Runtime whose project is dir: its
// .ccrun/audit.jsonl when dir was given or is a project (it holds
// ccrun.json or .git), else the one in the user's state directory; "" when
// there is none.
func defaultAuditLog(dir string, given bool) string {
	if given || projectdir.Marked(dir) {
		return filepath.Join(dir, dotccrun.Name, "audit.jsonl")
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "ccrun", "audit.jsonl")
	}
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "ccrun", "audit.jsonl")
	}
	return ""
}
