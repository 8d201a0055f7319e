package permission

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/errclass"
	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/google/go-cmp/cmp"
)

// memTrust is an in-memory Trust: the set of trusted digests.
type memTrust struct {
	mu sync.Mutex
	ok map[string]bool
}

func (m *memTrust) Trusted(d string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return d == EmptyDigest || m.ok[d]
}

func (m *memTrust) Rebind(prev, next string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.ok, prev)
	m.ok[next] = true
	return nil
}

func (m *memTrust) trust(d string) { m.mu.Lock(); m.ok[d] = true; m.mu.Unlock() }

func TestLoosens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		origin     Origin
		want       []string
	}{
		{"nothing", `{}`, OriginProject, nil},
		{"tightening only", `{"mode": "plan", "permissions": {"deny": ["run_command:rm"], "ask": ["run_docker:*"]}, "flags": "no-loosening"}`, OriginProject, nil},
		{"allow rules", `{"permissions": {"allow": ["run_wasm:*", "run_docker:*"]}}`, OriginProject,
			[]string{"ccrun.json: allow rule run_wasm:*", "ccrun.json: allow rule run_docker:*"}},
		{"allowlist bound to a digest", `{"allowlist": {"capability:evil": {"grant": "AlwaysThisProject", "digest": "sha256:` + strings.Repeat("a", 64) + `"}}}`, OriginProject,
			[]string{"ccrun.json: allowlist capability:evil → AlwaysThisProject @sha256:" + strings.Repeat("a", 64)}},
		{"env.pass", `{"env": {"pass": ["*", "LD_PRELOAD"]}}`, OriginProject,
			[]string{`ccrun.json: env.pass "*"`, `ccrun.json: env.pass "LD_PRELOAD"`}},
		{"local mode", `{"mode": "trust", "permissions": {"allow": ["run_command:*"]}}`, OriginLocal,
			[]string{"ccrun.local.json: mode trust", "ccrun.local.json: allow rule run_command:*"}},
		{"local accept-edits", `{"mode": "accept-edits"}`, OriginLocal, []string{"ccrun.local.json: mode accept-edits"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := "/some/where/ccrun.json"
			if tc.origin == OriginLocal {
				name = "/some/where/ccrun.local.json"
			}
			s, err := ParseSettings([]byte(tc.text), name, tc.origin)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Loosens()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Loosens (-want +got):\n%s", diff)
			}
			u := s.Untrusted()
			if l, _ := u.Loosens(); len(l) != 0 {
				t.Errorf("Untrusted still loosens %q", l)
			}
			if !slices.Equal(u.Deny, s.Deny) || !slices.Equal(u.Ask, s.Ask) || u.NoLoosening != s.NoLoosening {
				t.Errorf("Untrusted dropped what tightens: %+v from %+v", u, s)
			}
		})
	}
}

// The digest covers what loosens, not where the project is nor how the
// file is laid out, and changes with any loosening.
func TestLooseningDigest(t *testing.T) {
	t.Parallel()
	digest := func(dir, text string) string {
		t.Helper()
		s, err := ParseSettings([]byte(text), filepath.Join(dir, "ccrun.json"), OriginProject)
		if err != nil {
			t.Fatal(err)
		}
		l, err := ProjectLoosening(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		return l.Digest()
	}
	base := digest("/a", `{"permissions": {"allow": ["run_wasm:*"]}}`)
	if got := digest("/b/c", "{\n  \"permissions\": {\"deny\": [\"run_command:rm\"],\n \"allow\": [\"run_wasm:*\"]}\n}"); got != base {
		t.Errorf("another place, layout and a deny rule: digest %s, want %s", got, base)
	}
	for _, other := range []string{
		`{"permissions": {"allow": ["run_wasm:*", "run_docker:*"]}}`,
		`{"permissions": {"allow": ["run_docker:*"]}}`,
		`{"permissions": {"allow": ["run_wasm:*"]}, "env": {"pass": ["HOME"]}}`,
	} {
		if digest("/a", other) == base {
			t.Errorf("%s: same digest as the reviewed file", other)
		}
	}
	if (&Loosening{}).Digest() != EmptyDigest || !(&Loosening{}).Empty() {
		t.Error("EmptyDigest")
	}
}

func TestFlagsSetting(t *testing.T) {
	t.Parallel()
	s, err := ParseSettings([]byte(`{"flags": "no-loosening"}`), "managed.json", OriginManaged)
	if err != nil || !s.NoLoosening {
		t.Fatalf("ParseSettings: %+v, %v", s, err)
	}
	for _, bad := range []string{`{"flags": "loosening"}`, `{"flags": ""}`, `{"flags": true}`, `{"flags": ["no-loosening"]}`} {
		if _, err := ParseSettings([]byte(bad), "x.json", OriginProject); !errors.Is(err, errclass.InvalidConfig) {
			t.Errorf("%s: %v, want errclass.InvalidConfig", bad, err)
		}
	}
	user := &Settings{Origin: OriginUser, Name: "user"}
	if _, locked := LoosenLock([]*Settings{user, nil}); locked {
		t.Error("locked with no layer saying so")
	}
	if by, locked := LoosenLock([]*Settings{user, s}); !locked || by != "managed.json" {
		t.Errorf("LoosenLock: %q, %v", by, locked)
	}
}

func TestEnvPassMalformed(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{`{"env": {"pass": "HOME"}}`, `{"env": {"pas": ["HOME"]}}`, `{"env": []}`} {
		if _, err := ParseSettings([]byte(bad), "ccrun.json", OriginProject); !errors.Is(err, errclass.InvalidConfig) {
			t.Errorf("%s: %v, want errclass.InvalidConfig", bad, err)
		}
	}
}

func TestProjectFileHostile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "elsewhere.json")
	alMust(t, os.WriteFile(victim, []byte(`{"mode": "trust"}`), 0o644))
	link := filepath.Join(dir, "ccrun.local.json")
	alMust(t, os.Symlink(victim, link))
	if _, err := LoadSettings(link, OriginLocal); !errors.Is(err, errclass.InvalidConfig) || !errors.Is(err, fs.ErrPermission) {
		t.Errorf("symlinked ccrun.local.json: %v, want errclass.InvalidConfig and fs.ErrPermission", err)
	}
}

func TestProjectFileOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	t.Parallel()
	path := allowlist.ProjectFile(t.TempDir())
	alMust(t, os.WriteFile(path, []byte(`{"permissions": {"allow": ["run_wasm:*"]}}`), 0o644))
	alMust(t, os.Chown(path, 65534, 65534))
	if _, err := LoadSettings(path, OriginProject); !errors.Is(err, errclass.InvalidConfig) || !errors.Is(err, fs.ErrPermission) {
		t.Errorf("LoadSettings: %v, want errclass.InvalidConfig and fs.ErrPermission", err)
	}
	if _, err := allowlist.LoadProject(path); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("LoadProject: %v, want fs.ErrPermission", err)
	}
	// The user's own config is the user's: not checked this way (it is in
	// a directory of theirs), nor is the managed policy (root's).
	if _, err := LoadSettings(path, OriginManaged); err != nil {
		t.Errorf("managed: %v", err)
	}
}

// An untrusted project's allowlist allows nothing and says why; trusted,
// it does; a grant written while trusted keeps it trusted; a hand edit
// does not.
func TestProjectAllowlistTrust(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := allowlist.ProjectFile(dir)
	local := filepath.Join(dir, "ccrun.local.json")
	alMust(t, os.WriteFile(path, []byte(`{"allowlist": {"run_wasm:a": "AlwaysThisProject"}}`), 0o644))
	tr := &memTrust{ok: map[string]bool{}}
	p, err := allowlist.LoadProject(path)
	alMust(t, err)
	alMust(t, SetProjectTrust(p, tr, local))
	key := keys.MustParseKey("run_wasm:a")
	now := time.Now()
	if m := p.Lookup(key, "", now); m.OK || len(m.Problems) != 1 || m.Problems[0] != allowlist.NotTrusted || p.Untrusted() != allowlist.NotTrusted {
		t.Fatalf("untrusted: %+v (%q)", m, p.Untrusted())
	}
	l, err := ReadLoosening(dir)
	alMust(t, err)
	tr.trust(l.Digest())
	alMust(t, p.Reload())
	if m := p.Lookup(key, "", now); !m.OK {
		t.Fatalf("trusted: %+v", m)
	}

	// A grant ccrun writes carries the trust along.
	alMust(t, p.Add(allowlist.Entry{Pattern: keys.MustParsePattern("run_wasm:b"), Grant: ceiling.AlwaysThisProject}))
	if m := p.Lookup(keys.MustParseKey("run_wasm:b"), "", now); !m.OK {
		t.Fatalf("after a grant: %+v", m)
	}
	if tr.Trusted(l.Digest()) {
		t.Error("the old digest is still trusted after the rebind")
	}
	// A second process sees the same.
	q, err := allowlist.LoadProject(path)
	alMust(t, err)
	alMust(t, SetProjectTrust(q, tr, local))
	if m := q.Lookup(key, "", now); !m.OK {
		t.Fatalf("another reader after the grant: %+v", m)
	}

	// A loosening local file (written by a sandbox, say) untrusts it all.
	alMust(t, os.WriteFile(local, []byte(`{"mode": "trust"}`), 0o644))
	alMust(t, p.Reload())
	if m := p.Lookup(key, "", now); m.OK {
		t.Fatal("allowed with an unreviewed ccrun.local.json")
	}
	// A grant now is written but does not count, and says so.
	err = p.Add(allowlist.Entry{Pattern: keys.MustParsePattern("run_wasm:c"), Grant: ceiling.AlwaysThisProject})
	if !errors.Is(err, allowlist.ErrNotTrusted) {
		t.Errorf("grant in an untrusted project: %v, want ErrNotTrusted", err)
	}
	if m := p.Lookup(keys.MustParseKey("run_wasm:c"), "", now); m.OK {
		t.Error("a grant counted in an untrusted project")
	}
	alMust(t, os.Remove(local))

	// A hand edit of the allowlist: not trusted until reviewed.
	data, err := os.ReadFile(path)
	alMust(t, err)
	alMust(t, os.WriteFile(path, []byte(strings.Replace(string(data), `"run_wasm:a"`, `"run_wasm:*"`, 1)), 0o644))
	alMust(t, p.Reload())
	if m := p.Lookup(key, "", now); m.OK {
		t.Fatal("allowed after a hand edit")
	}
}

func alMust(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
