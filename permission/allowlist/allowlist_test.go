package allowlist

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission/keys"
)

const (
	alDigestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	alDigestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

var alNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func alEntry(pattern string, g ceiling.Grant, expiry int64, digest string) Entry {
	return Entry{Pattern: keys.MustParsePattern(pattern), Grant: g, Expiry: expiry, Digest: digest}
}

func TestAllowlistLookup(t *testing.T) {
	t.Parallel()
	past, future := alNow.Add(-time.Minute).Unix(), alNow.Add(time.Minute).Unix()
	tests := []struct {
		name     string
		entries  []Entry
		key      string
		digest   string
		ok       bool
		want     string   // the pattern of the entry that counts
		problems []string // substrings, one per problem, in order
	}{
		{name: "nothing", key: "run_command:git"},
		{name: "exact", entries: []Entry{alEntry("run_command:git", ceiling.AlwaysThisSession, Never, "")},
			key: "run_command:git:status", ok: true, want: "run_command:git"},
		{name: "other tool", entries: []Entry{alEntry("run_command:git", ceiling.AlwaysThisSession, Never, "")},
			key: "write_file:git"},
		{name: "not yet expired", entries: []Entry{alEntry("run_command:git", ceiling.AlwaysThisSession, future, "")},
			key: "run_command:git", ok: true, want: "run_command:git"},
		{name: "expired", entries: []Entry{alEntry("run_command:git", ceiling.AlwaysThisSession, past, "")},
			key: "run_command:git", problems: []string{"expired at"}},
		{name: "expires at now", entries: []Entry{alEntry("run_command:git", ceiling.AlwaysThisSession, alNow.Unix(), "")},
			key: "run_command:git", problems: []string{"expired at"}},
		{name: "same digest", entries: []Entry{alEntry("capability:fmt", ceiling.AlwaysThisProject, Never, alDigestA)},
			key: "capability:fmt", digest: alDigestA, ok: true, want: "capability:fmt"},
		{name: "changed since approval", entries: []Entry{alEntry("capability:fmt", ceiling.AlwaysThisProject, Never, alDigestA)},
			key: "capability:fmt", digest: alDigestB, problems: []string{"changed since approval"}},
		{name: "bound key, unbound entry", entries: []Entry{alEntry("capability:fmt", ceiling.AlwaysThisProject, Never, "")},
			key: "capability:fmt", digest: alDigestA, problems: []string{"without a content digest"}},
		{name: "bound key, unbound wildcard", entries: []Entry{alEntry("capability:*", ceiling.AlwaysThisProject, Never, "")},
			key: "capability:fmt", digest: alDigestA, problems: []string{"without a content digest"}},
		{name: "bound entry, unbound call", entries: []Entry{alEntry("capability:fmt", ceiling.AlwaysThisProject, Never, alDigestA)},
			key: "capability:fmt", problems: []string{"names no digest"}},
		{name: "a valid one wins, others reported",
			entries: []Entry{
				alEntry("run_command:git:push", ceiling.AlwaysThisSession, past, ""),
				alEntry("run_command:git", ceiling.AlwaysThisSession, Never, ""),
				alEntry("run_command:*", ceiling.AlwaysThisSession, past, ""),
			},
			key: "run_command:git:push", ok: true, want: "run_command:git",
			problems: []string{"run_command:git:push does not count", "run_command:* does not count"}},
		{name: "first valid wins", entries: []Entry{
			alEntry("run_command:git:*", ceiling.AlwaysThisSession, Never, ""),
			alEntry("run_command:git", ceiling.AlwaysThisSession, Never, ""),
		}, key: "run_command:git", ok: true, want: "run_command:git:*"},
		{name: "compound not matched by wildcards",
			entries: []Entry{alEntry("run_command:*", ceiling.AlwaysThisSession, Never, ""), alEntry("run_command:git", ceiling.AlwaysThisSession, Never, "")},
			key:     `run_command:"git status && rm -rf /"`},
		{name: "compound matched by its exact grant",
			entries: []Entry{alEntry(`run_command:"git status && make"`, ceiling.AlwaysThisSession, Never, "")},
			key:     `run_command:"git status && make"`, ok: true, want: `run_command:"git status && make"`},
		{name: "a grant that is not kept", entries: []Entry{alEntry("run_command:git", ceiling.Once, Never, "")},
			key: "run_command:git", problems: []string{"not kept"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := lookupEntries(tt.entries, "test", keys.MustParseKey(tt.key), tt.digest, alNow)
			if m.OK != tt.ok {
				t.Fatalf("OK = %v, want %v (problems %q)", m.OK, tt.ok, m.Problems)
			}
			if tt.ok && m.Entry.Pattern.String() != tt.want {
				t.Errorf("entry %s, want %s", m.Entry.Pattern, tt.want)
			}
			if len(m.Problems) != len(tt.problems) {
				t.Fatalf("problems %q, want %d matching %q", m.Problems, len(tt.problems), tt.problems)
			}
			for i, p := range tt.problems {
				if !strings.Contains(m.Problems[i], p) {
					t.Errorf("problem %d = %q, want it to contain %q", i, m.Problems[i], p)
				}
			}
		})
	}
}

func TestAllowlistEntryNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		e    Entry
		min  ceiling.Grant
	}{
		{"no pattern", Entry{Grant: ceiling.AlwaysThisSession}, ceiling.AlwaysThisSession},
		{"deny", alEntry("run_command:git", ceiling.Deny, Never, ""), ceiling.AlwaysThisSession},
		{"once", alEntry("run_command:git", ceiling.Once, Never, ""), ceiling.AlwaysThisSession},
		{"session in project", alEntry("run_command:git", ceiling.AlwaysThisSession, Never, ""), ceiling.AlwaysThisProject},
		{"out of range", alEntry("run_command:git", ceiling.Grant(9), Never, ""), ceiling.AlwaysThisSession},
		{"negative expiry", alEntry("run_command:git", ceiling.AlwaysThisSession, -5, ""), ceiling.AlwaysThisSession},
		{"digest without algorithm", alEntry("capability:x", ceiling.AlwaysThisSession, Never, strings.Repeat("a", 64)), ceiling.AlwaysThisSession},
		{"short digest", alEntry("capability:x", ceiling.AlwaysThisSession, Never, "sha256:abc"), ceiling.AlwaysThisSession},
		{"upper-case digest", alEntry("capability:x", ceiling.AlwaysThisSession, Never, strings.ToUpper(alDigestA)), ceiling.AlwaysThisSession},
		{"pattern that does not read back", Entry{Pattern: keys.Pattern{Tool: "run command", Action: "git"}, Grant: ceiling.AlwaysThisSession}, ceiling.AlwaysThisSession},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := tt.e.normalize(tt.min); !errors.Is(err, ErrInvalidEntry) {
				t.Errorf("normalize(%v) = %v, want ErrInvalidEntry", tt.e, err)
			}
		})
	}
	e, err := alEntry("run_command:git", ceiling.AlwaysThisSession, 0, "").normalize(ceiling.AlwaysThisSession)
	if err != nil || e.Expiry != Never {
		t.Errorf("zero expiry: got %v, %v; want Never", e.Expiry, err)
	}
}

// TestAddChecksCeiling: both stores refuse, inside Add, an entry past its
// environment's ceiling (a run_command pattern is @shell whatever its
// Environment says), an unknown environment too; nothing is kept.
func TestAddChecksCeiling(t *testing.T) {
	t.Parallel()
	path := ProjectFile(t.TempDir())
	p, err := LoadProject(path)
	if err != nil {
		t.Fatal(err)
	}
	s := NewSessionAllowlist()
	for _, tc := range []struct {
		pattern string
		env     ceiling.Environment
		grant   ceiling.Grant
		want    error // nil: kept
	}{
		{"run_command:git", "", ceiling.AlwaysThisProject, ceiling.ErrViolation},
		{"run_command:git", ceiling.Wasm, ceiling.AlwaysThisProject, ceiling.ErrViolation},
		{"capability:sh-tool", ceiling.Shell, ceiling.AlwaysThisProject, ceiling.ErrViolation},
		{"capability:x", "@python", ceiling.AlwaysThisProject, ceiling.ErrViolation}, // an unknown environment reaches Once at most
		{"capability:x", "@python", ceiling.AlwaysThisSession, ceiling.ErrViolation}, // an unknown environment reaches Once at most
		{"run_command:git", "", ceiling.AlwaysThisSession, nil},
		{"capability:fmt", ceiling.Wasm, ceiling.AlwaysThisProject, nil},
	} {
		e := Entry{Pattern: keys.MustParsePattern(tc.pattern), Grant: tc.grant, Environment: tc.env}
		stores := map[string]interface{ Add(Entry) error }{"session": s}
		if tc.grant == ceiling.AlwaysThisProject {
			stores["project"] = p
		}
		for name, st := range stores {
			err := st.Add(e)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("%s Add(%s %s in %q): %v, want %v", name, tc.pattern, tc.grant, tc.env, err, tc.want)
			}
		}
	}
	if got := len(p.Entries()); got != 1 {
		t.Errorf("project holds %d entries, want 1 (capability:fmt): %v", got, p.Entries())
	}
	if got := len(s.Entries()); got != 2 {
		t.Errorf("session holds %d entries, want 2: %v", got, s.Entries())
	}
}
