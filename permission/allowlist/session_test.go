package allowlist

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/errclass"
	"github.com/ccrun/ccrun/permission/keys"
)

// sessionDir returns a fresh directory fit for sessions (mode 0700).
func alSessionDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sessions")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func alClockAt(at time.Time) SessionOption { return WithSessionClock(func() time.Time { return at }) }

func TestSessionInMemory(t *testing.T) {
	t.Parallel()
	s := NewSessionAllowlist(alClockAt(alNow))
	if s.ID() != "" || !s.Expires().IsZero() {
		t.Errorf("in-memory session: id %q, expires %v; want none", s.ID(), s.Expires())
	}
	if err := s.Add(alEntry("run_command:git", ceiling.AlwaysThisSession, 0, "")); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(alEntry("run_command:make", ceiling.AlwaysThisSession, alNow.Add(time.Hour).Unix(), "")); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(alEntry("run_command:git", ceiling.AlwaysThisSession, alNow.Add(2*time.Hour).Unix(), "")); err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		alEntry("run_command:git", ceiling.AlwaysThisSession, alNow.Add(2*time.Hour).Unix(), ""),
		alEntry("run_command:make", ceiling.AlwaysThisSession, alNow.Add(time.Hour).Unix(), ""),
	}
	if diff := cmp.Diff(want, s.Entries()); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if m := s.Lookup(keys.MustParseKey("run_command:make:all"), "", alNow); !m.OK {
		t.Errorf("lookup: %+v", m)
	}
	m := s.Lookup(keys.MustParseKey("run_command:make"), "", alNow.Add(time.Hour))
	if m.OK || len(m.Problems) != 1 || !strings.Contains(m.Problems[0], "expired at") {
		t.Errorf("lookup after the entry's expiry: %+v", m)
	}
	// Add drops what has expired by the session's clock.
	alMust(t, s.Add(alEntry("run_command:old", ceiling.AlwaysThisSession, alNow.Unix(), "")))
	alMust(t, s.Add(alEntry("run_command:new", ceiling.AlwaysThisSession, Never, "")))
	if diff := cmp.Diff([]string{"run_command:git", "run_command:make", "run_command:new"}, alPatterns(s.Entries())); diff != "" {
		t.Errorf("entries after adding past an expired one (-want +got):\n%s", diff)
	}
	if err := s.Add(alEntry("run_command:git", ceiling.Once, Never, "")); !errors.Is(err, ErrInvalidEntry) {
		t.Errorf("Add of a Once grant: %v, want ErrInvalidEntry", err)
	}
	if err := s.End(); err != nil {
		t.Fatal(err)
	}
	if m := s.Lookup(keys.MustParseKey("run_command:git"), "", alNow); m.OK {
		t.Error("a grant counts after End")
	}
	if err := s.Add(alEntry("run_command:git", ceiling.AlwaysThisSession, Never, "")); !errors.Is(err, ErrSessionNotFound) {
		t.Errorf("Add after End: %v, want ErrSessionNotFound", err)
	}
}

func TestSessionDigestBinding(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]*SessionAllowlist{"memory": NewSessionAllowlist(), "file": alStart(t, alSessionDir(t))} {
		t.Run(name, func(t *testing.T) {
			if err := s.Add(alEntry("capability:fmt", ceiling.AlwaysThisSession, Never, alDigestA)); err != nil {
				t.Fatal(err)
			}
			if m := s.Lookup(keys.MustParseKey("capability:fmt"), alDigestA, alNow); !m.OK {
				t.Errorf("same digest: %+v", m)
			}
			m := s.Lookup(keys.MustParseKey("capability:fmt"), alDigestB, alNow)
			if m.OK || len(m.Problems) != 1 || !strings.Contains(m.Problems[0], "changed since approval") {
				t.Errorf("other digest: %+v, want a 'changed since approval' problem", m)
			}
		})
	}
}

// alStart starts a session of an hour at alNow (unless opts say otherwise).
func alStart(t testing.TB, dir string, opts ...SessionOption) *SessionAllowlist {
	t.Helper()
	s, err := StartSession(dir, time.Hour, append([]SessionOption{alClockAt(alNow)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSessionAcrossProcesses(t *testing.T) {
	t.Parallel()
	dir := alSessionDir(t)
	first := alStart(t, dir, alClockAt(alNow))
	if len(first.ID()) != 32 {
		t.Errorf("id %q, want 32 hex digits", first.ID())
	}
	if !first.Expires().Equal(alNow.Add(time.Hour)) {
		t.Errorf("expires %v, want %v", first.Expires(), alNow.Add(time.Hour))
	}
	if err := first.Add(alEntry("run_command:git", ceiling.AlwaysThisSession, Never, "")); err != nil {
		t.Fatal(err)
	}

	// Another process opens the session by its id.
	second, err := OpenSession(dir, first.ID(), alClockAt(alNow.Add(time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	if !second.Expires().Equal(first.Expires()) {
		t.Errorf("expiry read back %v, want %v", second.Expires(), first.Expires())
	}
	if m := second.Lookup(keys.MustParseKey("run_command:git"), "", alNow); !m.OK {
		t.Errorf("second process does not see the first's grant: %+v", m)
	}
	if err := second.Add(alEntry("capability:fmt", ceiling.AlwaysThisSession, alNow.Add(30*time.Minute).Unix(), alDigestA)); err != nil {
		t.Fatal(err)
	}
	// The first sees the second's grant without being told.
	if m := first.Lookup(keys.MustParseKey("capability:fmt"), alDigestA, alNow); !m.OK {
		t.Errorf("first process does not see the second's grant: %+v", m)
	}
	want := []Entry{
		alEntry("run_command:git", ceiling.AlwaysThisSession, Never, ""),
		alEntry("capability:fmt", ceiling.AlwaysThisSession, alNow.Add(30*time.Minute).Unix(), alDigestA),
	}
	for name, s := range map[string]*SessionAllowlist{"first": first, "second": second} {
		if diff := cmp.Diff(want, s.Entries()); diff != "" {
			t.Errorf("%s: entries (-want +got):\n%s", name, diff)
		}
	}
	third, err := OpenSession(dir, first.ID(), alClockAt(alNow))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, third.Entries()); diff != "" {
		t.Errorf("reopened: entries (-want +got):\n%s", diff)
	}

	// The second ends it: every process loses its grants.
	if err := second.End(); err != nil {
		t.Fatal(err)
	}
	if m := first.Lookup(keys.MustParseKey("run_command:git"), "", alNow); m.OK {
		t.Error("a grant counts in another process after End")
	}
	if len(first.Entries()) != 0 {
		t.Errorf("entries after End: %v", first.Entries())
	}
	if err := first.Add(alEntry("run_command:ls", ceiling.AlwaysThisSession, Never, "")); !errors.Is(err, ErrSessionNotFound) {
		t.Errorf("Add after End elsewhere: %v, want ErrSessionNotFound", err)
	}
	if _, err := OpenSession(dir, first.ID(), alClockAt(alNow)); !errors.Is(err, ErrSessionNotFound) {
		t.Errorf("OpenSession after End: %v, want ErrSessionNotFound", err)
	}
	if err := first.End(); err != nil {
		t.Errorf("End twice: %v", err)
	}
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Errorf("files left after End: %v", names)
	}
}

func TestSessionLifetime(t *testing.T) {
	t.Parallel()
	dir := alSessionDir(t)
	s := alStart(t, dir, alClockAt(alNow))
	if err := s.Add(alEntry("run_command:git", ceiling.AlwaysThisSession, Never, "")); err != nil {
		t.Fatal(err)
	}
	end := alNow.Add(time.Hour)
	if m := s.Lookup(keys.MustParseKey("run_command:git"), "", end.Add(-time.Second)); !m.OK {
		t.Errorf("lookup just before the end: %+v", m)
	}
	m := s.Lookup(keys.MustParseKey("run_command:git"), "", end)
	if m.OK || len(m.Problems) != 1 || !strings.Contains(m.Problems[0], "expired") {
		t.Errorf("lookup at the end of the lifetime: %+v", m)
	}
	if m := s.Lookup(keys.MustParseKey("run_command:other"), "", end); m.OK || len(m.Problems) != 0 {
		t.Errorf("lookup of an unrelated key after the end: %+v", m)
	}

	late := alOpenLater(t, dir, s.ID(), end)
	if late != nil {
		t.Fatal("opened an expired session")
	}
	if _, err := os.Stat(filepath.Join(dir, s.ID()+".json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("expired session file kept: %v", err)
	}

	s3 := alStart(t, dir, alClockAt(alNow))
	late3, err := OpenSession(dir, s3.ID(), alClockAt(end.Add(time.Second)))
	if !errors.Is(err, ErrSessionNotFound) || !strings.Contains(fmt.Sprint(err), "expired") || late3 != nil {
		t.Errorf("OpenSession after the lifetime: %v, want ErrSessionNotFound saying expired", err)
	}

	// Add notices the end of the lifetime too.
	s4 := alStart(t, dir, alClockAt(alNow))
	s4.now = func() time.Time { return end }
	if err := s4.Add(alEntry("run_command:git", ceiling.AlwaysThisSession, Never, "")); !errors.Is(err, ErrSessionNotFound) {
		t.Errorf("Add after the lifetime: %v, want ErrSessionNotFound", err)
	}

	// No lifetime: the default.
	s5, err := StartSession(dir, 0, alClockAt(alNow))
	if err != nil {
		t.Fatal(err)
	}
	if want := alNow.Add(DefaultSessionLifetime); !s5.Expires().Equal(want) {
		t.Errorf("default lifetime: expires %v, want %v", s5.Expires(), want)
	}
}

func alOpenLater(t *testing.T, dir, id string, at time.Time) *SessionAllowlist {
	t.Helper()
	s, err := OpenSession(dir, id, alClockAt(at))
	if !errors.Is(err, ErrSessionNotFound) {
		t.Errorf("OpenSession at %v: %v, want ErrSessionNotFound", at, err)
	}
	return s
}

func TestSessionConcurrent(t *testing.T) {
	t.Parallel()
	dir := alSessionDir(t)
	file := alStart(t, dir)
	other, err := OpenSession(dir, file.ID(), alClockAt(alNow))
	if err != nil {
		t.Fatal(err)
	}
	for name, ss := range map[string][2]*SessionAllowlist{
		"memory": {NewSessionAllowlist(), nil},
		"file":   {file, other},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const workers, nkeys = 6, 25
			var wg sync.WaitGroup
			for w := range workers {
				s := ss[0]
				if ss[1] != nil && w%2 == 1 {
					s = ss[1] // half the writers go through another value, as another process would
				}
				wg.Go(func() {
					for i := range nkeys {
						if err := s.Add(alEntry(fmt.Sprintf("run_command:w%d-%d", w, i), ceiling.AlwaysThisSession, Never, "")); err != nil {
							t.Error(err)
							return
						}
						if m := s.Lookup(keys.MustParseKey(fmt.Sprintf("run_command:w%d-%d", w, i)), "", alNow); !m.OK {
							t.Errorf("own grant not found: %+v", m)
						}
					}
				})
				wg.Go(func() {
					for i := range nkeys {
						s.Lookup(keys.MustParseKey(fmt.Sprintf("run_command:w%d-%d", (w+1)%workers, i)), "", alNow)
						_ = s.Entries()
					}
				})
			}
			wg.Wait()
			if got := len(ss[0].Entries()); got != workers*nkeys {
				t.Errorf("%d entries, want %d", got, workers*nkeys)
			}
		})
	}
}

func TestSessionHostileIDs(t *testing.T) {
	t.Parallel()
	dir := alSessionDir(t)
	// A valid session file where a traversal would land.
	s := alStart(t, dir)
	data, err := os.ReadFile(filepath.Join(dir, s.ID()+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(dir), "x.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{
		"", "../x", "../../etc/x", "/etc/passwd", "x",
		strings.ToUpper(s.ID()), s.ID()[:31], s.ID() + "0", s.ID()[:31] + "/",
		s.ID()[:30] + "\x00a", s.ID()[:31] + "g", s.ID()[:31] + "é"[:1],
	} {
		if _, err := OpenSession(dir, id, alClockAt(alNow)); !errors.Is(err, ErrSessionNotFound) {
			t.Errorf("OpenSession(%q): %v, want ErrSessionNotFound", id, err)
		}
	}
}

func TestSessionUnsafeStorage(t *testing.T) {
	t.Parallel()
	root := os.Getuid() == 0
	tests := []struct {
		name     string
		prepare  func(t *testing.T, dir, id string) // dir holds session id
		rootOnly bool
		start    bool // StartSession is refused too
	}{
		{name: "dir open to others", start: true, prepare: func(t *testing.T, dir, id string) {
			alMust(t, os.Chmod(dir, 0o755))
		}},
		{name: "dir open to group", start: true, prepare: func(t *testing.T, dir, id string) {
			alMust(t, os.Chmod(dir, 0o750))
		}},
		{name: "file open to others", prepare: func(t *testing.T, dir, id string) {
			alMust(t, os.Chmod(filepath.Join(dir, id+".json"), 0o644))
		}},
		{name: "file is a symlink", prepare: func(t *testing.T, dir, id string) {
			f := filepath.Join(dir, id+".json")
			real := filepath.Join(dir, "real")
			alMust(t, os.Rename(f, real))
			alMust(t, os.Symlink(real, f))
		}},
		{name: "file is a directory", prepare: func(t *testing.T, dir, id string) {
			f := filepath.Join(dir, id+".json")
			alMust(t, os.Remove(f))
			alMust(t, os.Mkdir(f, 0o700))
		}},
		{name: "dir is a symlink", start: true, prepare: func(t *testing.T, dir, id string) {
			real := dir + ".real"
			alMust(t, os.Rename(dir, real))
			alMust(t, os.Symlink(real, dir))
		}},
		{name: "ancestor writable by others", start: true, prepare: func(t *testing.T, dir, id string) {
			alMust(t, os.Chmod(filepath.Dir(dir), 0o777))
		}},
		{name: "dir of another user", rootOnly: true, start: true, prepare: func(t *testing.T, dir, id string) {
			alMust(t, os.Chown(dir, 65534, 65534))
		}},
		{name: "file of another user", rootOnly: true, prepare: func(t *testing.T, dir, id string) {
			alMust(t, os.Chown(filepath.Join(dir, id+".json"), 65534, 65534))
		}},
		{
			// Another user made /tmp/ccrun-UID before us, to read or swap
			// our sessions: its sessions dir looks right, the parent does not.
			name: "ancestor of another user", rootOnly: true, start: true,
			prepare: func(t *testing.T, dir, id string) {
				alMust(t, os.Chown(filepath.Dir(dir), 65534, 65534))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.rootOnly && !root {
				t.Skip("needs root to give a file to another user")
			}
			dir := alSessionDir(t)
			s := alStart(t, dir)
			if err := s.Add(alEntry("run_command:git", ceiling.AlwaysThisSession, Never, "")); err != nil {
				t.Fatal(err)
			}
			tt.prepare(t, dir, s.ID())
			if _, err := OpenSession(dir, s.ID(), alClockAt(alNow)); !errors.Is(err, ErrUnsafeStorage) {
				t.Errorf("OpenSession: %v, want ErrUnsafeStorage", err)
			}
			if _, err := StartSession(dir, time.Hour); tt.start && !errors.Is(err, ErrUnsafeStorage) {
				t.Errorf("StartSession: %v, want ErrUnsafeStorage", err)
			}
			// A session opened before fails closed.
			if err := s.Add(alEntry("run_command:ls", ceiling.AlwaysThisSession, Never, "")); err == nil && !tt.start {
				t.Errorf("Add went on")
			}
		})
	}
}

func TestSessionHostileLockFile(t *testing.T) {
	t.Parallel()
	dir := alSessionDir(t)
	s := alStart(t, dir)
	victim := filepath.Join(t.TempDir(), "victim")
	lock := filepath.Join(dir, s.ID()+".lock")
	alMust(t, os.Remove(lock))
	alMust(t, os.Symlink(victim, lock))
	if err := s.Add(alEntry("run_command:git", ceiling.AlwaysThisSession, Never, "")); !errors.Is(err, ErrUnsafeStorage) {
		t.Errorf("Add through a symlinked lock: %v, want ErrUnsafeStorage", err)
	}
	if _, err := os.Lstat(victim); !errors.Is(err, os.ErrNotExist) {
		t.Error("the lock's target was created")
	}
}

func TestSessionCorruptFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(text, id string) string
	}{
		{"truncated", func(s, _ string) string { return s[:len(s)/2] }},
		{"empty", func(string, string) string { return "" }},
		{"not an object", func(string, string) string { return "[]" }},
		{"trailing comma", func(s, _ string) string { return strings.Replace(s, `"entries"`, `"x": 1,, "entries"`, 1) }},
		{"unknown field", func(s, _ string) string { return strings.Replace(s, `"version"`, `"admin": true, "version"`, 1) }},
		{"wrong version", func(s, _ string) string { return strings.Replace(s, `"version": 1`, `"version": 2`, 1) }},
		{"expiry is a string", func(s, _ string) string { return strings.Replace(s, `"expires": `, `"expires": "x", "_": `, 1) }},
		{"no entries", func(s, _ string) string { return strings.Replace(s, `"entries"`, `"_entries"`, 1) }},
		{"bad pattern", func(s, _ string) string { return strings.Replace(s, "run_command:git", "run command:git", 1) }},
		{"bad grant", func(s, _ string) string {
			return strings.Replace(s, `"grant": "AlwaysThisSession"`, `"grant": "Sometimes"`, 1)
		}},
		{"once grant", func(s, _ string) string {
			return strings.Replace(s, `"grant": "AlwaysThisSession"`, `"grant": "Once"`, 1)
		}},
		{"bad digest", func(s, _ string) string { return strings.Replace(s, alDigestA, "sha256:zz", 1) }},
		{"another session's id", func(s, id string) string { return strings.Replace(s, id, strings.Repeat("0", 32), 1) }},
		{"text after the object", func(s, _ string) string { return s + "{}" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := alSessionDir(t)
			s := alStart(t, dir)
			alMust(t, s.Add(alEntry("run_command:git", ceiling.AlwaysThisSession, Never, "")))
			alMust(t, s.Add(alEntry("capability:fmt", ceiling.AlwaysThisSession, Never, alDigestA)))
			path := filepath.Join(dir, s.ID()+".json")
			data, err := os.ReadFile(path)
			alMust(t, err)
			bad := tt.edit(string(data), s.ID())
			if bad == string(data) {
				t.Fatal("the edit changed nothing")
			}
			// Replaced, not written in place: Lookup tells versions of the
			// file apart by inode, size and mtime (see fileStamp).
			alMust(t, os.WriteFile(path+".new", []byte(bad), 0o600))
			alMust(t, os.Rename(path+".new", path))

			_, err = OpenSession(dir, s.ID(), alClockAt(alNow))
			if !errors.Is(err, errclass.InvalidConfig) || !strings.Contains(fmt.Sprint(err), path) {
				t.Errorf("OpenSession: %v, want errclass.InvalidConfig naming %s", err, path)
			}
			// A session opened before fails closed and says why.
			m := s.Lookup(keys.MustParseKey("run_command:git"), "", alNow)
			if m.OK || len(m.Problems) != 1 || !strings.Contains(m.Problems[0], "not loaded") {
				t.Errorf("lookup in a corrupt session: %+v", m)
			}
			if err := s.Add(alEntry("run_command:ls", ceiling.AlwaysThisSession, Never, "")); !errors.Is(err, errclass.InvalidConfig) {
				t.Errorf("Add to a corrupt session: %v, want errclass.InvalidConfig", err)
			}
			if got, _ := os.ReadFile(path); string(got) != bad {
				t.Error("a corrupt session file was written over")
			}
		})
	}
}

func TestSessionFileModes(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "sessions")
	s, err := StartSession(dir, time.Hour)
	alMust(t, err)
	alMust(t, s.Add(alEntry("run_command:git", ceiling.AlwaysThisSession, Never, "")))
	for path, want := range map[string]os.FileMode{
		filepath.Dir(dir):                  0o700,
		dir:                                0o700,
		filepath.Join(dir, s.ID()+".json"): 0o600,
		filepath.Join(dir, s.ID()+".lock"): 0o600,
	} {
		fi, err := os.Lstat(path)
		alMust(t, err)
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %04o, want %04o", path, got, want)
		}
	}
}

func TestDefaultSessionDir(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	if got, want := DefaultSessionDir(), "/run/user/1000/ccrun/sessions"; got != want {
		t.Errorf("with XDG_RUNTIME_DIR: %q, want %q", got, want)
	}
	t.Setenv("XDG_RUNTIME_DIR", "relative/dir")
	want := filepath.Join(os.TempDir(), fmt.Sprintf("ccrun-%d", os.Getuid()), "sessions")
	if got := DefaultSessionDir(); got != want {
		t.Errorf("with a relative XDG_RUNTIME_DIR: %q, want %q", got, want)
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	if got := DefaultSessionDir(); got != want {
		t.Errorf("without XDG_RUNTIME_DIR: %q, want %q", got, want)
	}
}

func alMust(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func BenchmarkSessionLookup(b *testing.B) {
	for _, name := range []string{"memory", "file"} {
		b.Run(name, func(b *testing.B) {
			s := NewSessionAllowlist()
			if name == "file" {
				s = alStart(b, alSessionDir(b))
			}
			for i := range 50 {
				alMust(b, s.Add(alEntry(fmt.Sprintf("run_command:tool%d", i), ceiling.AlwaysThisSession, Never, "")))
			}
			alMust(b, s.Add(alEntry("run_command:git", ceiling.AlwaysThisSession, Never, "")))
			key := keys.MustParseKey("run_command:git:status")
			for b.Loop() {
				if !s.Lookup(key, "", alNow).OK {
					b.Fatal("no match")
				}
			}
		})
	}
}

// TestPruneSessions: expired sessions' files go, live ones stay, a corrupt
// file stays and is reported, a missing directory is no error.
func TestPruneSessions(t *testing.T) {
	t.Parallel()
	dir := alSessionDir(t)
	short, err := StartSession(dir, time.Minute, alClockAt(alNow))
	if err != nil {
		t.Fatal(err)
	}
	long := alStart(t, dir)
	bad := strings.Repeat("ab", 16)
	if err := os.WriteFile(filepath.Join(dir, bad+".json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	// ExpiredSessions lists what PruneSessions removes, and removes nothing.
	expired, err := ExpiredSessions(dir, alClockAt(alNow.Add(30*time.Minute)))
	if len(expired) != 1 || expired[0] != short.ID() {
		t.Errorf("expired %v, want only %s", expired, short.ID())
	}
	if err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("ExpiredSessions err = %v, want the corrupt file reported", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, short.ID()+".json")); err != nil {
		t.Errorf("ExpiredSessions removed %s: %v", short.ID(), err)
	}
	removed, err := PruneSessions(dir, alClockAt(alNow.Add(30*time.Minute)))
	if len(removed) != 1 || removed[0] != short.ID() {
		t.Errorf("removed %v, want only %s", removed, short.ID())
	}
	if err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("err = %v, want the corrupt file reported", err)
	}
	for id, want := range map[string]bool{short.ID(): false, long.ID(): true, bad: true} {
		if _, err := os.Lstat(filepath.Join(dir, id+".json")); (err == nil) != want {
			t.Errorf("%s: present %v, want %v", id, err == nil, want)
		}
	}
	if removed, err := PruneSessions(filepath.Join(dir, "none")); err != nil || removed != nil {
		t.Errorf("no directory: %v %v", removed, err)
	}
	if expired, err := ExpiredSessions(filepath.Join(dir, "none")); err != nil || expired != nil {
		t.Errorf("no directory: %v %v", expired, err)
	}
}
