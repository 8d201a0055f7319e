package permission

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
)

// Loosening is what a project's own files (ccrun.json, ccrun.local.json)
// loosen past the defaults, one line each (Settings.Loosens). It counts
// only once the person trusted exactly these lines (README.md, "Workspace
// trust").
type Loosening struct {
	// Lines are what the files loosen, prefixed with the file's base name,
	// in file order: ccrun.json first, then ccrun.local.json.
	Lines []string
	// Ignored are what the files say that would loosen but the gate never
	// counts, each with why (Settings.Ignored); not in the digest.
	Ignored []string
}

// ProjectLoosening is the Loosening of a project's two layers; either may
// be nil (no such file).
func ProjectLoosening(project, local *Settings) (*Loosening, error) {
	l := &Loosening{}
	for _, s := range []*Settings{project, local} {
		if s == nil {
			continue
		}
		lines, err := s.Loosens()
		if err != nil {
			return nil, err
		}
		l.Lines = append(l.Lines, lines...)
		ignored, err := s.Ignored()
		if err != nil {
			return nil, err
		}
		l.Ignored = append(l.Ignored, ignored...)
	}
	return l, nil
}

// ReadLoosening reads the Loosening of the project rooted at dir (its
// ccrun.json and ccrun.local.json, as LoadSettings reads them).
func ReadLoosening(dir string) (*Loosening, error) {
	var layers [2]*Settings
	for i, f := range []struct {
		name   string
		origin Origin
	}{{"ccrun.json", OriginProject}, {"ccrun.local.json", OriginLocal}} {
		s, err := LoadSettings(filepath.Join(dir, f.name), f.origin)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		layers[i] = s
	}
	return ProjectLoosening(layers[0], layers[1])
}

// Empty reports whether nothing is loosened: there is then nothing to
// trust, and the project counts as trusted.
func (l *Loosening) Empty() bool { return len(l.Lines) == 0 }

// Digest is "sha256:" and the hex SHA-256 of the lines (as a JSON array):
// what a trust record is bound to. It depends on what the files loosen,
// not on where the project is, so a CI run can be given it in advance.
func (l *Loosening) Digest() string {
	lines := l.Lines
	if lines == nil {
		lines = []string{}
	}
	data, _ := json.Marshal(lines) // strings always encode
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// EmptyDigest is the Digest of a Loosening with no lines.
var EmptyDigest = (&Loosening{}).Digest()
