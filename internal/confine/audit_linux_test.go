//go:build linux

package confine

import (
	"os"
	"os/exec"
	"slices"
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
	abi, _ := Available()
	was, err := SetAuditEnabled(true)
	if err != nil || abi < 7 {
		if abi >= 7 && os.Getenv("CCRUN_REQUIRE_LANDLOCK") == "1" && os.Geteuid() == 0 {
			t.Fatalf("audit cannot be enabled: %v", err)
		}
		t.Skipf("no Landlock denial records here (ABI %d): %v", abi, err)
	}
	if !was {
		t.Cleanup(func() { SetAuditEnabled(false) })
	}
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
	was, err := SetAuditEnabled(true)
	if err != nil || abi < 7 {
		b.Skip("no audit:", err)
	}
	if !was {
		b.Cleanup(func() { SetAuditEnabled(false) })
	}
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
