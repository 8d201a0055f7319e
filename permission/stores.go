package permission

import (
	"errors"
	"io/fs"
	"time"

	"github.com/ccrun/ccrun/permission/allowlist"
)

// The stores — the project allowlist and the session allowlists — are
// package allowlist's; their names are repeated here so that most callers
// need only this package. See package allowlist for their files, locking
// and pruning.
type (
	// Entry is one grant kept in an allowlist.
	Entry = allowlist.Entry
	// LookupResult is the answer of an allowlist's Lookup.
	LookupResult = allowlist.LookupResult
	// ConfigError is a problem at a place in a configuration file.
	ConfigError = allowlist.ConfigError
	// ProjectAllowlist is the allowlist object of a project's ccrun.json.
	ProjectAllowlist = allowlist.ProjectAllowlist
	// SessionAllowlist holds the grants a person made AlwaysThisSession.
	SessionAllowlist = allowlist.SessionAllowlist
	// SessionOption configures NewSessionAllowlist, StartSession and OpenSession.
	SessionOption = allowlist.SessionOption
	// Trust is where the person's trust in a project is kept.
	Trust = allowlist.Trust
)

// Never is the Expiry of an entry that lasts as long as its allowlist.
const Never = allowlist.Never

// DefaultSessionLifetime is how long a session lasts when StartSession is
// given no lifetime.
const DefaultSessionLifetime = allowlist.DefaultSessionLifetime

// NotTrusted is the reason given while a project's files loosen something
// the person has not trusted.
const NotTrusted = allowlist.NotTrusted

// Error classes of the stores. Test them with errors.Is.
var (
	// ErrInvalidEntry: an Entry given to Add cannot be kept.
	ErrInvalidEntry = allowlist.ErrInvalidEntry
	// ErrSessionNotFound: the session does not exist, was ended, or its
	// lifetime ran out.
	ErrSessionNotFound = allowlist.ErrSessionNotFound
	// ErrUnsafeStorage: a session directory or file could be read or
	// replaced by someone else than the current user.
	ErrUnsafeStorage = allowlist.ErrUnsafeStorage
	// ErrNotTrusted: a project allowlist change made while the project is
	// not trusted; also of class ErrPermissionDenied.
	ErrNotTrusted = allowlist.ErrNotTrusted
)

// ProjectFile returns the path of the project file of a project rooted at
// projectDir: projectDir/ccrun.json.
func ProjectFile(projectDir string) string { return allowlist.ProjectFile(projectDir) }

// LoadProject reads the allowlist of the ccrun.json at path
// (allowlist.LoadProject).
func LoadProject(path string) (*ProjectAllowlist, error) { return allowlist.LoadProject(path) }

// OpenProject is LoadProject then SetProjectTrust without reading a file
// again: project is the settings layer LoadSettings read from path (nil
// when the file is absent), digest the Loosening digest of that read with
// the ccrun.local.json at localPath (ProjectLoosening), which t judges.
func OpenProject(path string, project *Settings, t Trust, localPath, digest string) (*ProjectAllowlist, error) {
	var data []byte
	if project != nil {
		data = project.text()
	}
	return allowlist.OpenProject(path, data, t, LooseningDigest(path, localPath), digest)
}

// SetProjectTrust makes p's entries count only while the project is
// trusted by t; localPath is the project's ccrun.local.json, whose
// loosening the digest covers too. It reads the file again.
func SetProjectTrust(p *ProjectAllowlist, t Trust, localPath string) error {
	return p.SetTrust(t, LooseningDigest(p.Path(), localPath))
}

// LooseningDigest returns how a project allowlist digests what the project
// loosens: the Digest of the ProjectLoosening of a ccrun.json text (read
// as the file at path; nil: no file) and of the ccrun.local.json at
// localPath ("": none), as it is on disk at the time.
func LooseningDigest(path, localPath string) allowlist.DigestFunc {
	return func(text []byte) (string, error) {
		var project, local *Settings
		if text != nil {
			s, err := ParseSettings(text, path, OriginProject)
			if err != nil {
				return "", err
			}
			project = s
		}
		if localPath != "" {
			s, err := LoadSettings(localPath, OriginLocal)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", err
			}
			local = s
		}
		l, err := ProjectLoosening(project, local)
		if err != nil {
			return "", err
		}
		return l.Digest(), nil
	}
}

// DefaultSessionDir returns where sessions are kept
// (allowlist.DefaultSessionDir).
func DefaultSessionDir() string { return allowlist.DefaultSessionDir() }

// WithSessionClock sets the clock a session reads (default time.Now).
func WithSessionClock(now func() time.Time) SessionOption { return allowlist.WithSessionClock(now) }

// NewSessionAllowlist returns an empty session that lives in memory only.
func NewSessionAllowlist(opts ...SessionOption) *SessionAllowlist {
	return allowlist.NewSessionAllowlist(opts...)
}

// StartSession creates a session with a new random id in dir
// (allowlist.StartSession).
func StartSession(dir string, lifetime time.Duration, opts ...SessionOption) (*SessionAllowlist, error) {
	return allowlist.StartSession(dir, lifetime, opts...)
}

// OpenSession opens the session id in dir, as another process started it
// (allowlist.OpenSession).
func OpenSession(dir, id string, opts ...SessionOption) (*SessionAllowlist, error) {
	return allowlist.OpenSession(dir, id, opts...)
}

// PruneSessions removes the files of the sessions in dir whose lifetime
// has run out and returns their ids (allowlist.PruneSessions).
func PruneSessions(dir string, opts ...SessionOption) ([]string, error) {
	return allowlist.PruneSessions(dir, opts...)
}

// ExpiredSessions lists the sessions in dir whose lifetime has run out
// (allowlist.ExpiredSessions).
func ExpiredSessions(dir string, opts ...SessionOption) ([]string, error) {
	return allowlist.ExpiredSessions(dir, opts...)
}
