//go:build linux

package confine

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// What confinement costs:
//
//	go test -run '^$' -bench . -benchtime 200x ./internal/confine/
//
// Prepare builds the read-only ruleset of the real home and a project;
// Start is one confined start of /bin/true on a prepared ruleset (Wait
// included), StartPlain the same unconfined.

// benchDirs is a project outside /tmp, whose entries other processes
// change all the time (each change makes the next Prepare rebuild).
func benchDirs(b *testing.B) (home, dir string) {
	home, _ = os.UserHomeDir()
	dir, err := os.MkdirTemp("/var/tmp", "confine-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	os.WriteFile(dir+"/.env", []byte("x"), 0o644)
	return home, dir
}

// BenchmarkPrepareCold builds the ruleset every time (a partly granted
// directory changed since the last run).
func BenchmarkPrepareCold(b *testing.B) {
	needLandlockB(b)
	home, dir := benchDirs(b)
	p := ReadOnly(home, dir)
	rules := 0
	cpu := cpuTime()
	for b.Loop() {
		dropCache()
		rs, err := Prepare(p)
		if err != nil {
			b.Fatal(err)
		}
		rules = rs.Rules()
		rs.Close()
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N)/1e3, "cpu-µs/op")
	b.ReportMetric(float64(rules), "rules")
}

// cpuTime is the CPU time this process has used (user and system, in ns):
// a figure the machine's load disturbs less than the wall clock.
func cpuTime() int64 {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkPrepareWarm reuses the kept ruleset: what a run pays when
// nothing changed (ReadOnly included).
func BenchmarkPrepareWarm(b *testing.B) {
	needLandlockB(b)
	home, dir := benchDirs(b)
	for b.Loop() {
		rs, err := Prepare(ReadOnly(home, dir))
		if err != nil {
			b.Fatal(err)
		}
		rs.Close()
	}
}

func BenchmarkReadOnlyPolicy(b *testing.B) {
	home, _ := os.UserHomeDir()
	dir := b.TempDir()
	for b.Loop() {
		ReadOnly(home, dir)
	}
}

func BenchmarkStart(b *testing.B) {
	needLandlockB(b)
	home, _ := os.UserHomeDir()
	rs, err := Prepare(ReadOnly(home, b.TempDir()))
	if err != nil {
		b.Fatal(err)
	}
	defer rs.Close()
	for b.Loop() {
		cmd := exec.Command("/bin/true")
		if err := rs.Start(cmd); err != nil {
			b.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStartPlain(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func needLandlockB(b *testing.B) {
	if _, err := Available(); err != nil {
		b.Skip(err)
	}
}

// BenchmarkSearch builds the ruleset of a project as large as Go's own
// sources (GOROOT/src: about 13,000 names in 1,300 directories), every
// time: what the search for the table's rows at any depth costs a cold
// Prepare. BenchmarkPrepareCold is the same for a project of one file.
func BenchmarkSearch(b *testing.B) {
	needLandlockB(b)
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skip(err)
	}
	home, _ := os.UserHomeDir()
	p := ReadOnly(home, strings.TrimSpace(string(out))+"/src")
	cpu := cpuTime()
	for b.Loop() {
		dropCache()
		rs, err := Prepare(p)
		if err != nil {
			b.Fatal(err)
		}
		rs.Close()
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N)/1e3, "cpu-µs/op")
}

// BenchmarkNetNS: a network namespace made, its listener, one confined
// /bin/true started in it and waited for, and closed: on a thread of
// ccrun (root), by the holder in a user namespace of its own (an ordinary
// user's way, here as root), and the confined start alone for reference.
//
//	go test -run '^$' -bench NetNS -benchtime 200x -count 3 ./internal/confine/
func BenchmarkNetNS(b *testing.B) {
	needLandlockB(b)
	if os.Geteuid() != 0 {
		b.Skip("the thread's way needs root")
	}
	rs, err := Prepare(Policy{Network: true, Writable: []string{b.TempDir()}})
	if err != nil {
		b.Fatal(err)
	}
	defer rs.Close()
	for _, c := range []struct {
		name string
		make func() (*NetNS, error)
	}{{"thread", NewNetNS}, {"userns", newUserNetNS}, {"none", nil}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command("/bin/true")
				if c.make == nil {
					if err := rs.Start(cmd); err != nil {
						b.Fatal(err)
					}
					cmd.Wait()
					continue
				}
				ns, err := c.make()
				if err != nil {
					b.Fatal(err)
				}
				l, err := ns.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					b.Fatal(err)
				}
				if err := ns.Start(rs, cmd); err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
				l.Close()
				ns.Close()
			}
		})
	}
}
