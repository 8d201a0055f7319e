package allowlist

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gofrs/flock"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission/keys"
)

// DefaultSessionLifetime is how long a session lasts when StartSession is
// given no lifetime: a working day, so that a forgotten session does not
// keep its grants for good.
const DefaultSessionLifetime = 12 * time.Hour

// DefaultSessionDir returns where sessions are kept:
// $XDG_RUNTIME_DIR/ccrun/sessions when XDG_RUNTIME_DIR is set to an
// absolute path (a directory only the user can enter, emptied at logout),
// else os.TempDir()/ccrun-UID/sessions.
func DefaultSessionDir() string {
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		return filepath.Join(x, "ccrun", "sessions")
	}
	return filepath.Join(os.TempDir(), "ccrun-"+strconv.Itoa(os.Getuid()), "sessions")
}

// SessionOption configures NewSessionAllowlist, StartSession and OpenSession.
type SessionOption func(*sessionConfig)

type sessionConfig struct {
	now func() time.Time
}

// WithSessionClock sets the clock a session reads to decide whether its
// lifetime ran out when it is started, opened or added to. Default:
// time.Now. Lookup takes the time as an argument instead.
func WithSessionClock(now func() time.Time) SessionOption {
	return func(c *sessionConfig) { c.now = now }
}

// SessionAllowlist holds the grants a person made AlwaysThisSession:
// pattern → entry with an expiry. Expired entries are ignored.
//
// A session made by NewSessionAllowlist lives in memory only and never
// expires. One made by StartSession also lives in a file, so that the
// ccrun processes of one agent (each "ccrun exec" is a process) share it:
// OpenSession with the same directory and id reads it back.
//
// # On disk
//
// A session is the file DIR/ID.json, where ID is 32 lowercase hex digits
// (128 random bits), beside its lock file DIR/ID.lock:
//
//	{
//	  "version": 1,
//	  "id": "5f0c…",
//	  "created": 1764410000,
//	  "expires": 1764453200,
//	  "entries": [
//	    {"pattern": "run_command:git", "grant": "AlwaysThisSession", "expiry": -1},
//	    {"pattern": "capability:fmt-json", "grant": "AlwaysThisSession", "expiry": -1, "digest": "sha256:…"}
//	  ]
//	}
//
// created and expires are unix seconds; an entry's expiry is unix seconds
// or -1 (until the session ends). DIR and every file in it must belong to
// the current user and be closed to group and others (mode 0700 for
// directories, 0600 for files); DIR's ancestors must belong to the user or
// root and not be writable by others unless sticky (/tmp). Anything else,
// and a symbolic link in place of DIR or a file, is refused with
// ErrUnsafeStorage. A file that does not parse is an error of class
// ccrun.ErrInvalidConfig naming it; it is never read as empty.
//
// Add writes under an exclusive flock(2) of the lock file: it re-reads the
// file, merges, writes a temp file in DIR, fsyncs and renames it over. A
// session whose lifetime ran out counts as ended: Lookup finds nothing in
// it, OpenSession and Add fail with ErrSessionNotFound. Lookup notices
// grants added and the session ended by other processes (it checks the
// file's identity, and re-reads it when it changed).
//
// A SessionAllowlist is safe for concurrent use.
type SessionAllowlist struct {
	id      string
	dir     string // "" in memory
	path    string
	expires time.Time // zero: never
	now     func() time.Time

	writeMu sync.Mutex // serializes this value's writers; flock serializes processes

	mu      sync.RWMutex
	entries []Entry
	ended   bool
	stamp   fileStamp // identity of the file entries were read from
	loadErr error     // the last re-read's error: entries are then empty
}

// NewSessionAllowlist returns an empty session that lives in memory only,
// never expires, and has no id. Its clock (WithSessionClock) only decides
// which expired entries Add drops.
func NewSessionAllowlist(opts ...SessionOption) *SessionAllowlist {
	return &SessionAllowlist{now: sessionOptions(opts).now}
}

// StartSession creates a session with a new random id in dir (created mode
// 0700 if missing; see DefaultSessionDir) that ends after lifetime (zero
// or less: DefaultSessionLifetime).
func StartSession(dir string, lifetime time.Duration, opts ...SessionOption) (*SessionAllowlist, error) {
	cfg := sessionOptions(opts)
	if lifetime <= 0 {
		lifetime = DefaultSessionLifetime
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("session dir: %w", err)
	}
	if err := checkSessionDir(dir); err != nil {
		return nil, err
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("session id: %w", err)
	}
	id := hex.EncodeToString(b[:])
	now := cfg.now()
	s := newFileSession(dir, id, time.Unix(now.Add(lifetime).Unix(), 0), cfg) // whole seconds, as on disk
	f := sessionFile{Version: 1, ID: id, Created: now.Unix(), Expires: s.expires.Unix(), Entries: []sessionEntry{}}
	err := s.locked(func() error {
		if _, err := os.Lstat(s.path); err == nil {
			return fmt.Errorf("session %s already exists: %w", id, ErrUnsafeStorage) // 2^-128, or foul play
		}
		return s.write(f)
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// OpenSession opens the session id in dir, as another process started it.
// It fails with ErrSessionNotFound when there is no such session, it was
// ended, its lifetime ran out (the file is then removed) or id is not a
// session id; with ErrUnsafeStorage when dir or the file could be touched
// by someone else; with ccrun.ErrInvalidConfig when the file is corrupt.
func OpenSession(dir, id string, opts ...SessionOption) (*SessionAllowlist, error) {
	cfg := sessionOptions(opts)
	if !validSessionID(id) {
		return nil, fmt.Errorf("session id %s: want 32 lowercase hex digits: %w", strconv.QuoteToASCII(id), ErrSessionNotFound)
	}
	if err := checkSessionDir(dir); err != nil {
		return nil, err
	}
	s := newFileSession(dir, id, time.Time{}, cfg)
	f, stamp, err := s.read()
	if err != nil {
		return nil, err
	}
	s.expires = time.Unix(f.Expires, 0)
	if now := s.now(); !now.Before(s.expires) {
		_ = s.locked(s.remove)
		return nil, fmt.Errorf("session %s expired at %s: %w", id, s.expires.UTC().Format(time.RFC3339), ErrSessionNotFound)
	}
	s.entries, s.stamp = f.entryList(), stamp
	return s, nil
}

// PruneSessions removes the files of the sessions in dir whose lifetime
// has run out (OpenSession would remove each on its next use; a session
// nobody uses again would stay) and returns their ids. Files it cannot
// read as a session of this user are left where they are, and reported.
func PruneSessions(dir string, opts ...SessionOption) ([]string, error) {
	ids, err := sessionIDs(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, id := range ids {
		_, err := OpenSession(dir, id, opts...)
		switch {
		case err == nil:
		case errors.Is(err, ErrSessionNotFound):
			if _, serr := os.Lstat(filepath.Join(dir, id+".json")); errors.Is(serr, fs.ErrNotExist) {
				removed = append(removed, id)
			}
		default:
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// ExpiredSessions returns the ids of the sessions in dir whose lifetime
// has run out: the files PruneSessions would remove. It removes nothing
// (ccrun gc --dry-run). Files it cannot read as a session of this user
// are reported, as PruneSessions reports them.
func ExpiredSessions(dir string, opts ...SessionOption) ([]string, error) {
	cfg := sessionOptions(opts)
	ids, err := sessionIDs(dir)
	if err != nil {
		return nil, err
	}
	var expired []string
	var errs []error
	for _, id := range ids {
		f, _, err := newFileSession(dir, id, time.Time{}, cfg).read()
		switch {
		case err == nil:
			if !cfg.now().Before(time.Unix(f.Expires, 0)) {
				expired = append(expired, id)
			}
		case errors.Is(err, ErrSessionNotFound): // ended meanwhile
		default:
			errs = append(errs, err)
		}
	}
	return expired, errors.Join(errs...)
}

// sessionIDs lists the ids of the session files in dir (none when there
// is no directory), after checking the directory is the user's own.
func sessionIDs(dir string) ([]string, error) {
	if err := checkSessionDir(dir); err != nil {
		if errors.Is(err, ErrSessionNotFound) { // no directory: no session
			return nil, nil
		}
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, ent := range ents {
		if id, ok := strings.CutSuffix(ent.Name(), ".json"); ok && validSessionID(id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

func sessionOptions(opts []SessionOption) sessionConfig {
	cfg := sessionConfig{now: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

func newFileSession(dir, id string, expires time.Time, cfg sessionConfig) *SessionAllowlist {
	return &SessionAllowlist{
		id: id, dir: dir, path: filepath.Join(dir, id+".json"),
		expires: expires, now: cfg.now,
	}
}

// ID returns the session's id; "" for a session in memory only.
func (s *SessionAllowlist) ID() string { return s.id }

// Expires returns when the session's lifetime runs out; the zero Time for
// a session that never expires.
func (s *SessionAllowlist) Expires() time.Time { return s.expires }

// Entries returns a copy of the entries, in the order they were first
// added, expired ones included (Lookup ignores them); none once the
// session ended.
func (s *SessionAllowlist) Entries() []Entry {
	s.refresh()
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.entries)
}

// Lookup finds an entry that allows key at now for a call whose content
// has the given digest ("" for none). Once the session's lifetime has run
// out at now nothing counts, and a matching entry is reported as a problem.
func (s *SessionAllowlist) Lookup(key keys.Key, digest string, now time.Time) LookupResult {
	s.refresh()
	s.mu.RLock()
	defer s.mu.RUnlock()
	where := "session allowlist"
	if s.id != "" {
		where = "session " + s.id
	}
	m := lookupEntries(s.entries, where, key, digest, now)
	if !s.expires.IsZero() && !now.Before(s.expires) {
		m.OK, m.Entry = false, Entry{}
		for _, e := range s.entries {
			if e.Pattern.Match(key) {
				m.Problems = append(m.Problems, fmt.Sprintf("%s expired at %s: %s no longer counts",
					where, s.expires.UTC().Format(time.RFC3339), e.Pattern))
			}
		}
	}
	if s.loadErr != nil {
		m.Problems = append(m.Problems, fmt.Sprintf("%s not loaded: %v", where, s.loadErr))
	}
	return m
}

// Add records e, replacing the entry of the same pattern if there is one,
// appending it otherwise, and drops the entries that have expired. e.Grant
// must be AlwaysThisSession or AlwaysThisProject; a zero Expiry is Never
// (until the session ends). A session started with StartSession writes its
// file before Add returns. Add fails with ErrSessionNotFound once the
// session ended or expired, and refuses an entry past its environment's
// ceiling as ProjectAllowlist.Add does (an AlwaysThisProject @shell
// grant) with a *ceiling.Violation.
func (s *SessionAllowlist) Add(e Entry) error {
	e, err := e.normalize(ceiling.AlwaysThisSession)
	if err != nil {
		return err
	}
	if err := e.checkCeiling(); err != nil {
		return err
	}
	if s.dir == "" {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.ended {
			return fmt.Errorf("session ended: %w", ErrSessionNotFound)
		}
		s.entries = mergeEntry(dropExpired(s.entries, s.now()), e)
		return nil
	}
	return s.locked(func() error {
		f, _, err := s.read()
		if err != nil {
			if errors.Is(err, ErrSessionNotFound) {
				s.markEnded()
			}
			return err
		}
		now := s.now()
		if !now.Before(time.Unix(f.Expires, 0)) {
			return fmt.Errorf("session %s expired at %s: %w", s.id, time.Unix(f.Expires, 0).UTC().Format(time.RFC3339), ErrSessionNotFound)
		}
		entries := mergeEntry(dropExpired(f.entryList(), now), e)
		f.Entries = make([]sessionEntry, len(entries))
		for i, e := range entries {
			f.Entries[i] = sessionEntry{Pattern: e.Pattern.String(), Grant: e.Grant.String(), Expiry: e.Expiry, Digest: e.Digest}
		}
		if err := s.write(*f); err != nil {
			return err
		}
		stamp, _ := statStamp(s.path)
		s.mu.Lock()
		s.entries, s.stamp, s.loadErr = entries, stamp, nil
		s.mu.Unlock()
		return nil
	})
}

// End ends the session: its grants are dropped and its file removed. Ending
// a session that already ended is not an error.
func (s *SessionAllowlist) End() error {
	if s.dir == "" {
		s.markEnded()
		return nil
	}
	err := s.locked(s.remove)
	s.markEnded()
	return err
}

func (s *SessionAllowlist) markEnded() {
	s.mu.Lock()
	s.entries, s.ended, s.loadErr = nil, true, nil
	s.mu.Unlock()
}

// remove deletes the session's files; the caller holds the lock.
func (s *SessionAllowlist) remove() error {
	if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("end session %s: %w", s.id, err)
	}
	if err := os.Remove(s.lockPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("end session %s: %w", s.id, err)
	}
	return nil
}

func (s *SessionAllowlist) lockPath() string { return filepath.Join(s.dir, s.id+".lock") }

// locked runs fn holding this value's write mutex and the session's flock.
func (s *SessionAllowlist) locked(fn func() error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	lk := flock.New(s.lockPath(),
		flock.SetFlag(os.O_CREATE|os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC),
		flock.SetPermissions(0o600))
	if err := lk.Lock(); err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return fmt.Errorf("session lock %s is a symbolic link: %w", s.lockPath(), ErrUnsafeStorage)
		}
		return fmt.Errorf("lock session %s: %w", s.id, err)
	}
	defer lk.Unlock()
	return fn()
}

// refresh re-reads a file-backed session when its file changed or went
// away. Failures leave the session empty (fail closed) and are reported
// by Lookup.
func (s *SessionAllowlist) refresh() {
	if s.dir == "" {
		return
	}
	s.mu.RLock()
	ended, old := s.ended, s.stamp
	s.mu.RUnlock()
	if ended {
		return
	}
	stamp, err := statStamp(s.path)
	if err == nil && stamp == old {
		return
	}
	if errors.Is(err, fs.ErrNotExist) {
		s.markEnded() // ended by another process
		return
	}
	f, stamp, err := s.read()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	if err != nil {
		if errors.Is(err, ErrSessionNotFound) {
			s.entries, s.ended, s.loadErr = nil, true, nil
			return
		}
		s.entries, s.loadErr, s.stamp = nil, err, fileStamp{}
		return
	}
	s.entries, s.stamp, s.loadErr = f.entryList(), stamp, nil
}

// sessionFile is the session's file format (see SessionAllowlist).
type sessionFile struct {
	Version int            `json:"version"`
	ID      string         `json:"id"`
	Created int64          `json:"created"`
	Expires int64          `json:"expires"`
	Entries []sessionEntry `json:"entries"`
}

type sessionEntry struct {
	Pattern string `json:"pattern"`
	Grant   string `json:"grant"`
	Expiry  int64  `json:"expiry"`
	Digest  string `json:"digest,omitempty"`
}

// entryList returns the entries of a file that passed decodeSessionFile.
func (f *sessionFile) entryList() []Entry {
	out := make([]Entry, len(f.Entries))
	for i, se := range f.Entries {
		p, _ := keys.ParsePattern(se.Pattern)
		g, _ := ceiling.ParseGrant(se.Grant)
		out[i] = Entry{Pattern: p, Grant: g, Expiry: se.Expiry, Digest: se.Digest}
	}
	return out
}

// read reads and checks the session's file.
func (s *SessionAllowlist) read() (*sessionFile, fileStamp, error) {
	fi, err := os.Lstat(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fileStamp{}, fmt.Errorf("session %s: not found in %s (ended, or never started): %w", s.id, s.dir, ErrSessionNotFound)
	}
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("session %s: %w", s.id, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fileStamp{}, fmt.Errorf("session file %s is a symbolic link: %w", s.path, ErrUnsafeStorage)
	}
	fd, err := os.OpenFile(s.path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fileStamp{}, fmt.Errorf("session %s: not found in %s (ended): %w", s.id, s.dir, ErrSessionNotFound)
	}
	if errors.Is(err, syscall.ELOOP) {
		return nil, fileStamp{}, fmt.Errorf("session file %s is a symbolic link: %w", s.path, ErrUnsafeStorage)
	}
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("session %s: %w", s.id, err)
	}
	defer fd.Close()
	if fi, err = fd.Stat(); err != nil {
		return nil, fileStamp{}, fmt.Errorf("session %s: %w", s.id, err)
	}
	if err := checkPrivate(s.path, fi, false); err != nil {
		return nil, fileStamp{}, err
	}
	data, err := io.ReadAll(io.LimitReader(fd, 64<<20))
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("session %s: %w", s.id, err)
	}
	f, err := decodeSessionFile(s.path, data)
	if err != nil {
		return nil, fileStamp{}, err
	}
	if f.ID != s.id {
		return nil, fileStamp{}, &ConfigError{File: s.path, Err: fmt.Errorf("holds session %s", strconv.QuoteToASCII(f.ID))}
	}
	return f, stampOf(fi), nil
}

// decodeSessionFile parses and checks a session file's text.
func decodeSessionFile(path string, data []byte) (*sessionFile, error) {
	if err := checkJSONSyntax(path, data); err != nil {
		return nil, err
	}
	var f sessionFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, configErrorAt(path, data, int(te.Offset), fmt.Errorf("corrupt session file: %v", te))
		}
		return nil, &ConfigError{File: path, Err: fmt.Errorf("corrupt session file: %v", err)}
	}
	if f.Version != 1 {
		return nil, &ConfigError{File: path, Err: fmt.Errorf("session file version %d: want 1", f.Version)}
	}
	if f.Expires <= 0 || f.Entries == nil {
		return nil, &ConfigError{File: path, Err: errors.New("corrupt session file: no expiry or no entries list")}
	}
	for i, se := range f.Entries {
		bad := func(err error) error {
			return &ConfigError{File: path, Err: fmt.Errorf("entry %d (%s): %w", i, strconv.QuoteToASCII(se.Pattern), err)}
		}
		p, err := keys.ParsePattern(se.Pattern)
		if err != nil {
			return nil, bad(err)
		}
		g, err := ceiling.ParseGrant(se.Grant)
		if err != nil {
			return nil, bad(err)
		}
		if _, err := (Entry{Pattern: p, Grant: g, Expiry: se.Expiry, Digest: se.Digest}).normalize(ceiling.AlwaysThisSession); err != nil || se.Expiry == 0 {
			if err == nil {
				err = errors.New("expiry 0")
			}
			return nil, bad(err)
		}
	}
	return &f, nil
}

// write replaces the session's file with f; the caller holds the lock.
func (s *SessionAllowlist) write(f sessionFile) error {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("session %s: %w", s.id, err)
	}
	if err := writeFileAtomic(s.path, "", append(data, '\n'), 0o600, nil); err != nil {
		return fmt.Errorf("write session %s: %w", s.id, err)
	}
	return nil
}

// dropExpired returns the entries of entries that count at now, reusing
// its array.
func dropExpired(entries []Entry, now time.Time) []Entry {
	return slices.DeleteFunc(entries, func(e Entry) bool { return e.Expiry != Never && now.Unix() >= e.Expiry })
}

// mergeEntry replaces the entry of e's pattern in entries, or appends e.
func mergeEntry(entries []Entry, e Entry) []Entry {
	for i := range entries {
		if entries[i].Pattern == e.Pattern {
			entries[i] = e
			return entries
		}
	}
	return append(entries, e)
}

// validSessionID reports whether id is 32 lowercase hex digits.
func validSessionID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// checkSessionDir refuses a session directory someone else could read or
// swap: dir itself must be a real directory of the current user with mode
// 0700 or stricter; each ancestor must belong to the user or root and not
// be writable by group or others unless it is sticky.
func checkSessionDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("session dir: %w", err)
	}
	fi, err := os.Lstat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("session dir %s does not exist: %w", abs, ErrSessionNotFound)
	}
	if err != nil {
		return fmt.Errorf("session dir: %w", err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("session dir %s is a symbolic link: %w", abs, ErrUnsafeStorage)
	}
	if !fi.IsDir() {
		return fmt.Errorf("session dir %s is not a directory: %w", abs, ErrUnsafeStorage)
	}
	if err := checkPrivate(abs, fi, true); err != nil {
		return err
	}
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		for _, stat := range []func(string) (fs.FileInfo, error){os.Lstat, os.Stat} {
			fi, err := stat(p)
			if err != nil {
				return fmt.Errorf("session dir ancestor: %w", err)
			}
			if uid := ownerOf(fi); uid != os.Getuid() && uid != 0 {
				return fmt.Errorf("session dir ancestor %s belongs to uid %d, not to you or root: %w", p, uid, ErrUnsafeStorage)
			}
			if fi.Mode()&fs.ModeSymlink == 0 && fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
				return fmt.Errorf("session dir ancestor %s (mode %04o) can be written by others: %w", p, fi.Mode().Perm(), ErrUnsafeStorage)
			}
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}

// checkPrivate refuses a file or directory not owned by the current user
// or open to group or others.
func checkPrivate(path string, fi fs.FileInfo, dir bool) error {
	if uid := ownerOf(fi); uid != os.Getuid() {
		return fmt.Errorf("%s belongs to uid %d, not to you (uid %d): %w", path, uid, os.Getuid(), ErrUnsafeStorage)
	}
	if !dir && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file: %w", path, ErrUnsafeStorage)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		want := "0600"
		if dir {
			want = "0700"
		}
		return fmt.Errorf("%s has mode %04o, open to group or others (want %s): %w", path, perm, want, ErrUnsafeStorage)
	}
	return nil
}

func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// fileStamp tells one version of a file from another without reading it:
// every write renames a new inode over the old one.
type fileStamp struct {
	dev, ino uint64
	size     int64
	mtime    int64
}

func stampOf(fi fs.FileInfo) fileStamp {
	stamp := fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		stamp.dev, stamp.ino = uint64(st.Dev), uint64(st.Ino)
	}
	return stamp
}

func statStamp(path string) (fileStamp, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return stampOf(fi), nil
}
