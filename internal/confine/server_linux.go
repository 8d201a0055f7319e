//go:build linux

package confine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ccrun/ccrun/internal/usersock"
)

// The confinement server keeps built rulesets for the processes of this
// user that come and go. A ccrun that lives for one call (ccrun exec)
// would otherwise build its ruleset anew every time: the search of the
// project and one rule per entry of each partly granted directory, a few
// milliseconds of a call that the kernel layer may lengthen by at most
// one. The server builds it once, keeps it as Prepare keeps it in a
// process (rebuilt as soon as a directory it was built from changed: the
// same stamps), and hands a copy of the ruleset's fd to each client over
// a unix socket (SCM_RIGHTS). What a client gets is what it would have
// built itself; it checks that the peer is a process of its own user in
// its own mount namespace and root, that the fd is a Landlock ruleset and
// that the ABI is its own, and otherwise builds its own. A server that is
// not there costs one failed connect: the client builds its own ruleset
// and starts a server (ServerExe) for the next call. A ruleset restricts
// whoever applies it: there is no secret in one to steal, and a process
// of the user that could serve a wider one could as well run unconfined.

// Server settings.
const (
	// ServerEnv, set to "off", keeps Prepare from asking a server or
	// starting one; ServeEnv=1 makes a ccrun process the server
	// (IsRulesetServer, ServeMain).
	ServerEnv = "CCRUN_CONFINE_SERVER"
	ServeEnv  = "CCRUN_CONFINE_SERVE"
	// socketEnv tells a server started by Prepare its socket.
	socketEnv = "CCRUN_CONFINE_SOCKET"
	// ServerIdleEnv is how long the server waits for a client before it
	// exits (a Go duration; default DefaultServerIdle).
	ServerIdleEnv     = "CCRUN_CONFINE_SERVER_IDLE"
	DefaultServerIdle = 10 * time.Minute
)

// ServerExe is the program Prepare starts, detached, as the server when
// none answers (ServeEnv=1 in its environment; its arguments, which it
// does not read, name it for ps: "confine-server SOCKET"). ccrun's main
// sets it to its own executable; empty (a library, a test): no server is
// started, and one already running is still used.
var ServerExe string

// ServerSocket is where the server of this user and this executable
// listens: confine-ID.sock in usersock.Dir, ID a digest of the
// executable's identity (its file's device, inode, size and time), so
// that two builds of ccrun side by side (an upgrade, a checkout) each
// have their own; "" when the executable cannot be told.
func ServerSocket() string {
	exe, ok := startedExe()
	if !ok {
		return ""
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%d/%d/%d/%d", exe.Dev, exe.Ino, exe.Size, exe.Mtime))
	return filepath.Join(usersock.Dir(), "confine-"+hex.EncodeToString(sum[:8])+".sock")
}

// IsRulesetServer reports whether this process was started as the
// confinement server, which keeps rulesets for one-call processes.
func IsRulesetServer() bool { return os.Getenv(ServeEnv) == "1" }

// ServeMain serves at the socket it was started for (ServerSocket by
// default) until it has been idle for ServerIdleEnv, or SIGTERM or SIGINT;
// it returns the exit code (1 when it could not serve).
func ServeMain() int {
	idle := DefaultServerIdle
	if d, err := time.ParseDuration(os.Getenv(ServerIdleEnv)); err == nil && d > 0 {
		idle = d
	}
	socket := os.Getenv(socketEnv)
	if !filepath.IsAbs(socket) {
		if socket = ServerSocket(); socket == "" {
			fmt.Fprintln(os.Stderr, "ccrun confine-server: cannot tell this executable")
			return 1
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := Serve(ctx, socket, idle); err != nil {
		fmt.Fprintln(os.Stderr, "ccrun confine-server:", err)
		return 1
	}
	return 0
}

// request is what a client asks; reply what the server answers, with the
// ruleset's fd beside it. On the socket each is a frame (wire_linux.go).
type request struct {
	ABI    int
	Exe    exeID
	Policy Policy
}

// exeID identifies an executable file: a client is served only by a
// server that is the same program (another build may build rulesets
// otherwise), and a server whose file was replaced (an upgrade) serves
// nobody.
type exeID struct {
	Dev, Ino, Size uint64
	Mtime          int64
}

// exeNow identifies this process's executable as it is at its path now;
// ok is false when that cannot be told.
func exeNow() (exeID, bool) {
	exe, err := os.Executable()
	if err != nil {
		return exeID{}, false
	}
	var st unix.Stat_t
	if err := unix.Stat(exe, &st); err != nil {
		return exeID{}, false
	}
	return exeID{st.Dev, st.Ino, uint64(st.Size), st.Mtim.Nano()}, true
}

// startedExe is this process's executable as it was when first asked.
var startedExe = sync.OnceValues(exeNow)

type reply struct {
	ABI   int
	Rules int
	Where place
	Error string
	// AuditOff: the server found audit disabled when it last asked
	// (serverAudit), so the client need not ask the kernel itself
	AuditOff bool
}

// place is where a process sees the file system from: paths name the
// same files for two processes of the same place.
type place struct {
	MountNS uint64
	RootDev uint64
	RootIno uint64
}

func here() (place, error) {
	var ns, root unix.Stat_t
	if err := unix.Stat("/proc/self/ns/mnt", &ns); err != nil {
		return place{}, err
	}
	if err := unix.Stat("/", &root); err != nil {
		return place{}, err
	}
	return place{ns.Ino, root.Dev, root.Ino}, nil
}

// Serve serves rulesets at socket until ctx ends or no client came for
// idle. The socket's directory is made (0700) and checked; a lock file
// beside the socket keeps a second server off: when one holds it, Serve
// returns nil at once.
func Serve(ctx context.Context, socket string, idle time.Duration) error {
	abi, err := Available()
	if err != nil {
		return err
	}
	where, err := here()
	if err != nil {
		return fmt.Errorf("confine server: %w", err)
	}
	dir := filepath.Dir(socket)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("confine server: %w", err)
	}
	if err := usersock.CheckDir(dir); err != nil {
		return fmt.Errorf("confine server: %w", err)
	}
	lock, err := usersock.TakeLock(socket + ".lock")
	if err != nil || lock == nil {
		return err // nil: another server has it
	}
	defer lock.Close()
	_ = os.Remove(socket) // a stale one: this process holds the lock
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		return fmt.Errorf("confine server: %w", err)
	}
	l.SetUnlinkOnClose(true)
	defer l.Close()
	if err := os.Chmod(socket, 0o600); err != nil {
		return fmt.Errorf("confine server: %w", err)
	}
	uid := os.Getuid()
	startedExe()
	serverAudit.refresh(abi)
	var wg sync.WaitGroup
	defer wg.Wait()
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	for {
		_ = l.SetDeadline(time.Now().Add(idle))
		c, err := l.AcceptUnix()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || ctx.Err() != nil {
				return nil // idle, or told to stop
			}
			return fmt.Errorf("confine server: %w", err)
		}
		if started, _ := startedExe(); !sameExe(started) {
			c.Close()
			return nil // upgraded: the next client starts the new one
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			if peer, err := usersock.PeerUID(c); err != nil || peer != uid {
				return
			}
			serveOne(c, abi, where)
		}()
	}
}

// serveOne answers one request on c.
func serveOne(c *net.UnixConn, abi int, where place) {
	_ = c.SetDeadline(time.Now().Add(serverTimeout))
	frame, err := readFrame(c)
	if err != nil {
		return
	}
	rep := reply{ABI: abi, Where: where}
	fd := -1
	switch req, err := decodeRequest(frame); {
	case err != nil:
		rep.Error = err.Error()
	case req.ABI != abi:
		rep.Error = fmt.Sprintf("landlock ABI %d asked, %d here", req.ABI, abi)
	case !servedExe(req.Exe):
		rep.Error = "another ccrun executable serves here"
	default:
		if fd, rep.Rules, err = cachedDup(req.Policy, abi); err != nil {
			rep.Error = err.Error()
		}
	}
	rep.AuditOff = serverAudit.off()
	var oob []byte
	if fd >= 0 {
		defer unix.Close(fd)
		oob = unix.UnixRights(fd)
	}
	_, _, _ = c.WriteMsgUnix(encodeReply(rep), oob, nil)
	// for the next client, once this one's call is likely past its start
	// (the kernel thread of the question would take a core from it)
	time.AfterFunc(auditRefreshAfter, func() { serverAudit.refresh(abi) })
}

// serverAudit is what the server last read of audit's state, which it
// hands its clients with each ruleset: audit_enabled is read from the
// kernel with a request whose reply comes from a kernel thread made for
// it (a few hundred µs of a one-call ccrun), and a client told that it is
// disabled does not ask. Read again shortly after each reply (at most every
// auditRefresh), so that a machine whose audit was just enabled has its
// programs' refusals reported from the next call on, at the latest once
// auditRefresh has passed; a word older than auditWordFor is not given.
// Only "disabled" is vouched for: a client that hears nothing of it asks
// the kernel itself, and reading the records is reporting only.
var serverAudit auditWord

const (
	auditRefresh      = 100 * time.Millisecond
	auditRefreshAfter = 20 * time.Millisecond
	auditWordFor      = time.Minute
)

type auditWord struct {
	mu       sync.Mutex
	disabled bool
	at       time.Time // when disabled was read; zero: never
	busy     bool      // a refresh under way
}

// off reports whether audit was disabled when last read, not too long ago.
func (w *auditWord) off() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.disabled && !w.at.IsZero() && time.Since(w.at) < auditWordFor
}

// refresh reads audit's state again in the background, unless it was
// read less than auditRefresh ago or is being read.
func (w *auditWord) refresh(abi int) {
	if abi < 7 { // no Landlock records to read: clients do not ask
		return
	}
	w.mu.Lock()
	if w.busy || (!w.at.IsZero() && time.Since(w.at) < auditRefresh) {
		w.mu.Unlock()
		return
	}
	w.busy = true
	w.mu.Unlock()
	go func() {
		disabled := false
		if fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT); err == nil {
			on, err := auditEnabled(fd)
			unix.Close(fd)
			disabled = err == nil && on == 0
		}
		w.mu.Lock()
		w.disabled, w.at, w.busy = disabled, time.Now(), false
		w.mu.Unlock()
	}()
}

// servedExe reports whether a client's executable is this server's. That
// this server's file was not replaced since it started, the accept loop
// has just checked (sameExe).
func servedExe(client exeID) bool {
	started, ok := startedExe()
	return ok && client == started
}

// sameExe reports whether a client's executable is this server's, and
// this server's file was not replaced since it started.
func sameExe(client exeID) bool {
	started, ok := startedExe()
	now, ok2 := exeNow()
	return ok && ok2 && started == now && client == started
}

// serverTimeout bounds one exchange: a cold build of a large project
// takes tens of milliseconds.
const serverTimeout = 5 * time.Second

// dialTimeout bounds the client's connect: a server that does not accept
// at once is taken for none.
const dialTimeout = 100 * time.Millisecond

// fromServer asks this user's server for the ruleset of p: its fd and
// rule count, and whether the server found audit disabled (reply's
// AuditOff), or false (then the caller builds its own, and a server is
// started for the next call).
func fromServer(p Policy, abi int) (fd, rules int, auditOff, ok bool) {
	if os.Getenv(ServerEnv) == "off" {
		return -1, 0, false, false
	}
	socket := ServerSocket()
	if socket == "" {
		return -1, 0, false, false
	}
	fd, rules, auditOff, err := askServer(socket, p, abi)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			startServer(socket)
		}
		return -1, 0, false, false
	}
	return fd, rules, auditOff, true
}

// askServer asks the server at socket for the ruleset of p. The exchange
// is made with blocking system calls on a socket of its own, bounded by
// the socket's timeouts (SO_SNDTIMEO bounds the connect too): a one-call
// ccrun whose first socket this is would otherwise start Go's network
// poller for it, a good part of the round trip.
func askServer(socket string, p Policy, abi int) (fd, rules int, auditOff bool, err error) {
	if err := usersock.CheckDir(filepath.Dir(socket)); err != nil {
		return -1, 0, false, err
	}
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, 0, false, err
	}
	defer unix.Close(s)
	timeout := func(d time.Duration) error {
		tv := unix.NsecToTimeval(d.Nanoseconds())
		if err := unix.SetsockoptTimeval(s, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
			return err
		}
		return unix.SetsockoptTimeval(s, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	}
	if err := timeout(dialTimeout); err != nil {
		return -1, 0, false, err
	}
	if err := ignoringEINTR(func() error { return unix.Connect(s, &unix.SockaddrUnix{Name: socket}) }); err != nil {
		return -1, 0, false, &os.SyscallError{Syscall: "connect", Err: err}
	}
	if peer, err := usersock.PeerUIDFD(s); err != nil || peer != os.Getuid() {
		return -1, 0, false, fmt.Errorf("confine server: peer uid %d (%v): %w", peer, err, usersock.ErrUnsafe)
	}
	exe, ok := startedExe()
	if !ok {
		return -1, 0, false, errors.New("confine server: this executable cannot be told")
	}
	req, err := encodeRequest(request{ABI: abi, Exe: exe, Policy: p})
	if err != nil {
		return -1, 0, false, err
	}
	if err := timeout(serverTimeout); err != nil {
		return -1, 0, false, err
	}
	c := sockConn(s)
	if _, err := c.Write(req); err != nil {
		return -1, 0, false, err
	}
	buf := make([]byte, 4<<10)
	oob := make([]byte, unix.CmsgSpace(4*4))
	var n, oobn int
	err = ignoringEINTR(func() (err error) {
		n, oobn, _, _, err = unix.Recvmsg(s, buf, oob, unix.MSG_CMSG_CLOEXEC)
		return err
	})
	if err != nil {
		return -1, 0, false, &os.SyscallError{Syscall: "recvmsg", Err: err}
	}
	fds, err := receivedFds(oob[:oobn])
	if err != nil {
		return -1, 0, false, err
	}
	closeAll := func() {
		for _, f := range fds {
			unix.Close(f)
		}
	}
	rep, err := decodeReply(c, buf[:n])
	if err != nil {
		closeAll()
		return -1, 0, false, fmt.Errorf("confine server: reply: %w", err)
	}
	where, err := here()
	switch {
	case rep.Error != "":
		err = fmt.Errorf("confine server: %s", rep.Error)
	case err != nil:
	case rep.ABI != abi || rep.Where != where:
		err = fmt.Errorf("confine server: sees another file system or kernel (%+v, here %+v, ABI %d)", rep.Where, where, rep.ABI)
	case len(fds) != 1 || !isRuleset(fds[0]):
		err = errors.New("confine server: no ruleset in the reply")
	}
	if err != nil {
		closeAll()
		return -1, 0, false, err
	}
	return fds[0], rep.Rules, rep.AuditOff, nil
}

// sockConn reads and writes a blocking socket (askServer's).
type sockConn int

func (c sockConn) Read(b []byte) (int, error) {
	var n int
	err := ignoringEINTR(func() (err error) { n, err = unix.Read(int(c), b); return err })
	switch {
	case err != nil:
		return 0, &os.SyscallError{Syscall: "read", Err: err}
	case n == 0 && len(b) > 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c sockConn) Write(b []byte) (int, error) {
	done := 0
	for done < len(b) {
		var n int
		err := ignoringEINTR(func() (err error) { n, err = unix.Write(int(c), b[done:]); return err })
		if err != nil {
			return done, &os.SyscallError{Syscall: "write", Err: err}
		}
		done += n
	}
	return done, nil
}

// ignoringEINTR calls f again while it fails with EINTR (a signal Go's
// runtime sent the thread).
func ignoringEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}

// receivedFds returns the fds of a message's SCM_RIGHTS, close-on-exec.
func receivedFds(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		got, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, f := range got {
			unix.CloseOnExec(f)
		}
		fds = append(fds, got...)
	}
	return fds, nil
}

// isRuleset reports whether fd is a Landlock ruleset.
func isRuleset(fd int) bool {
	link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	return err == nil && link == "anon_inode:[landlock-ruleset]"
}

var startOnce sync.Once

// startServer starts ServerExe as the server at socket, detached (a
// session of its own, stdio on /dev/null, working directory /), once per
// process, with nothing of this process's environment but the idle time.
func startServer(socket string) {
	if ServerExe == "" {
		return
	}
	startOnce.Do(func() {
		cmd := exec.Command(ServerExe, "confine-server", socket)
		cmd.Env = []string{ServeEnv + "=1", socketEnv + "=" + socket}
		if v, ok := os.LookupEnv(ServerIdleEnv); ok {
			cmd.Env = append(cmd.Env, ServerIdleEnv+"="+v)
		}
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if cmd.Start() == nil {
			go func() { _ = cmd.Wait() }() // reap it should it end while this process lives
		}
	})
}
