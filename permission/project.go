package permission

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

	"github.com/gofrs/flock"

	"github.com/ccrun/ccrun/ceiling"
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
// ParsePattern reads it) to either a grant name or, for a grant bound to
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
// checked here: the gate and "ccrun allowlist lint" call ceiling.Check on
// Entries.
//
// # Reading
//
// A missing file is an empty allowlist. A malformed one is a *ConfigError
// of class ErrInvalidConfig naming the file, line and column: JSON syntax,
// an allowlist that is not an object, an unknown grant name, an invalid
// pattern, a bad digest, a repeated pattern, an unknown field in an entry.
// Edits by hand are not seen until Reload is called.
//
// # Writing
//
// Add and Remove take an exclusive lock (flock(2) on the sibling file
// .ccrun.json.lock, created on first use and never removed), re-read the
// file as it is now, apply the change, write the result to a temp file in
// the same directory, fsync it and rename it over ccrun.json. So concurrent
// writers in any number of processes lose nothing, and a crash leaves the
// old file (at worst with a stray .ccrun.json.tmp-* file beside it, which
// is ignored). A malformed file is never written over. Every other
// top-level member of ccrun.json is kept byte for byte and in its order;
// existing allowlist entries keep their order and text, new ones are
// appended. The file is written with two-space indentation. A symbolic
// link at ccrun.json is replaced by a regular file.
//
// A ProjectAllowlist is safe for concurrent use.
type ProjectAllowlist struct {
	path string

	writeMu sync.Mutex // serializes this value's writers; flock serializes processes

	mu      sync.RWMutex
	entries []Entry
	loadErr error // the last Reload's error: the allowlist is then empty
}

// LoadProject reads the allowlist of the ccrun.json at path (see
// ProjectFile). A missing file is an empty allowlist; a malformed one is an
// error of class ErrInvalidConfig.
func LoadProject(path string) (*ProjectAllowlist, error) {
	p := &ProjectAllowlist{path: path}
	if err := p.Reload(); err != nil {
		return nil, err
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
	return nil
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
func (p *ProjectAllowlist) Lookup(key Key, digest string, now time.Time) Match {
	p.mu.RLock()
	defer p.mu.RUnlock()
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
func (p *ProjectAllowlist) Add(e Entry) error {
	e, err := e.normalize(AlwaysThisProject)
	if err != nil {
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

// Remove deletes the entry whose pattern is pattern (as ParsePattern reads
// it; the pattern, not the text, is compared) and reports whether there was
// one. The file is not written when there was none.
func (p *ProjectAllowlist) Remove(pattern string) (bool, error) {
	pat, err := ParsePattern(pattern)
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

	dir, base := filepath.Split(p.path)
	lockPath := filepath.Join(dir, "."+base+".lock")
	lk := flock.New(lockPath,
		flock.SetFlag(os.O_CREATE|os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC),
		flock.SetPermissions(0o644))
	if err := lk.Lock(); err != nil {
		return fmt.Errorf("lock %s: %w", lockPath, err)
	}
	defer lk.Unlock()

	perm := os.FileMode(0o644)
	if fi, err := os.Stat(p.path); err == nil {
		perm = fi.Mode().Perm()
	}
	doc, err := readProjectDoc(p.path)
	if err != nil {
		return err
	}
	if change(doc) {
		if err := writeFileAtomic(p.path, doc.encode(), perm); err != nil {
			return fmt.Errorf("write %s: %w", p.path, err)
		}
	}
	p.mu.Lock()
	p.entries, p.loadErr = doc.entryList(), nil
	p.mu.Unlock()
	return nil
}

// projectDoc is ccrun.json as read: its top-level members in order, raw,
// and the allowlist member decoded.
type projectDoc struct {
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
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &projectDoc{allow: -1}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read project file: %w", err)
	}
	return parseProjectDoc(path, data)
}

// parseProjectDoc parses ccrun.json. Syntax is checked on the whole text
// first, so that the token walk below meets only well-formed JSON.
func parseProjectDoc(file string, data []byte) (*projectDoc, error) {
	if err := checkJSONSyntax(file, data); err != nil {
		return nil, err
	}
	doc := &projectDoc{allow: -1}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		return nil, configErrorAt(file, data, skipSpace(data, 0), errors.New("want a JSON object at the top"))
	}
	for dec.More() {
		nameAt := skipSpace(data, dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return nil, configErrorAt(file, data, nameAt, err)
		}
		name, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, configErrorAt(file, data, nameAt, err)
		}
		if name == "allowlist" {
			if doc.allow >= 0 {
				return nil, configErrorAt(file, data, nameAt, errors.New(`"allowlist" appears twice`))
			}
			doc.allow = len(doc.members)
			valueAt := dec.InputOffset() - int64(len(raw))
			entries, err := parseProjectAllowlist(file, data, valueAt, raw)
			if err != nil {
				return nil, err
			}
			doc.entries = entries
		}
		doc.members = append(doc.members, projectMember{name: name, raw: raw})
	}
	return doc, nil
}

// parseProjectAllowlist parses the allowlist member, raw, found at byte
// offset base of data.
func parseProjectAllowlist(file string, data []byte, base int64, raw []byte) ([]projectEntry, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		return nil, configErrorAt(file, data, base,
			errors.New(`"allowlist" must be an object of pattern: grant (e.g. {"capability:fmt-json": "AlwaysThisProject"})`))
	}
	var entries []projectEntry
	for dec.More() {
		keyAt := base + skipSpace(raw, dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return nil, configErrorAt(file, data, keyAt, err)
		}
		text, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, configErrorAt(file, data, keyAt, err)
		}
		valueAt := base + dec.InputOffset() - int64(len(value))
		where := "allowlist entry " + strconv.QuoteToASCII(text)
		pat, err := ParsePattern(text)
		if err != nil {
			return nil, configErrorAt(file, data, keyAt, fmt.Errorf("%s: %w", where, err))
		}
		e, err := decodeProjectValue(value)
		if err != nil {
			return nil, configErrorAt(file, data, valueAt, fmt.Errorf("%s: %w", where, err))
		}
		e.Pattern = pat
		for _, prev := range entries {
			if prev.entry.Pattern == pat {
				return nil, configErrorAt(file, data, keyAt,
					fmt.Errorf("%s: pattern already granted as %s", where, strconv.QuoteToASCII(prev.text)))
			}
		}
		entries = append(entries, projectEntry{text: text, raw: value, entry: e})
	}
	return entries, nil
}

// projectValue is the object form of an allowlist value.
type projectValue struct {
	Grant  *string `json:"grant"`
	Digest *string `json:"digest,omitempty"`
}

// decodeProjectValue reads "AlwaysThisProject" or {"grant": …, "digest": …}.
func decodeProjectValue(raw []byte) (Entry, error) {
	e := Entry{Expiry: Never}
	var grant string
	switch raw[0] {
	case '"':
		if err := json.Unmarshal(raw, &grant); err != nil {
			return e, err
		}
	case '{':
		var v projectValue
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			return e, fmt.Errorf(`want {"grant": …, "digest": …}: %w`, err)
		}
		if v.Grant == nil {
			return e, errors.New(`no "grant"`)
		}
		grant = *v.Grant
		if v.Digest != nil {
			if !validDigest(*v.Digest) {
				return e, fmt.Errorf("digest %s: want sha256: and 64 lowercase hex digits", strconv.QuoteToASCII(*v.Digest))
			}
			e.Digest = *v.Digest
		}
	default:
		return e, errors.New(`want a grant name ("AlwaysThisProject") or {"grant": …, "digest": …}`)
	}
	g, err := ceiling.ParseGrant(grant)
	if err != nil {
		return e, err
	}
	if g != AlwaysThisProject {
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

// skipSpace returns the offset of the first byte at or after off that is
// not JSON white space or a comma.
func skipSpace(data []byte, off int64) int64 {
	for off < int64(len(data)) {
		switch data[off] {
		case ' ', '\t', '\r', '\n', ',':
			off++
		default:
			return off
		}
	}
	return off
}
