package enginerecord

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	day1 = time.Date(2030, 1, 2, 12, 0, 0, 0, time.UTC)
	day2 = day1.Add(24 * time.Hour)
)

func dockerAt(host string) Site { return Site{Engine: Docker, Host: host} }

func seen(s Site, t time.Time) Site { s.Seen = t.Format(time.DateOnly); return s }

func mustRead(t *testing.T, dir string) []Site {
	t.Helper()
	sites, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return sites
}

func lines(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(File(dir))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestAddRead: places come back as recorded, each once, in the order
// recorded; recording one again the same day writes nothing.
func TestAddRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ccrun")
	if sites, err := Read(dir); err != nil || sites != nil {
		t.Fatalf("Read of no record = %v, %v; want nothing, no error", sites, err)
	}
	d := dockerAt("unix:///var/run/docker.sock")
	k := Site{Engine: Kubernetes, Kubeconfig: "/home/u/.kube/config", Context: "kind-a", Namespace: "ccrun", Server: "https://127.0.0.1:6443"}
	for _, s := range []Site{d, k, d, k} {
		if err := AddTo(dir, s, day1); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]Site{seen(d, day1), seen(k, day1)}, mustRead(t, dir)); diff != "" {
		t.Errorf("Read (-want +got):\n%s", diff)
	}
	if n := len(lines(t, dir)); n != 2 {
		t.Errorf("%d lines, want 2", n)
	}
	fi, err := os.Stat(File(dir))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("record %v, %v; want mode 0600", fi, err)
	}
	// A server that moved is the same place, said anew.
	k2 := k
	k2.Server = "https://127.0.0.1:7443"
	if err := AddTo(dir, k2, day1); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Site{seen(d, day1), seen(k2, day1)}, mustRead(t, dir)); diff != "" {
		t.Errorf("after the server moved (-want +got):\n%s", diff)
	}
}

// TestBound: the record keeps the MaxSites places used last; a place
// recorded again on a later day counts as used then.
func TestBound(t *testing.T) {
	dir := t.TempDir()
	for i := range MaxSites + 5 {
		if err := AddTo(dir, dockerAt(fmt.Sprintf("tcp://h%d:2375", i)), day1); err != nil {
			t.Fatal(err)
		}
	}
	sites := mustRead(t, dir)
	if len(sites) != MaxSites || sites[0].Host != "tcp://h5:2375" || sites[MaxSites-1].Host != fmt.Sprintf("tcp://h%d:2375", MaxSites+4) {
		t.Fatalf("%d places, from %s to %s; want the last %d", len(sites), sites[0].Host, sites[len(sites)-1].Host, MaxSites)
	}
	if err := AddTo(dir, dockerAt("tcp://h5:2375"), day2); err != nil {
		t.Fatal(err)
	}
	if err := AddTo(dir, dockerAt("tcp://new:2375"), day2); err != nil {
		t.Fatal(err)
	}
	sites = mustRead(t, dir)
	want := []string{"tcp://h7:2375", "tcp://h5:2375", "tcp://new:2375"}
	got := []string{sites[0].Host, sites[len(sites)-2].Host, sites[len(sites)-1].Host}
	if len(sites) != MaxSites || !cmp.Equal(got, want) || sites[len(sites)-2].Seen != "2030-01-03" {
		t.Errorf("%d places, first and last %v (%s); want %d, %v, dated again", len(sites), got, sites[len(sites)-2].Seen, MaxSites, want)
	}
	if n := len(lines(t, dir)); n != MaxSites {
		t.Errorf("%d lines, want %d", n, MaxSites)
	}
}

// TestRefused: what is no place is not recorded.
func TestRefused(t *testing.T) {
	for _, s := range []Site{
		{},
		{Engine: "podman", Host: "unix:///run/podman.sock"},
		{Engine: Docker},
		{Engine: Docker, Host: "tcp://h\n{\"engine\":\"docker\",\"host\":\"tcp://evil\"}"},
		{Engine: Kubernetes, Kubeconfig: "relative/config"},
		{Engine: Kubernetes, Context: strings.Repeat("c", maxField+1)},
	} {
		dir := t.TempDir()
		if err := AddTo(dir, s, day1); err == nil {
			t.Errorf("AddTo(%+v) recorded it", s)
		}
		if sites := mustRead(t, dir); len(sites) != 0 {
			t.Errorf("AddTo(%+v) left %v", s, sites)
		}
	}
}

// TestCorrupt: a damaged record is reported (ErrUnreadable, naming the
// line), never a crash, and what can be read of it still is; a place
// recorded meanwhile is added, and the damage goes at the next rewrite.
func TestCorrupt(t *testing.T) {
	good := `{"engine":"docker","host":"unix:///var/run/docker.sock","seen":"2030-01-02"}`
	for _, tc := range []struct {
		name, data, says string
	}{
		{"garbage", "\x00\x01\x02garbage", "line 2 is not a record"},
		{"cut short", `{"engine":"kubernetes","context":"ki`, "line 2 is not a record"},
		{"not an object", `[1,2,3]`, "line 2 is not a record"},
		{"two values", `{"engine":"docker","host":"a"}{"engine":"docker","host":"b"}`, "more than one value"},
		{"unknown field", `{"engine":"docker","host":"a","exec":"rm -rf /"}`, "unknown field"},
		{"unknown engine", `{"engine":"lxc","host":"a"}`, `engine "lxc"`},
		{"control character", `{"engine":"docker","host":"a\u001b[2J"}`, "control character"},
		{"relative kubeconfig", `{"engine":"kubernetes","kubeconfig":"../x"}`, "not an absolute path"},
		{"huge line", `{"engine":"docker","host":"` + strings.Repeat("a", 70<<10) + `"}`, "larger than"},
		{"many bad lines", strings.Repeat("x\n", 40), "40 lines in all are not records"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(File(dir), []byte(good+"\n"+tc.data+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			sites, err := Read(dir)
			if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), File(dir)) {
				t.Errorf("Read = %v; want ErrUnreadable naming the file and saying %q", err, tc.says)
			}
			if len(sites) != 1 || sites[0].Host != "unix:///var/run/docker.sock" {
				t.Errorf("Read returned %v; want the good line's place", sites)
			}
			k := Site{Engine: Kubernetes, Context: "c", Namespace: "n"}
			if err := AddTo(dir, k, day1); err != nil {
				t.Fatalf("AddTo on a damaged record: %v", err)
			}
			if sites, _ := Read(dir); len(sites) != 2 || sites[1].Key() != k.Key() {
				t.Errorf("after AddTo: %v; want the good line's place and the new one", sites)
			}
			// The next day's rewrite keeps the places and drops the damage.
			if err := AddTo(dir, dockerAt("unix:///var/run/docker.sock"), day2); err != nil {
				t.Fatal(err)
			}
			if sites, err := Read(dir); err != nil || len(sites) != 2 {
				t.Errorf("after the rewrite: %v, %v; want 2 places and no damage", sites, err)
			}
		})
	}
}

// TestUnsafe: a record another user could have written is not used (gc
// would connect where they said), nor written through.
func TestUnsafe(t *testing.T) {
	good := `{"engine":"docker","host":"tcp://evil:2375"}` + "\n"
	t.Run("file open to others", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(File(dir), []byte(good), 0o600)
		os.Chmod(File(dir), 0o666)
		if sites, err := Read(dir); !errors.Is(err, ErrUnreadable) || sites != nil || !strings.Contains(err.Error(), "others may write") {
			t.Errorf("Read = %v, %v; want nothing, ErrUnreadable", sites, err)
		}
		if err := AddTo(dir, dockerAt("unix:///x"), day1); err == nil {
			t.Error("AddTo wrote into a record others may write")
		}
	})
	t.Run("directory open to others", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(File(dir), []byte(good), 0o600)
		os.Chmod(dir, 0o777)
		if sites, err := Read(dir); !errors.Is(err, ErrUnreadable) || sites != nil {
			t.Errorf("Read = %v, %v; want nothing, ErrUnreadable", sites, err)
		}
		if err := AddTo(dir, dockerAt("unix:///x"), day1); err == nil {
			t.Error("AddTo wrote into a directory others may write")
		}
	})
	t.Run("symbolic link", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(t.TempDir(), "elsewhere")
		os.WriteFile(target, []byte(good), 0o600)
		os.Symlink(target, File(dir))
		if sites, err := Read(dir); !errors.Is(err, ErrUnreadable) || sites != nil {
			t.Errorf("Read = %v, %v; want nothing, ErrUnreadable", sites, err)
		}
		if err := AddTo(dir, dockerAt("unix:///x"), day1); err == nil {
			t.Error("AddTo wrote through a symbolic link")
		}
		if b, _ := os.ReadFile(target); string(b) != good {
			t.Errorf("the link's target now holds %q", b)
		}
	})
}

const hammerEnv = "CCRUN_ENGINERECORD_HAMMER"

// TestHammerChild is one of TestHammer's processes: it records the places
// the environment names.
func TestHammerChild(t *testing.T) {
	spec := os.Getenv(hammerEnv)
	if spec == "" {
		t.Skip("a child of TestHammer")
	}
	dir, id, _ := strings.Cut(spec, "|")
	hammer(t, dir, id)
}

// hammer records, from 4 goroutines, 6 places of its own and the 6 every
// hammer shares.
func hammer(t *testing.T, dir, id string) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 6 {
				for _, s := range []Site{dockerAt(fmt.Sprintf("tcp://%s-%d:2375", id, i)), dockerAt(fmt.Sprintf("tcp://shared-%d:2375", (i+g)%6))} {
					if err := AddTo(dir, s, day1); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestHammer: ccrun processes that record at once, in goroutines and in
// processes of their own, lose no place, repeat none and damage nothing.
func TestHammer(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for p := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHammerChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), hammerEnv+"="+dir+"|p"+strconv.Itoa(p))
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("child %d: %v\n%s", p, err, out)
			}
		}()
	}
	hammer(t, dir, "me")
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	sites := mustRead(t, dir)
	if len(sites) != 6*3+6 {
		t.Errorf("%d places, want %d", len(sites), 6*3+6)
	}
	if n := len(lines(t, dir)); n != len(sites) {
		t.Errorf("%d lines for %d places: some repeated", n, len(sites))
	}
}

// TestAddOnce: Add records in the state directory, once per process.
func TestAddOnce(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	dir := filepath.Join(state, "ccrun")
	if Dir() != dir {
		t.Fatalf("Dir() = %q, want %q", Dir(), dir)
	}
	s := dockerAt("unix:///add-once.sock")
	Add(s)
	if sites := mustRead(t, dir); len(sites) != 1 || sites[0].Key() != s.Key() {
		t.Fatalf("after Add: %v", sites)
	}
	os.Remove(File(dir))
	Add(s) // recorded by this process already: not again
	if sites := mustRead(t, dir); len(sites) != 0 {
		t.Errorf("Add wrote again: %v", sites)
	}
}

// FuzzRead: whatever the file holds, Read does not crash, and what it
// returns are places (each passes the check, each once).
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"engine":"docker","host":"unix:///var/run/docker.sock","seen":"2030-01-02"}` + "\n"))
	f.Add([]byte(`{"engine":"kubernetes","kubeconfig":"/k","context":"c","namespace":"n"}` + "\n{\"engine\":"))
	f.Add([]byte("\x00\n\n\r\n{}\n[]\nnull\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(File(dir), data, 0o600); err != nil {
			t.Fatal(err)
		}
		sites, err := Read(dir)
		if err != nil && !errors.Is(err, ErrUnreadable) {
			t.Fatalf("Read = %v: not of class ErrUnreadable", err)
		}
		keys := map[string]bool{}
		for _, s := range sites {
			if err := s.check(); err != nil {
				t.Errorf("returned %+v: %v", s, err)
			}
			if keys[s.Key()] {
				t.Errorf("returned %+v twice", s)
			}
			keys[s.Key()] = true
		}
	})
}
