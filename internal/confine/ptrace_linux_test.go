package confine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The probe and the non-root parent are this test binary, run again with
// probeEnv or parentEnv set (TestMain).
const (
	probeEnv  = "CCRUN_CONFINE_TEST_PROBE"  // the confined program: tries every way into the tids it is given
	parentEnv = "CCRUN_CONFINE_TEST_PARENT" // ccrun's part, as another user: starts the probe confined
)

func TestMain(m *testing.M) {
	switch {
	case IsRulesetServer():
		os.Exit(ServeMain())
	case os.Getenv(wsUserEnv) != "":
		os.Exit(wsUserMain(os.Getenv(wsUserEnv)))
	case os.Getenv(probeEnv) != "":
		os.Exit(probeMain(os.Getenv(probeEnv)))
	case os.Getenv(parentEnv) != "":
		os.Exit(parentMain())
	case os.Getenv(netProbeEnv) != "":
		os.Exit(netProbeMain(os.Args[1:]))
	case os.Getenv(netUserEnv) != "":
		os.Exit(netUserMain(os.Getenv(netUserEnv)))
	case os.Getenv(leaveEnv) != "":
		os.Exit(leaveMain(os.Getenv(leaveEnv)))
	}
	// Tests build their own rulesets (some with a lowered search
	// budget): TestServer turns the server on for itself.
	os.Setenv(ServerEnv, "off")
	os.Exit(m.Run())
}

// probeMain tries, on every tid of the comma-separated list, what reads or
// patches another process: PTRACE_ATTACH and PTRACE_SEIZE,
// process_vm_readv and process_vm_writev, pidfd_open + pidfd_getfd, and
// opening /proc/TID/mem. It prints one line per success (nothing when all
// fail) and exits 0.
func probeMain(list string) int {
	buf := make([]byte, 8)
	for _, s := range strings.Split(list, ",") {
		tid, err := strconv.Atoi(s)
		if err != nil {
			continue
		}
		// the unconfined control does not attach: it would succeed, and
		// leave the test process stopped when the probe exits
		if os.Getenv("CCRUN_CONFINE_TEST_NOATTACH") == "" {
			if err := unix.PtraceAttach(tid); err == nil {
				fmt.Printf("ptrace attach %d\n", tid)
				unix.PtraceDetach(tid)
			}
			if _, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(tid), 0, 0, 0, 0); e == 0 {
				fmt.Printf("ptrace seize %d\n", tid)
				unix.PtraceDetach(tid)
			}
		}
		// the address of a local buffer: a Go binary's heap is at the same
		// place in every process of the same binary, and any mapped address
		// answers EFAULT rather than EPERM when the access itself is allowed
		local := []unix.Iovec{{Base: &buf[0], Len: 8}}
		remote := []unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&buf[0])), Len: 8}}
		if _, err := unix.ProcessVMReadv(tid, local, remote, 0); err == nil || err == unix.EFAULT {
			fmt.Printf("process_vm_readv %d (%v)\n", tid, err)
		}
		if _, err := unix.ProcessVMWritev(tid, local, remote, 0); err == nil || err == unix.EFAULT {
			fmt.Printf("process_vm_writev %d (%v)\n", tid, err)
		}
		if pfd, err := unix.PidfdOpen(tid, 0); err == nil {
			for fd := 0; fd < 16; fd++ {
				if got, err := unix.PidfdGetfd(pfd, fd, 0); err == nil {
					fmt.Printf("pidfd_getfd %d fd %d\n", tid, fd)
					unix.Close(got)
				}
			}
			unix.Close(pfd)
		}
		for _, p := range []string{fmt.Sprintf("/proc/%d/mem", tid), fmt.Sprintf("/proc/%d/task/%d/mem", os.Getppid(), tid)} {
			if f, err := os.Open(p); err == nil {
				fmt.Printf("open %s\n", p)
				f.Close()
			}
		}
	}
	return 0
}

// tids lists the threads of this process.
func tids(t testing.TB) []string {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// probe starts the probe under rs against the given tids and returns what
// it got into.
func probe(t testing.TB, rs *Ruleset, self string, targets []string) string {
	cmd := exec.Command(self)
	cmd.Env = []string{probeEnv + "=" + strings.Join(targets, ",")}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := rs.Start(cmd); err != nil {
		t.Fatalf("start the probe: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the probe: %v\n%s", err, errb.String())
	}
	return out.String()
}

// The confined program gets into no task of ccrun: neither the threads
// that start programs nor the confined thread that opens files, with the
// seccomp filter and without it (Landlock's domains alone: the program's
// is its own), as root.
func TestProgramCannotTraceCcrun(t *testing.T) {
	needLandlock(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, withSeccomp := range []bool{true, false} {
		t.Run(fmt.Sprintf("seccomp=%v", withSeccomp), func(t *testing.T) {
			rs, err := prepare(ReadOnly(t.TempDir()), withSeccomp)
			if err != nil {
				t.Fatal(err)
			}
			defer rs.Close()
			// the opening thread exists, confined by the same ruleset
			var openerTid int
			if ok, err := rs.do(func() { openerTid = unix.Gettid() }); !ok || err != nil {
				t.Fatalf("opening thread: %v", err)
			}
			targets := append(tids(t), strconv.Itoa(openerTid), strconv.Itoa(os.Getpid()))
			if got := probe(t, rs, self, targets); got != "" {
				t.Errorf("a confined program got into ccrun (tids %v, opener %d):\n%s", targets, openerTid, got)
			}
		})
	}
	// The control: unconfined, the same probe gets in (as root, and with
	// no Yama here), so the test can see a success.
	if os.Geteuid() == 0 {
		cmd := exec.Command(self)
		cmd.Env = []string{probeEnv + "=" + strconv.Itoa(os.Getpid()), "CCRUN_CONFINE_TEST_NOATTACH=1"}
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if yama, _ := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); !bytes.Contains(out, []byte("process_vm_readv")) && len(yama) == 0 {
			t.Errorf("the unconfined control got nowhere (%q): the probe cannot see a success", out)
		}
	}
}

// parentMain is ccrun's part as an ordinary user: it prepares the
// read-only ruleset, makes the opening thread, starts the probe confined
// against every tid of this process and prints what the probe got as JSON.
func parentMain() int {
	rs, err := Prepare(ReadOnly("/nonexistent", os.TempDir())) // the probe lies in the project
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer rs.Close()
	var openerTid int
	if ok, err := rs.do(func() { openerTid = unix.Gettid() }); !ok || err != nil {
		fmt.Fprintln(os.Stderr, "opener:", err)
		return 2
	}
	self, _ := os.Executable()
	ents, _ := os.ReadDir("/proc/self/task")
	targets := []string{strconv.Itoa(openerTid)}
	for _, e := range ents {
		targets = append(targets, e.Name())
	}
	cmd := exec.Command(self)
	cmd.Env = []string{probeEnv + "=" + strings.Join(targets, ",")}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := rs.Start(cmd); err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		return 2
	}
	if err := cmd.Wait(); err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		return 2
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{"uid": os.Getuid(), "got": out.String()})
	return 0
}

// The same as an ordinary user (uid 65534): ccrun's part and the confined
// program run as that user, where ptrace needs no privilege.
func TestProgramCannotTraceCcrunAsUser(t *testing.T) {
	dir, bin := asUser(t, "ccrun-confine-user-")
	cmd := exec.Command(bin)
	cmd.Env = []string{parentEnv + "=1", "TMPDIR=" + dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the parent as uid 65534: %v\n%s", err, errb.String())
	}
	var res struct {
		UID int
		Got string
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if res.UID != 65534 {
		t.Fatalf("the parent ran as uid %d", res.UID)
	}
	if res.Got != "" {
		t.Errorf("as uid 65534, a confined program got into ccrun:\n%s", res.Got)
	}
}
