package confine

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// netProbeEnv: this test binary, run in a NetNS, tries every way out of
// the namespace or into its capabilities and says what it got.
const netProbeEnv = "CCRUN_CONFINE_TEST_NETPROBE"

// netProbeMain prints "NAME: ok" or "NAME: fail: ERR" for each attempt,
// and the capability sets ("caps: eff=… prm=… inh=… bnd=… amb=… nnp=…").
// args: a sibling's pid, a writable directory.
func netProbeMain(args []string) int {
	try := func(name string, err error) {
		if err != nil {
			fmt.Printf("%s: fail: %v\n", name, err)
		} else {
			fmt.Printf("%s: ok\n", name)
		}
	}
	sibling, _ := strconv.Atoi(args[0])
	dir := args[1]

	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		try("capget", err)
	}
	var bnd, amb uint64
	for c := 0; c < 64; c++ {
		if r, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); err == nil && r == 1 {
			bnd |= 1 << c
		}
		if r, err := unix.PrctlRetInt(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_IS_SET, uintptr(c), 0, 0); err == nil && r == 1 {
			amb |= 1 << c
		}
	}
	nnp, _ := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	set := func(i func(unix.CapUserData) uint32) uint64 { return uint64(i(data[0])) | uint64(i(data[1]))<<32 }
	fmt.Printf("caps: eff=%x prm=%x inh=%x bnd=%x amb=%x nnp=%d\n",
		set(func(d unix.CapUserData) uint32 { return d.Effective }), set(func(d unix.CapUserData) uint32 { return d.Permitted }),
		set(func(d unix.CapUserData) uint32 { return d.Inheritable }), bnd, amb, nnp)
	if f, err := os.Open("/proc/self/status"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "Cap") || strings.HasPrefix(sc.Text(), "NoNewPrivs") {
				fmt.Printf("status: %s\n", strings.ReplaceAll(sc.Text(), "\t", " "))
			}
		}
		f.Close()
	}

	try("setns /proc/1/ns/net", func() error {
		fd, err := unix.Open("/proc/1/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Setns(fd, unix.CLONE_NEWNET)
	}())
	try("setns pidfd 1", func() error {
		fd, err := unix.PidfdOpen(1, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Setns(fd, unix.CLONE_NEWNET)
	}())
	try("unshare net", unix.Unshare(unix.CLONE_NEWNET))
	try("unshare mount", unix.Unshare(unix.CLONE_NEWNS))
	try("mount", unix.Mount("none", dir, "tmpfs", 0, ""))
	try("chroot", unix.Chroot("/"))
	try("raw socket", func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}())
	try("packet socket", func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}())
	try("loopback down (net admin)", func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		ifr, _ := unix.NewIfreq("lo")
		ifr.SetUint16(0)
		return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
	}())
	try("environ of pid 1", func() error {
		b, err := os.ReadFile("/proc/1/environ")
		if err == nil && len(b) == 0 {
			return fmt.Errorf("empty")
		}
		return err
	}())
	try("ptrace the sibling", unix.PtraceAttach(sibling))
	try("process_vm_readv the sibling", func() error {
		buf := make([]byte, 8)
		local := []unix.Iovec{{Base: &buf[0], Len: 8}}
		remote := []unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&buf[0])), Len: 8}}
		_, err := unix.ProcessVMReadv(sibling, local, remote, 0)
		return err
	}())
	try("unix socket", func() error {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}())
	// controls: what a build may do
	try("control loopback tcp", func() error {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer l.Close()
		c, err := net.Dial("tcp", l.Addr().String())
		if err == nil {
			c.Close()
		}
		return err
	}())
	try("control write", os.WriteFile(dir+"/made", []byte("x"), 0o644))
	if os.Getenv("CCRUN_CONFINE_TEST_CHOWN") != "" { // root of the host's user namespace: 65534 is mapped
		try("control chown", os.Chown(dir+"/made", 65534, 65534))
	}
	return 0
}

// escapes are the probe's attempts that must fail.
var escapes = []string{"setns /proc/1/ns/net", "setns pidfd 1", "unshare net", "unshare mount", "mount", "chroot", "raw socket",
	"packet socket", "loopback down (net admin)", "environ of pid 1", "ptrace the sibling", "process_vm_readv the sibling", "unix socket"}

// runNetProbe starts a sibling and the probe in ns under rs and checks
// that every escape failed, every control worked, and the capabilities
// are keep at most (effective, permitted), rootKeeps at most (bounding),
// nothing inheritable or ambient, with no_new_privs.
func runNetProbe(self string, ns *NetNS, rs *Ruleset, dir string, keep uint64) error {
	sib := exec.Command("/bin/sleep", "60")
	if err := ns.Start(rs, sib); err != nil {
		return fmt.Errorf("start the sibling: %w", err)
	}
	defer func() { sib.Process.Kill(); sib.Wait() }()
	cmd := exec.Command(self, strconv.Itoa(sib.Process.Pid), dir)
	cmd.Env = []string{netProbeEnv + "=1"}
	if os.Geteuid() == 0 && ns.files == nil {
		cmd.Env = append(cmd.Env, "CCRUN_CONFINE_TEST_CHOWN=1")
	}
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := ns.Start(rs, cmd); err != nil {
		return fmt.Errorf("start the probe: %w", err)
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("the probe: %v\n%s", err, errb.String())
	}
	got := out.String()
	var bad []string
	for _, e := range escapes {
		if !strings.Contains(got, "\n"+e+": fail") {
			bad = append(bad, "escaped: "+e)
		}
	}
	for _, line := range strings.Split(got, "\n") {
		if strings.HasPrefix(line, "control") && !strings.HasSuffix(line, ": ok") {
			bad = append(bad, line)
		}
	}
	var eff, prm, inh, bnd, amb uint64
	var nnp int
	i := strings.Index(got, "caps: ")
	if i < 0 {
		return fmt.Errorf("no caps line:\n%s", got)
	}
	if _, err := fmt.Sscanf(got[i:], "caps: eff=%x prm=%x inh=%x bnd=%x amb=%x nnp=%d", &eff, &prm, &inh, &bnd, &amb, &nnp); err != nil {
		return fmt.Errorf("caps line: %v:\n%s", err, got)
	}
	if eff&^keep != 0 || prm&^keep != 0 || bnd&^rootKeeps != 0 || inh != 0 || amb != 0 || nnp != 1 {
		bad = append(bad, fmt.Sprintf("capabilities beyond %x: eff=%x prm=%x inh=%x bnd=%x amb=%x nnp=%d", keep, eff, prm, inh, bnd, amb, nnp))
	}
	if strings.Contains(got, "status: CapBnd") && !strings.Contains(got, fmt.Sprintf("status: CapBnd: %016x", bnd)) {
		bad = append(bad, "/proc/self/status disagrees with PR_CAPBSET_READ")
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s\n%s", strings.Join(bad, "\n"), got)
	}
	return nil
}

// rootKeeps are the capabilities a root program keeps in a NetNS:
// CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_KILL,
// CAP_SETGID, CAP_SETUID, CAP_NET_BIND_SERVICE.
const rootKeeps = 1<<0 | 1<<1 | 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<10

// TestNetNSHostile: a root program in the workspace tier's network
// namespace tries to leave or widen it (setns to PID 1's namespace by
// /proc and by pidfd, unshare, mount, chroot, raw and packet sockets,
// loopback down, PID 1's environment, ptrace and process_vm_readv of a
// sibling, a unix socket): each fails, and it holds no capability but
// rootKeeps. Under the workspace policy (/proc hidden) and under one
// that leaves /proc readable, where setns and /proc/self/status are
// reached and the capabilities alone refuse; in a namespace held by a
// thread and in one made by the holder (an ordinary user's way, here as
// root). The workspace tier's controls (a build, git commit, make) work.
func TestNetNSHostile(t *testing.T) {
	needLandlock(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: an ordinary user's namespace is TestNetNSAsUser")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t)
	tmp := t.TempDir()
	ws := w.workspace(t, tmp)
	open, err := Prepare(Policy{Network: true, Writable: []string{tmp}})
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	git(t, w.project, "init", "-q")
	for _, way := range []struct {
		name string
		make func() (*NetNS, error)
	}{{"thread", NewNetNS}, {"userns", newUserNetNS}} {
		t.Run(way.name, func(t *testing.T) {
			ns, err := way.make()
			if err != nil {
				t.Fatal(err)
			}
			defer ns.Close()
			for name, rs := range map[string]*Ruleset{"workspace": ws, "proc readable": open} {
				t.Run(name, func(t *testing.T) {
					if err := runNetProbe(self, ns, rs, tmp, rootKeeps); err != nil {
						t.Error(err)
					}
					os.Remove(tmp + "/made")
				})
			}
			// the workspace tier's controls still work there
			for _, script := range []string{
				"mkdir -p build && echo obj > build/out.o && chmod +x build/out.o && test -x build/out.o",
				"echo x >> README && git add README && git -c user.name=t -c user.email=t@t commit -q -m second",
				"printf 'all:\\n\\techo made > built\\n' > Makefile && make -s && cat built",
			} {
				cmd := exec.Command("/bin/sh", "-c", script)
				cmd.Dir = w.project
				cmd.Env = []string{"HOME=" + w.home, "PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1", "TMPDIR=" + tmp}
				var b strings.Builder
				cmd.Stdout, cmd.Stderr = &b, &b
				if err := ns.Start(ws, cmd); err != nil {
					t.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					t.Errorf("control %q: %v\n%s", script, err, b.String())
				}
			}
		})
	}
}

// netUserEnv: this test binary, as an ordinary user, makes a NetNS and
// checks it (netUserMain).
const netUserEnv = "CCRUN_CONFINE_TEST_NETUSER"

// netUserMain, as an ordinary user, makes a NetNS (a user and network
// namespace), serves on its listener, and starts in it, under a
// workspace-like policy of dir: a program that reaches the listener, one
// that tries the host's server at host (which must fail), and the probe.
func netUserMain(arg string) int {
	dir, host, _ := strings.Cut(arg, ",")
	fail := func(f string, a ...any) int { fmt.Fprintf(os.Stderr, f+"\n", a...); return 1 }
	self, err := os.Executable()
	if err != nil {
		return fail("%v", err)
	}
	rs, err := Prepare(Policy{Network: true, Writable: []string{dir}, Protect: []string{dir + "/p"}, HideProcesses: true})
	if err != nil {
		return fail("prepare: %v", err)
	}
	defer rs.Close()
	ns, err := NewNetNS()
	if err != nil {
		return fail("NewNetNS: %v", err)
	}
	defer ns.Close()
	l, err := ns.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail("listen: %v", err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "hello from the proxy's side\n")
			c.Close()
		}
	}()
	run := func(script string) (string, error) {
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "ADDR=" + l.Addr().String(), "HOST=" + host}
		var b strings.Builder
		cmd.Stdout, cmd.Stderr = &b, &b
		if err := ns.Start(rs, cmd); err != nil {
			return "", err
		}
		err := cmd.Wait()
		return b.String(), err
	}
	port := l.Addr().(*net.TCPAddr).Port
	out, err := run(fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d 2>/dev/null || { command -v bash >/dev/null && exec bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d; cat <&3'; }; cat <&3`, port, port))
	if err != nil || !strings.Contains(out, "hello from the proxy's side") {
		// sh may lack /dev/tcp: the probe's own client
		out, err = run(`CCRUN_CONFINE_TEST_DIAL=$ADDR ` + self)
		if err != nil || !strings.Contains(out, "hello from the proxy's side") {
			return fail("the listener from inside: %v %q", err, out)
		}
	}
	if out, _ := run(`CCRUN_CONFINE_TEST_DIAL=$HOST ` + self); strings.Contains(out, "hello") || !strings.Contains(out, "dial:") {
		return fail("the host's server from inside: %q", out)
	}
	if out, _ := run("echo evil > p; echo ok > q; cat p q; id -u"); !strings.HasSuffix(out, fmt.Sprintf("kept\nok\n%d\n", os.Getuid())) {
		return fail("the protected path or uid: %q", out)
	}
	if err := runNetProbe(self, ns, rs, dir, 0); err != nil { // no capability at all
		return fail("%v", err)
	}
	return 0
}

// TestNetNSAsUser: as an ordinary user (uid 65534), a NetNS is made in a
// user namespace of its own; its listener is reached from inside, the
// host's server is not, Landlock and the mount namespace still protect,
// and the program has no capability at all and escapes nothing.
func TestNetNSAsUser(t *testing.T) {
	dir, bin := asUser(t, "ccrun-netns-user-")
	work := userWork(t, dir)
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hl.Close()
	go func() {
		for {
			c, err := hl.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "hello from the host\n")
			c.Close()
		}
	}()
	cmd := exec.Command(bin)
	cmd.Env = []string{netUserEnv + "=" + work + "," + hl.Addr().String(), "TMPDIR=" + dir, "XDG_RUNTIME_DIR=" + dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as uid 65534: %v\n%s", err, out)
	}
}

func init() {
	// a client: dial CCRUN_CONFINE_TEST_DIAL, copy what it says
	if a := os.Getenv("CCRUN_CONFINE_TEST_DIAL"); a != "" {
		c, err := net.Dial("tcp", a)
		if err != nil {
			fmt.Printf("dial: %v\n", err)
			os.Exit(0)
		}
		io.Copy(os.Stdout, c)
		os.Exit(0)
	}
}
