package allowlist

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/errclass"
	"github.com/ccrun/ccrun/internal/jsonpos"
	"github.com/ccrun/ccrun/permission/keys"
)

// Never is the Expiry of an entry that lasts as long as its allowlist: the
// session's lifetime, or the project file.
const Never int64 = -1

// Error classes of the allowlists. Test them with errors.Is.
var (
	// ErrInvalidEntry: an Entry given to Add cannot be kept (no pattern,
	// a grant that does not persist, a malformed digest or expiry).
	ErrInvalidEntry = errdefs.ErrInvalidArgument.WithMessage("invalid allowlist entry")
	// ErrSessionNotFound: the session does not exist, was ended, or its
	// lifetime ran out.
	ErrSessionNotFound = errdefs.ErrNotFound.WithMessage("session not found")
	// ErrUnsafeStorage: a session directory or file could be read or
	// replaced by someone else than the current user (wrong owner, group or
	// other permission bits, a symbolic link). ccrun refuses to use it.
	ErrUnsafeStorage = errdefs.ErrPermissionDenied.WithMessage("unsafe session storage")
)

// Entry is one grant kept in an allowlist: the pattern it covers, the grant
// the person chose, until when, and the content it is bound to.
//
// The zero Expiry is taken as Never by Add, so Entry{Pattern: p, Grant: g}
// lasts as long as the allowlist holding it.
type Entry struct {
	// Pattern is what the grant covers, matched with keys.Pattern.Match.
	Pattern keys.Pattern
	// Grant is AlwaysThisSession or AlwaysThisProject; Once and Deny are
	// never kept.
	Grant ceiling.Grant
	// Expiry is the unix time (seconds) from which the entry no longer
	// counts, or Never (-1).
	Expiry int64
	// Digest is the content the grant is bound to ("sha256:" and 64
	// lowercase hex digits: a capability's manifest and artifact), or ""
	// for none. A bound entry counts only for a call of that same digest.
	Digest string
	// Environment, when set, is where the calls Pattern covers run:
	// ProjectAllowlist.Add refuses an entry past its ceiling. When empty,
	// Add goes by what the pattern tells on its own (a run_command key is
	// a @shell key). It is not kept in the files: the gate checks the
	// ceiling again at every lookup.
	Environment ceiling.Environment
}

// String writes e for a person: pattern, grant, and digest and expiry when set.
func (e Entry) String() string {
	var b strings.Builder
	b.WriteString(e.Pattern.String())
	b.WriteString(" → ")
	b.WriteString(e.Grant.String())
	if e.Digest != "" {
		b.WriteString(" @")
		b.WriteString(e.Digest)
	}
	if e.Expiry != Never {
		b.WriteString(" until ")
		b.WriteString(time.Unix(e.Expiry, 0).UTC().Format(time.RFC3339))
	}
	return b.String()
}

// LookupResult is the answer of an allowlist's Lookup.
//
// OK is set when an entry matched the key and counts: Entry is that entry.
// Problems lists, for a person and the audit log, every matching entry that
// did not count and why: expired, "changed since approval" (its digest is
// not the call's), or not bound to a digest while the call is. Problems may
// be non-empty when OK is set (another entry counted). The zero value is
// "nothing matched".
type LookupResult struct {
	OK       bool
	Entry    Entry
	Problems []string
}

// normalize checks e for keeping in an allowlist and fills a zero Expiry.
// min is the least grant the allowlist keeps.
func (e Entry) normalize(min ceiling.Grant) (Entry, error) {
	bad := func(format string, args ...any) (Entry, error) {
		return Entry{}, fmt.Errorf("entry %s: %s: %w", e.Pattern, fmt.Sprintf(format, args...), ErrInvalidEntry)
	}
	if e.Pattern.Tool == "" || e.Pattern.Action == "" {
		return bad("no pattern")
	}
	if _, err := keys.ParsePattern(e.Pattern.String()); err != nil {
		return bad("pattern does not read back: %v", err)
	}
	if e.Grant < min || e.Grant > ceiling.AlwaysThisProject {
		return bad("grant %s cannot be kept here (want %s)", e.Grant, grantsFrom(min))
	}
	switch {
	case e.Expiry == 0:
		e.Expiry = Never
	case e.Expiry < 0 && e.Expiry != Never:
		return bad("expiry %d: want a unix time or Never (-1)", e.Expiry)
	}
	if e.Digest != "" && !validDigest(e.Digest) {
		return bad("digest %q: want sha256: and 64 lowercase hex digits", e.Digest)
	}
	return e, nil
}

// checkCeiling refuses e past its environment's ceiling (e.Environment,
// or @shell for a run_command pattern whatever it says) with a
// *ceiling.Violation; an entry whose environment is not known is refused
// too (ceiling.ErrUnknownEnvironment).
func (e Entry) checkCeiling() error {
	env := e.Environment
	if e.Pattern.Tool == keys.ShellTool {
		env = ceiling.Shell
	}
	if env == "" {
		return nil
	}
	if err := ceiling.Check(env, e.Pattern.String(), e.Grant); err != nil {
		return fmt.Errorf("entry %s: %w", e.Pattern, err)
	}
	return nil
}

func grantsFrom(min ceiling.Grant) string {
	if min >= ceiling.AlwaysThisProject {
		return ceiling.AlwaysThisProject.String()
	}
	return ceiling.AlwaysThisSession.String() + " or " + ceiling.AlwaysThisProject.String()
}

// validDigest reports whether d is "sha256:" and 64 lowercase hex digits.
func validDigest(d string) bool {
	hex, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hex) != 64 {
		return false
	}
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// lookupEntries is the lookup shared by both allowlists: the first
// matching entry that counts wins; every other matching entry that does
// not count is reported. where names the allowlist in problems.
func lookupEntries(entries []Entry, where string, key keys.Key, digest string, now time.Time) LookupResult {
	var m LookupResult
	for _, e := range entries {
		if !e.Pattern.Match(key) {
			continue
		}
		problem := entryProblem(e, digest, now)
		if problem == "" && !m.OK {
			m.OK, m.Entry = true, e
			continue
		}
		if problem != "" {
			m.Problems = append(m.Problems, fmt.Sprintf("%s: %s does not count for %s: %s", where, e.Pattern, key, problem))
		}
	}
	return m
}

// entryProblem says why e does not count for a call of digest at now, or "".
func entryProblem(e Entry, digest string, now time.Time) string {
	switch {
	case e.Grant < ceiling.AlwaysThisSession:
		return fmt.Sprintf("grant %s is not kept in an allowlist", e.Grant)
	case e.Expiry != Never && now.Unix() >= e.Expiry:
		return "expired at " + time.Unix(e.Expiry, 0).UTC().Format(time.RFC3339)
	case digest != "" && e.Digest == "":
		return fmt.Sprintf("granted without a content digest, and the call runs content %s; ask again", digest)
	case digest == "" && e.Digest != "":
		return fmt.Sprintf("bound to content %s, and the call names no digest", e.Digest)
	case digest != e.Digest:
		return fmt.Sprintf("changed since approval (approved %s, now %s)", e.Digest, digest)
	}
	return ""
}

// ConfigError is a problem at a place in a configuration file. Its classes
// are ccrun.ErrInvalidConfig and those of Err (ErrInvalidKey, ceiling's
// ErrUnknownGrant, …): test them with errors.Is.
type ConfigError struct {
	File   string // the file, as it was named to ccrun
	Line   int    // 1-based; 0 when the problem has no place in the text
	Column int    // 1-based, in characters
	Err    error  // what is wrong
}

// Error places the problem in its file (file:line:column when it has a
// place) and ends with ccrun.ErrInvalidConfig's text.
func (e *ConfigError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %v: %v", e.File, e.Err, errclass.InvalidConfig)
	}
	return fmt.Sprintf("%s:%d:%d: %v: %v", e.File, e.Line, e.Column, e.Err, errclass.InvalidConfig)
}

// Unwrap returns Err and ccrun.ErrInvalidConfig.
func (e *ConfigError) Unwrap() []error { return []error{e.Err, errclass.InvalidConfig} }

// configErrorAt makes a *ConfigError for byte offset off of data.
func configErrorAt(file string, data []byte, off int, err error) *ConfigError {
	line, col := jsonpos.LineColumn(data, off)
	return &ConfigError{File: file, Line: line, Column: col, Err: err}
}

// checkJSONSyntax returns a *ConfigError placed at the first syntax error
// of data, or nil when data is one well-formed JSON value.
func checkJSONSyntax(file string, data []byte) error {
	return syntaxError(file, data, jsonpos.Check(data))
}

// syntaxError turns jsonpos's error into a *ConfigError of file; nil
// stays nil.
func syntaxError(file string, data []byte, err error) error {
	var je *jsonpos.Error
	if errors.As(err, &je) {
		return configErrorAt(file, data, je.Offset, errors.New(je.Msg))
	}
	if err != nil {
		return &ConfigError{File: file, Err: err}
	}
	return nil
}

// testHookBeforeRename, when set, runs after a temp file is written and
// synced and before it is renamed over its target (tests simulate a crash).
var testHookBeforeRename func(tmp string)

// writeFileAtomic replaces path with data: a temp file in tmpDir (path's
// own directory when ""; it must be on the same file system), fsync, chmod
// perm, rename over path, fsync of the directory. A crash at any point
// leaves either the old or the new file, and at worst a stray temp file
// named .BASE.tmp-* in tmpDir. When like is not nil, the new file is given
// like's owner and group if the process may (root, or a group it is in);
// failing that, it keeps the process's.
func writeFileAtomic(path, tmpDir string, data []byte, perm os.FileMode, like os.FileInfo) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if tmpDir == "" {
		tmpDir = dir
	}
	f, err := os.CreateTemp(tmpDir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if st, ok := statOf(like); ok {
		_ = f.Chown(int(st.Uid), int(st.Gid)) // best effort: the owner is a courtesy, not a guarantee
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if testHookBeforeRename != nil {
		testHookBeforeRename(tmp)
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}

// statOf returns fi's system stat, if any.
func statOf(fi os.FileInfo) (*syscall.Stat_t, bool) {
	if fi == nil {
		return nil, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st, ok
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err // some file systems cannot sync a directory: not an error
	}
	return nil
}
