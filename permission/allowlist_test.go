package permission

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const (
	alDigestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	alDigestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

var alNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func alEntry(pattern string, g Grant, expiry int64, digest string) Entry {
	return Entry{Pattern: MustParsePattern(pattern), Grant: g, Expiry: expiry, Digest: digest}
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
		{name: "exact", entries: []Entry{alEntry("run_command:git", AlwaysThisSession, Never, "")},
			key: "run_command:git:status", ok: true, want: "run_command:git"},
		{name: "other tool", entries: []Entry{alEntry("run_command:git", AlwaysThisSession, Never, "")},
			key: "write_file:git"},
		{name: "not yet expired", entries: []Entry{alEntry("run_command:git", AlwaysThisSession, future, "")},
			key: "run_command:git", ok: true, want: "run_command:git"},
		{name: "expired", entries: []Entry{alEntry("run_command:git", AlwaysThisSession, past, "")},
			key: "run_command:git", problems: []string{"expired at"}},
		{name: "expires at now", entries: []Entry{alEntry("run_command:git", AlwaysThisSession, alNow.Unix(), "")},
			key: "run_command:git", problems: []string{"expired at"}},
		{name: "same digest", entries: []Entry{alEntry("capability:fmt", AlwaysThisProject, Never, alDigestA)},
			key: "capability:fmt", digest: alDigestA, ok: true, want: "capability:fmt"},
		{name: "changed since approval", entries: []Entry{alEntry("capability:fmt", AlwaysThisProject, Never, alDigestA)},
			key: "capability:fmt", digest: alDigestB, problems: []string{"changed since approval"}},
		{name: "bound key, unbound entry", entries: []Entry{alEntry("capability:fmt", AlwaysThisProject, Never, "")},
			key: "capability:fmt", digest: alDigestA, problems: []string{"without a content digest"}},
		{name: "bound key, unbound wildcard", entries: []Entry{alEntry("capability:*", AlwaysThisProject, Never, "")},
			key: "capability:fmt", digest: alDigestA, problems: []string{"without a content digest"}},
		{name: "bound entry, unbound call", entries: []Entry{alEntry("capability:fmt", AlwaysThisProject, Never, alDigestA)},
			key: "capability:fmt", problems: []string{"names no digest"}},
		{name: "a valid one wins, others reported",
			entries: []Entry{
				alEntry("run_command:git:push", AlwaysThisSession, past, ""),
				alEntry("run_command:git", AlwaysThisSession, Never, ""),
				alEntry("run_command:*", AlwaysThisSession, past, ""),
			},
			key: "run_command:git:push", ok: true, want: "run_command:git",
			problems: []string{"run_command:git:push does not count", "run_command:* does not count"}},
		{name: "first valid wins", entries: []Entry{
			alEntry("run_command:git:*", AlwaysThisSession, Never, ""),
			alEntry("run_command:git", AlwaysThisSession, Never, ""),
		}, key: "run_command:git", ok: true, want: "run_command:git:*"},
		{name: "compound not matched by wildcards",
			entries: []Entry{alEntry("run_command:*", AlwaysThisSession, Never, ""), alEntry("run_command:git", AlwaysThisSession, Never, "")},
			key:     `run_command:"git status && rm -rf /"`},
		{name: "compound matched by its exact grant",
			entries: []Entry{alEntry(`run_command:"git status && make"`, AlwaysThisSession, Never, "")},
			key:     `run_command:"git status && make"`, ok: true, want: `run_command:"git status && make"`},
		{name: "a grant that is not kept", entries: []Entry{alEntry("run_command:git", Once, Never, "")},
			key: "run_command:git", problems: []string{"not kept"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := lookupEntries(tt.entries, "test", MustParseKey(tt.key), tt.digest, alNow)
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
		min  Grant
	}{
		{"no pattern", Entry{Grant: AlwaysThisSession}, AlwaysThisSession},
		{"deny", alEntry("run_command:git", Deny, Never, ""), AlwaysThisSession},
		{"once", alEntry("run_command:git", Once, Never, ""), AlwaysThisSession},
		{"session in project", alEntry("run_command:git", AlwaysThisSession, Never, ""), AlwaysThisProject},
		{"out of range", alEntry("run_command:git", Grant(9), Never, ""), AlwaysThisSession},
		{"negative expiry", alEntry("run_command:git", AlwaysThisSession, -5, ""), AlwaysThisSession},
		{"digest without algorithm", alEntry("capability:x", AlwaysThisSession, Never, strings.Repeat("a", 64)), AlwaysThisSession},
		{"short digest", alEntry("capability:x", AlwaysThisSession, Never, "sha256:abc"), AlwaysThisSession},
		{"upper-case digest", alEntry("capability:x", AlwaysThisSession, Never, strings.ToUpper(alDigestA)), AlwaysThisSession},
		{"pattern that does not read back", Entry{Pattern: Pattern{Tool: "run command", Action: "git"}, Grant: AlwaysThisSession}, AlwaysThisSession},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := tt.e.normalize(tt.min); !errors.Is(err, ErrInvalidEntry) {
				t.Errorf("normalize(%v) = %v, want ErrInvalidEntry", tt.e, err)
			}
		})
	}
	e, err := alEntry("run_command:git", AlwaysThisSession, 0, "").normalize(AlwaysThisSession)
	if err != nil || e.Expiry != Never {
		t.Errorf("zero expiry: got %v, %v; want Never", e.Expiry, err)
	}
}
