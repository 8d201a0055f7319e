//go:build linux

package confine

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// auditOn turns the machine's audit on for the test, as `auditctl -e 1`
// would, and back off after: Landlock logs its denials only then. It
// skips where that cannot be done (not root), or fails under
// CCRUN_REQUIRE_LANDLOCK=1 when the kernel has Landlock ABI 7.
func auditOn(t *testing.T) {
	t.Helper()
	needLandlock(t)
	abi, err := Available()
	var release func()
	if abi >= 7 {
		release, err = HoldAudit(true)
	}
	if release == nil {
		if abi >= 7 && os.Getenv("CCRUN_REQUIRE_LANDLOCK") == "1" && os.Geteuid() == 0 {
			t.Fatalf("audit cannot be enabled: %v", err)
		}
		t.Skipf("no Landlock denial records here (ABI %d): %v", abi, err)
	}
	t.Cleanup(release)
}

// TestRefusedByAudit: what Landlock refuses a program (not the script's
// own opens) is read back from its audit records, per program: a write
// outside the project, in the home, a file made there, a secret read;
// a program refused nothing has nothing.
func TestRefusedByAudit(t *testing.T) {
	auditOn(t)
	w := newWorld(t)
	write(t, w.home+"/.bashrc", "# rc\n")
	rs := w.workspace(t, t.TempDir())
	if err := rs.ProgramRefusals(); err != nil {
		t.Fatalf("ProgramRefusals: %v", err)
	}
	for _, c := range []struct {
		script string
		want   []string
	}{
		{"echo ok > made.txt; cat README; ls " + w.home, nil},
		{"echo evil >> $HOME/.bashrc", []string{"write " + w.home + "/.bashrc"}},
		{"touch $HOME/new-file", []string{"create in " + w.home}},
		{"rm -f $HOME/.bashrc", []string{"remove in " + w.home}},
		{"mkdir $HOME/d", []string{"create in " + w.home}},
		{"cat $HOME/.ssh/id_rsa", []string{"read " + w.home + "/.ssh/id_rsa"}},
		{"echo x > " + w.outside + "/planted", []string{"create in " + w.outside}},
		{"sh -c 'cat $HOME/.ssh/id_rsa; echo x >> $HOME/.bashrc'", []string{"read " + w.home + "/.ssh/id_rsa", "write " + w.home + "/.bashrc"}},
	} {
		cmd := exec.Command("/bin/sh", "-c", c.script)
		cmd.Dir = w.project
		cmd.Env = []string{"HOME=" + w.home, "PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}
		out, _ := startWait(t, rs, cmd)
		got, err := rs.Refused(cmd.Process.Pid)
		if err != nil {
			t.Errorf("%q: Refused: %v", c.script, err)
		}
		var s []string
		for _, r := range got {
			s = append(s, r.String())
		}
		if !slices.Equal(s, c.want) {
			t.Errorf("%q: refused %q, want %q (output %s)", c.script, s, c.want, out)
		}
	}
}

// TestAuditFields: audit's quoting, and a path given in hex.
func TestAuditFields(t *testing.T) {
	f := parseFields(`domain=1c062ee07 blockers=fs.write_file,fs.truncate path="/home/u/.bashrc" dev="vda" ino=737`)
	if r, ok := refusalOf(f); !ok || r.String() != "write /home/u/.bashrc" {
		t.Errorf("got %v %v", r, ok)
	}
	f = parseFields(`domain=1 blockers=fs.read_file path=2F746D702F6120622F6B6579 dev="vda" ino=1`)
	if r, ok := refusalOf(f); !ok || r.String() != "read /tmp/a b/key" {
		t.Errorf("got %v %v", r, ok)
	}
	if _, ok := refusalOf(parseFields(`domain=1 blockers=scope.signal opid=1 ocomm="init"`)); ok {
		t.Error("a signal scoped away is no file refusal")
	}
	f = parseFields(`domain=1 blockers=fs.make_reg path=2F746D702F610A63636D756E direct`)
	if r, ok := refusalOf(f); !ok || strings.Contains(r.String(), "\n") {
		t.Errorf("got %q %v: a name with a newline is quoted", r, ok)
	}
	if _, ok := refusalOf(parseFields(`domain=1 blockers=fs.read_file path="/proc/42/maps"`)); ok {
		t.Error("a process's /proc entry is hidden by design: not said")
	}
	if !strings.Contains(Refusal{"connect", "port 80"}.String(), "port 80") {
		t.Error("connect")
	}
}

// BenchmarkRefused: what reading a program's refusals adds to it, the
// wait for audit's delivery (a barrier) per program.
func BenchmarkRefused(b *testing.B) {
	if _, err := Available(); err != nil {
		b.Skip(err)
	}
	abi, _ := Available()
	if abi < 7 {
		b.Skip("no Landlock ABI 7")
	}
	release, err := HoldAudit(true)
	if err != nil {
		b.Skip("no audit:", err)
	}
	b.Cleanup(release)
	a, err := auditFor(abi)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := a.take(1, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAuditRecordsHostile: what another process can put in audit's
// stream does not end a barrier or name a domain: a user message with
// the token from another pid, one that only contains the token; and a
// denial before its domain is named is kept for that event only.
func TestAuditRecordsHostile(t *testing.T) {
	a := &auditor{creator: map[uint64]named{}, denials: map[uint64][]Refusal{}, barriers: map[string]chan struct{}{}}
	ch := make(chan struct{})
	token := "ccrun-barrier 1-0123456789abcdef"
	a.barriers[token] = ch
	me := strconv.Itoa(os.Getpid())
	for _, rec := range []string{
		"audit(1.1:1): pid=1" + me + " uid=0 msg='" + token + "'",
		"audit(1.1:2): pid=" + me + "0 uid=0 msg='" + token + "'",
		"audit(1.1:3): pid=" + me + " uid=0 msg='" + token + " more'",
		"audit(1.1:4): pid=" + me + " uid=0 msg='x' msg2='" + token + "'x",
	} {
		a.record(auditUser, rec)
		select {
		case <-ch:
			t.Fatalf("%q ended the barrier", rec)
		default:
		}
	}
	a.record(auditUser, "audit(1.1:5): pid="+me+" uid=0 auid=1 ses=1 msg='"+token+"'")
	select {
	case <-ch:
	default:
		t.Fatal("this process's own message did not end the barrier")
	}

	// a denial whose domain is named in a later event is not taken for it
	a.record(auditLandlockAccess, `audit(1.2:10): domain=abc blockers=fs.read_file path="/secret"`)
	a.record(auditLandlockDomain, `audit(1.2:11): domain=abc status=allocated mode=enforcing pid=77 uid=0 exe="/x" comm="x"`)
	a.record(auditLandlockAccess, `audit(1.2:12): domain=abc blockers=fs.write_file path="/home/u/.bashrc"`)
	a.mu.Lock()
	got := a.denials[0xabc]
	a.mu.Unlock()
	if len(got) != 1 || got[0].String() != "write /home/u/.bashrc" {
		t.Errorf("domain abc: %v", got)
	}
	// a domain named before the program started is not its own
	a.mu.Lock()
	since := a.gen
	a.mu.Unlock()
	a.record(auditLandlockAccess, `audit(1.3:20): domain=def blockers=fs.read_file path="/a"`)
	a.record(auditLandlockDomain, `audit(1.3:20): domain=def status=allocated mode=enforcing pid=77 uid=0 exe="/x" comm="x"`)
	a.mu.Lock()
	var mine []Refusal
	for d, n := range a.creator {
		if n.pid == 77 && n.gen > since {
			mine = append(mine, a.denials[d]...)
		}
	}
	a.mu.Unlock()
	if len(mine) != 1 || mine[0].String() != "read /a" {
		t.Errorf("after the mark: %v, want only the later domain's", mine)
	}
}

// TestAuditRecordsInterleaved: a denial and the naming of its domain
// are one event, but another event's records (another program's, on
// another CPU) may come between them: the denial is still the domain's.
func TestAuditRecordsInterleaved(t *testing.T) {
	a := &auditor{creator: map[uint64]named{}, denials: map[uint64][]Refusal{}, barriers: map[string]chan struct{}{}}
	a.record(auditLandlockAccess, `audit(2.1:40): domain=123 blockers=fs.read_file path="/secret"`)
	a.record(auditLandlockAccess, `audit(2.1:41): domain=456 blockers=fs.write_file path="/other"`)
	a.record(auditUser, `audit(2.1:42): pid=1 uid=0 msg='x'`)
	a.record(auditLandlockDomain, `audit(2.1:40): domain=123 status=allocated mode=enforcing pid=88 uid=0 exe="/x" comm="x"`)
	a.mu.Lock()
	got := a.denials[0x123]
	a.mu.Unlock()
	if len(got) != 1 || got[0].String() != "read /secret" {
		t.Errorf("domain 123: %v, want its denial of event 40", got)
	}
}
