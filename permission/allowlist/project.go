package allowlist

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
	"github.com/gofrs/flock"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/dotccrun"
	"github.com/ccrun/ccrun/internal/jsonpos"
	"github.com/ccrun/ccrun/permission/keys"
)

// ProjectFile returns the path of the project file of a project rooted at
// projectDir: projectDir/ccrun.json.
func ProjectFile(projectDir string) string { return filepath.Join(projectDir, "ccrun.json") }

// ProjectAllowlist is the allowlist object of a project's ccrun.json: the
// grants a person made AlwaysThisProject. It survives sessions and is
// usually committed with the project.
//
// # On disk
//
// ccrun.json is a JSON object; its "allowlist" member maps a pattern (as
// keys.ParsePattern reads it) to either a grant name or, for a grant bound to
// content (a capability), an object with the grant and the digest:
//
//	{
//	  "mode": "default",
//	  "allowlist": {
//	    "run_command:git": "AlwaysThisProject",
//	    "capability:fmt-json": {"grant": "AlwaysThisProject", "digest": "sha256:…"}
//	  }
//	}
//
// Only AlwaysThisProject is accepted there (a session grant does not belong
// in a file that outlives sessions; Deny belongs in deny rules). Whether a
// key may be granted that far at all (the ceiling: no @shell key) is not
// checked when reading (a hand-written file may hold anything): the gate
// and the lint check ceiling.Check on Entries. Add checks it before
// writing.
//
// # Reading
//
// A missing file is an empty allowlist. A malformed one is a *ConfigError
// of class ccrun.ErrInvalidConfig naming the file, line and column: JSON syntax,
// an allowlist that is not an object, an unknown grant name, an invalid
// pattern, a bad digest, a repeated pattern, an unknown field in an entry.
// Edits by hand are not seen until Reload is called.
//
// # Writing
//
// Add and Remove take an exclusive lock (flock(2) on .ccrun/ccrun.json.lock
// in the file's directory, created on first use and never removed; the
// .ccrun directory is made ignored by git, see internal/dotccrun), re-read
// the file as it is now, apply the change, write the result to a temp file
// in .ccrun/, fsync it and rename it over ccrun.json. So concurrent writers
// in any number of processes lose nothing, and a crash leaves the old file
// (at worst with a stray .ccrun/.ccrun.json.tmp-* file, which is ignored). A malformed file is never written over. Every other
// top-level member of ccrun.json is kept byte for byte and in its order;
// existing allowlist entries keep their order and text, new ones are
// appended. The file is written with two-space indentation, keeps its
// mode (and, when ccrun may, its owner and group), and is not written at all
// when its mode says read-only (fs.ErrPermission). ccrun.json is read as
// ReadProjectFile reads it: a symbolic link there, or a file another user
// owns, is an error.
//
// # Trust
//
// Once SetTrust has been called, the entries count only while the
// project's loosening (ccrun.json as this allowlist read it, and
// ccrun.local.json: the DigestFunc given with the Trust, which package
// permission makes) has a digest the Trust says the person trusted;
// otherwise Lookup matches nothing and says NotTrusted. A change Add or
// Remove makes carries the trust along (Trust.Rebind) in the same locked
// step, so that a grant the person gave does not untrust the project.
//
// A ProjectAllowlist is made by LoadProject or ParseProject and is safe
// for concurrent use.
type ProjectAllowlist struct {
	path string

	writeMu sync.Mutex // serializes this value's writers; flock serializes processes

	mu        sync.RWMutex
	entries   []Entry
	loadErr   error      // the last Reload's error: the allowlist is then empty
	trust     Trust      // nil: the file is taken as it is
	digestOf  DigestFunc // the Loosening digest of a ccrun.json text, for trust
	untrusted string     // why the entries do not count; "" when they do
	digest    string     // the Loosening digest of the file as last read (with trust)
}

// LoadProject reads the allowlist of the ccrun.json at path (see
// ProjectFile). A missing file is an empty allowlist; a malformed one is an
// error of class ccrun.ErrInvalidConfig.
func LoadProject(path string) (*ProjectAllowlist, error) {
	p := &ProjectAllowlist{path: path}
	if err := p.Reload(); err != nil {
		return nil, err
	}
	return p, nil
}

// ParseProject is LoadProject then SetTrust of a text the caller has
// read already, without reading the file again: data is the text of path
// (nil when the file is absent), digest its Loosening digest as digestOf
// computes it, which t judges. Reload and Add read the file again, as
// with LoadProject.
func ParseProject(path string, data []byte, t Trust, digestOf DigestFunc, digest string) (*ProjectAllowlist, error) {
	p := &ProjectAllowlist{path: path, trust: t, digestOf: digestOf}
	doc := &projectDoc{allow: -1}
	if data != nil {
		var err error
		if doc, err = parseProjectDoc(path, data); err != nil {
			return nil, err
		}
		doc.data = data
	}
	p.entries = doc.entryList()
	if t != nil {
		p.digest = digest
		if !t.Trusted(digest) {
			p.untrusted = NotTrusted
		}
	}
	return p, nil
}

// Path returns the file the allowlist is read from and written to.
func (p *ProjectAllowlist) Path() string { return p.path }

// Reload reads the file again, picking up edits by hand. On error the
// allowlist is left empty (it fails closed: nothing is allowed from it)
// until a Reload succeeds, and Lookup reports why.
func (p *ProjectAllowlist) Reload() error {
	doc, err := readProjectDoc(p.path)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.entries, p.loadErr = nil, err
		return err
	}
	p.entries, p.loadErr = doc.entryList(), nil
	p.judge(doc)
	return nil
}

// SetTrust makes the entries count only while the project is trusted by t
// (see "Trust" above), going by the digest digestOf computes of the file's
// text. It reads the file again.
func (p *ProjectAllowlist) SetTrust(t Trust, digestOf DigestFunc) error {
	p.mu.Lock()
	p.trust, p.digestOf = t, digestOf
	p.mu.Unlock()
	return p.Reload()
}

// Untrusted returns why the entries do not count (NotTrusted and the
// detail), or "" when they do.
func (p *ProjectAllowlist) Untrusted() string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.untrusted
}

// judge decides, under p.mu, whether doc's entries count.
func (p *ProjectAllowlist) judge(doc *projectDoc) {
	p.untrusted, p.digest = "", ""
	if p.trust == nil {
		return
	}
	d, err := p.looseningDigest(doc)
	if err != nil {
		p.untrusted = fmt.Sprintf("%s (%v)", NotTrusted, err)
		return
	}
	p.digest = d
	if !p.trust.Trusted(d) {
		p.untrusted = NotTrusted
	}
}

// looseningDigest is the digest of the project's Loosening with ccrun.json
// as doc holds it. Without a DigestFunc nothing can be trusted: an error.
func (p *ProjectAllowlist) looseningDigest(doc *projectDoc) (string, error) {
	if p.digestOf == nil {
		return "", errors.New("no way to digest what the project loosens")
	}
	var text []byte // nil: no ccrun.json
	if len(doc.members) > 0 || doc.data != nil {
		text = doc.encode()
	}
	return p.digestOf(text)
}

// Entries returns a copy of the entries, in file order.
func (p *ProjectAllowlist) Entries() []Entry {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return slices.Clone(p.entries)
}

// Lookup finds an entry that allows key for a call whose content has the
// given digest ("" for none). Project entries do not expire; now is taken
// for symmetry with the session allowlist. When the last Reload failed,
// nothing matches and the failure is among the problems.
func (p *ProjectAllowlist) Lookup(key keys.Key, digest string, now time.Time) LookupResult {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.untrusted != "" {
		return LookupResult{Problems: []string{p.untrusted}}
	}
	m := lookupEntries(p.entries, p.path, key, digest, now)
	if p.loadErr != nil {
		m.Problems = append(m.Problems, fmt.Sprintf("project allowlist not loaded: %v", p.loadErr))
	}
	return m
}

// Add records e in the file, replacing the entry of the same pattern if
// there is one (in place), appending it otherwise. e.Grant must be
// AlwaysThisProject and e.Expiry Never (or zero): project grants do not
// expire. After a successful write, the allowlist holds the file as
// written, edits by others included.
//
// An entry past its environment's ceiling (e.Environment, or a @shell key
// whatever it says) is refused with a *ceiling.Violation, of class
// ceiling.ErrViolation, and the file is kept as it was.
func (p *ProjectAllowlist) Add(e Entry) error {
	e, err := e.normalize(ceiling.AlwaysThisProject)
	if err != nil {
		return err
	}
	if err := e.checkCeiling(); err != nil {
		return err
	}
	if e.Expiry != Never {
		return fmt.Errorf("entry %s: a project grant does not expire (expiry %d): %w", e.Pattern, e.Expiry, ErrInvalidEntry)
	}
	return p.update(func(d *projectDoc) bool {
		value := encodeProjectValue(e)
		for i := range d.entries {
			if d.entries[i].entry.Pattern == e.Pattern {
				d.entries[i].entry, d.entries[i].raw = e, value
				return true
			}
		}
		d.entries = append(d.entries, projectEntry{text: e.Pattern.String(), raw: value, entry: e})
		return true
	})
}

// Remove deletes the entry whose pattern is pattern (as keys.ParsePattern reads
// it; the pattern, not the text, is compared) and reports whether there was
// one. The file is not written when there was none.
func (p *ProjectAllowlist) Remove(pattern string) (bool, error) {
	pat, err := keys.ParsePattern(pattern)
	if err != nil {
		return false, err
	}
	found := false
	err = p.update(func(d *projectDoc) bool {
		i := slices.IndexFunc(d.entries, func(pe projectEntry) bool { return pe.entry.Pattern == pat })
		if i < 0 {
			return false
		}
		d.entries, found = slices.Delete(d.entries, i, i+1), true
		return true
	})
	return found, err
}

// update runs change on the file as it is now, under the lock, and writes
// the result when change reports a change.
func (p *ProjectAllowlist) update(change func(*projectDoc) bool) error {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()

	// The lock and the temporary file live in the project's .ccrun/,
	// ignored by git, not beside the file at the project's root.
	dir, base := filepath.Split(p.path)
	house := filepath.Join(dir, dotccrun.Name)
	if err := dotccrun.Mkdir(house, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", p.path, err)
	}
	lockPath := filepath.Join(house, base+".lock")
	lk := flock.New(lockPath,
		flock.SetFlag(os.O_CREATE|os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC),
		flock.SetPermissions(0o644))
	if err := lk.Lock(); err != nil {
		return fmt.Errorf("lock %s: %w", lockPath, err)
	}
	defer lk.Unlock()

	perm, owner := os.FileMode(0o644), fs.FileInfo(nil)
	if fi, err := os.Stat(p.path); err == nil {
		perm, owner = fi.Mode().Perm(), fi
	}
	doc, err := readProjectDoc(p.path)
	if err != nil {
		return err
	}
	p.mu.RLock()
	t := p.trust
	p.mu.RUnlock()
	var prev string
	if t != nil {
		if prev, err = p.looseningDigest(doc); err != nil {
			prev = "" // not computable: nothing to carry over
		}
	}
	var rebindErr error
	if change(doc) {
		if perm&0o200 == 0 {
			return fmt.Errorf("write %s: the file is read-only (mode %04o): %w", p.path, perm, fs.ErrPermission)
		}
		data := doc.encode()
		if err := writeFileAtomic(p.path, house, data, perm, owner); err != nil {
			return fmt.Errorf("write %s: %w", p.path, err)
		}
		doc.data = data
		switch {
		case t == nil:
		case prev == "" || !t.Trusted(prev):
			rebindErr = fmt.Errorf("the change counts only once the person trusts the project: %w: %w", ErrNotTrusted, errdefs.ErrPermissionDenied)
		default:
			if next, err := p.looseningDigest(doc); err != nil {
				rebindErr = err
			} else if next != prev {
				rebindErr = t.Rebind(prev, next)
			}
		}
	}
	p.mu.Lock()
	p.entries, p.loadErr = doc.entryList(), nil
	p.judge(doc)
	p.mu.Unlock()
	if rebindErr != nil {
		return fmt.Errorf("%s written, but the project's trust does not cover it (run `ccrun trust`): %w", p.path, rebindErr)
	}
	return nil
}

// projectDoc is ccrun.json as read: its top-level members in order, raw,
// and the allowlist member decoded.
type projectDoc struct {
	data    []byte // the file as read or written; nil: no file
	members []projectMember
	allow   int // index of the allowlist member in members; -1: none yet
	entries []projectEntry
}

type projectMember struct {
	name string
	raw  []byte
}

type projectEntry struct {
	text  string // the pattern as written
	raw   []byte // the value as written
	entry Entry
}

func (d *projectDoc) entryList() []Entry {
	out := make([]Entry, len(d.entries))
	for i, pe := range d.entries {
		out[i] = pe.entry
	}
	return out
}

// readProjectDoc reads and parses the file at path; a missing file is an
// empty document.
func readProjectDoc(path string) (*projectDoc, error) {
	data, err := ReadProjectFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &projectDoc{allow: -1}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read project file: %w", err)
	}
	doc, err := parseProjectDoc(path, data)
	if err != nil {
		return nil, err
	}
	doc.data = data
	return doc, nil
}

// parseProjectDoc parses ccrun.json, keeping every value's bytes as
// written.
func parseProjectDoc(file string, data []byte) (*projectDoc, error) {
	top, err := jsonpos.Parse(data)
	if err != nil {
		return nil, syntaxError(file, data, err)
	}
	doc := &projectDoc{allow: -1}
	if top.Kind != jsonpos.Object {
		return nil, configErrorAt(file, data, top.Start, errors.New("want a JSON object at the top"))
	}
	for _, m := range top.Members {
		if m.Name == "allowlist" {
			if doc.allow >= 0 {
				return nil, configErrorAt(file, data, m.At, errors.New(`"allowlist" appears twice`))
			}
			doc.allow = len(doc.members)
			entries, err := parseProjectAllowlist(file, data, m.Value)
			if err != nil {
				return nil, err
			}
			doc.entries = entries
		}
		doc.members = append(doc.members, projectMember{name: m.Name, raw: m.Value.Raw})
	}
	return doc, nil
}

// ProjectEntries returns the allowlist entries of the text of a
// ccrun.json, in file order; an error is a *ConfigError placed in file.
func ProjectEntries(file string, data []byte) ([]Entry, error) {
	doc, err := parseProjectDoc(file, data)
	if err != nil {
		return nil, err
	}
	return doc.entryList(), nil
}

// parseProjectAllowlist parses the allowlist member's value v, a value of
// data.
func parseProjectAllowlist(file string, data []byte, v *jsonpos.Value) ([]projectEntry, error) {
	if v.Kind != jsonpos.Object {
		return nil, configErrorAt(file, data, v.Start,
			errors.New(`"allowlist" must be an object of pattern: grant (e.g. {"capability:fmt-json": "AlwaysThisProject"})`))
	}
	entries := make([]projectEntry, 0, len(v.Members))
	seen := make(map[keys.Pattern]int, len(v.Members))
	for _, m := range v.Members {
		pat, err := keys.ParsePattern(m.Name)
		if err != nil {
			return nil, configErrorAt(file, data, m.At,
				fmt.Errorf("allowlist entry %s: %w", strconv.QuoteToASCII(m.Name), err))
		}
		e, err := decodeProjectValue(m.Value)
		if err != nil {
			return nil, configErrorAt(file, data, m.Value.Start,
				fmt.Errorf("allowlist entry %s: %w", strconv.QuoteToASCII(m.Name), err))
		}
		e.Pattern = pat
		if prev, dup := seen[pat]; dup {
			return nil, configErrorAt(file, data, m.At,
				fmt.Errorf("allowlist entry %s: pattern already granted as %s",
					strconv.QuoteToASCII(m.Name), strconv.QuoteToASCII(entries[prev].text)))
		}
		seen[pat] = len(entries)
		entries = append(entries, projectEntry{text: m.Name, raw: m.Value.Raw, entry: e})
	}
	return entries, nil
}

// decodeProjectValue reads "AlwaysThisProject" or {"grant": …, "digest": …}.
func decodeProjectValue(v *jsonpos.Value) (Entry, error) {
	e := Entry{Expiry: Never}
	var grant string
	switch v.Kind {
	case jsonpos.String:
		grant, _ = v.Text()
	case jsonpos.Object:
		hasGrant := false
		for _, m := range v.Members {
			if m.Name != "grant" && m.Name != "digest" {
				return e, fmt.Errorf("unknown field %s: want {\"grant\": …, \"digest\": …}", strconv.QuoteToASCII(m.Name))
			}
			str, ok := m.Value.Text()
			if !ok {
				return e, fmt.Errorf("%q must be a string", m.Name)
			}
			if m.Name == "grant" {
				grant, hasGrant = str, true
				continue
			}
			e.Digest = str
			if !validDigest(e.Digest) {
				return e, fmt.Errorf("digest %s: want sha256: and 64 lowercase hex digits", strconv.QuoteToASCII(e.Digest))
			}
		}
		if !hasGrant {
			return e, errors.New(`no "grant"`)
		}
	default:
		return e, errors.New(`want a grant name ("AlwaysThisProject") or {"grant": …, "digest": …}`)
	}
	g, err := ceiling.ParseGrant(grant)
	if err != nil {
		return e, err
	}
	if g != ceiling.AlwaysThisProject {
		return e, fmt.Errorf("grant %s cannot be kept in a project file: want AlwaysThisProject", g)
	}
	e.Grant = g
	return e, nil
}

// encodeProjectValue writes e's allowlist value.
func encodeProjectValue(e Entry) []byte {
	if e.Digest == "" {
		return jsonString(e.Grant.String())
	}
	return []byte(`{"grant": ` + string(jsonString(e.Grant.String())) + `, "digest": ` + string(jsonString(e.Digest)) + `}`)
}

// encode writes the document with two-space indentation, keeping every
// member but the allowlist as it was read.
func (d *projectDoc) encode() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	members := d.members
	allow := d.allow
	if allow < 0 {
		allow = len(members)
		members = append(slices.Clip(members), projectMember{name: "allowlist"})
	}
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n  ")
		b.Write(jsonString(m.name))
		b.WriteString(": ")
		if i != allow {
			b.Write(m.raw)
			continue
		}
		if len(d.entries) == 0 {
			b.WriteString("{}")
			continue
		}
		b.WriteByte('{')
		for j, pe := range d.entries {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString("\n    ")
			b.Write(jsonString(pe.text))
			b.WriteString(": ")
			b.Write(pe.raw)
		}
		b.WriteString("\n  }")
	}
	if len(members) > 0 {
		b.WriteByte('\n')
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// jsonString encodes s as a JSON string, without HTML escaping.
func jsonString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}
