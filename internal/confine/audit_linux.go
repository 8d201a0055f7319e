//go:build linux

package confine

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// What a confined program was refused is read from Landlock's own denial
// records (Landlock ABI 7, Linux 6.15), which the kernel's audit subsystem
// sends to the multicast group of its netlink socket: a record per denial
// (AUDIT_LANDLOCK_ACCESS: the domain, the rights refused, the path), and
// one the first time a domain is named (AUDIT_LANDLOCK_DOMAIN: the pid
// that made it). Each program Start starts makes a domain of its own, so
// the pid it was started as claims the records of its domain, and of
// whatever it forked. The helper asks for them with
// LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON (they are off after an execve by
// default), and only while this process reads them.
//
// Landlock logs only while audit is enabled (audit_enabled, `auditctl -e
// 1`, an auditd); reading the group takes CAP_AUDIT_READ, asking audit's
// state CAP_AUDIT_CONTROL, and the barrier that tells that every record of
// a program that exited has arrived (a user message, queued behind them)
// CAP_AUDIT_WRITE. Where any is missing, programs' refusals are not
// reported (ProgramRefusals says why); nothing is ever allowed or refused
// by what is read here: it is reporting only. A program that restricts
// itself further (a Landlock of its own) makes a domain named with its
// pid too: what that refuses it is said as the sandbox's.

// Audit record and message types (linux/audit.h).
const (
	auditGet            = 1000
	auditSet            = 1001
	auditUser           = 1005
	auditLandlockAccess = 1423
	auditLandlockDomain = 1424
	auditNlgrpReadlog   = 1
	auditStatusEnabled  = 1
	restrictLogSameOff  = 1 // LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF
)

// auditor reads Landlock's records. Made once; never closed.
type auditor struct {
	mcast *os.File // bound to the read-log group
	ctl   int      // unicast: the barriers
	ctlMu sync.Mutex
	get   int // unicast: audit's state
	getMu sync.Mutex
	seq   atomic.Uint64

	mu      sync.Mutex
	gen     uint64               // domains named so far
	creator map[uint64]named     // domain -> the pid that made it
	denials map[uint64][]Refusal // domain -> what it was refused, not yet taken
	order   []uint64             // the domains, oldest first: at most maxDomains kept
	// pending are denials of a domain not yet named, each with its
	// event's serial: a domain is named in the event of its first
	// denial, and another event's records may come between the two
	// (programs on other CPUs); the oldest go first past maxPending
	pending  []pendingDenial
	barriers map[string]chan struct{}
	lost     bool // the group's buffer overflowed: something may be missing
	broken   error
}

// named is a domain's maker, and the gen it was named at.
type named struct {
	pid int
	gen uint64
}

type pendingDenial struct {
	serial string // "audit(SEC.MS:SERIAL": its event
	domain uint64
	r      Refusal
}

const (
	maxDomains = 1024
	maxPending = 64
	maxPerRun  = 20
)

var (
	auditOnce sync.Mutex
	theAudit  *auditor
	auditErr  error // a lasting reason (a capability missing); nil: try again
)

// auditFor returns the auditor, made on first use, or why programs'
// refusals cannot be read here. Audit being disabled is asked again on
// the next call (someone may enable it); a missing capability is not.
func auditFor(abi int) (*auditor, error) {
	if abi < 7 {
		return nil, fmt.Errorf("confine: Landlock's denial records need ABI 7 (Linux 6.15), this kernel has %d", abi)
	}
	auditOnce.Lock()
	defer auditOnce.Unlock()
	if theAudit != nil {
		if err := theAudit.enabled(); err != nil {
			return nil, err
		}
		return theAudit, nil
	}
	if auditErr != nil {
		return nil, auditErr
	}
	a, lasting, err := newAuditor()
	if err != nil {
		if lasting {
			auditErr = err
		}
		return nil, err
	}
	theAudit = a
	return a, nil
}

// newAuditor checks that audit is enabled and opens the group; lasting
// says the failure will not change in this process.
func newAuditor() (a *auditor, lasting bool, err error) {
	ctl, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return nil, true, fmt.Errorf("no audit netlink socket: %w", err)
	}
	enabled, err := auditEnabled(ctl)
	if err != nil {
		unix.Close(ctl)
		return nil, true, fmt.Errorf("audit's state cannot be read (CAP_AUDIT_CONTROL): %w", err)
	}
	if enabled == 0 {
		unix.Close(ctl)
		return nil, false, errDisabled
	}
	m, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_AUDIT)
	if err != nil {
		unix.Close(ctl)
		return nil, true, fmt.Errorf("no audit netlink socket: %w", err)
	}
	if err := unix.Bind(m, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1 << (auditNlgrpReadlog - 1)}); err != nil {
		unix.Close(ctl)
		unix.Close(m)
		return nil, true, fmt.Errorf("audit's records cannot be read (CAP_AUDIT_READ): %w", err)
	}
	_ = unix.SetsockoptInt(m, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20) // up to rmem_max
	get, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		unix.Close(ctl)
		unix.Close(m)
		return nil, true, fmt.Errorf("no audit netlink socket: %w", err)
	}
	a = &auditor{mcast: os.NewFile(uintptr(m), "audit-readlog"), ctl: ctl, get: get, creator: map[uint64]named{},
		denials: map[uint64][]Refusal{}, barriers: map[string]chan struct{}{}}
	go a.read()
	// the barrier needs CAP_AUDIT_WRITE: try one now
	if err := a.barrier(); err != nil {
		a.mcast.Close() // ends read
		unix.Close(ctl)
		unix.Close(get)
		return nil, true, err
	}
	return a, false, nil
}

// errDisabled: audit is off, and Landlock logs nothing.
var errDisabled = errors.New("audit is disabled on this machine (auditctl -e 0), and Landlock logs nothing then")

// enabled is nil while audit is enabled, or why records cannot come.
func (a *auditor) enabled() error {
	a.getMu.Lock()
	on, err := auditEnabled(a.get)
	a.getMu.Unlock()
	switch {
	case err != nil:
		return fmt.Errorf("audit's state cannot be read: %w", err)
	case on == 0:
		return errDisabled
	}
	return nil
}

// auditEnabled asks the kernel for audit_enabled (AUDIT_GET).
func auditEnabled(fd int) (uint32, error) {
	msg := make([]byte, unix.NLMSG_HDRLEN)
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], auditGet)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, err
	}
	buf := make([]byte, 1024)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n < unix.NLMSG_HDRLEN+8 {
			return 0, errors.New("short audit status")
		}
		switch binary.NativeEndian.Uint16(buf[4:]) {
		case unix.NLMSG_ERROR:
			if e := int32(binary.NativeEndian.Uint32(buf[unix.NLMSG_HDRLEN:])); e < 0 {
				return 0, unix.Errno(-e)
			}
			continue
		case auditGet:
			return binary.NativeEndian.Uint32(buf[unix.NLMSG_HDRLEN+4:]), nil // struct audit_status: mask, enabled
		}
	}
}

// SetAuditEnabled sets audit_enabled (as `auditctl -e` does; it needs
// CAP_AUDIT_CONTROL) and returns what it was: for tests, which turn
// Landlock's records on for their run and back off after. It changes the
// whole machine's audit, which ccrun itself never does.
func SetAuditEnabled(on bool) (was bool, err error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	cur, err := auditEnabled(fd)
	if err != nil {
		return false, err
	}
	want := uint32(0)
	if on {
		want = 1
	}
	if cur == want || cur == 2 { // 2: locked
		return cur != 0, nil
	}
	msg := make([]byte, unix.NLMSG_HDRLEN+40) // struct audit_status's first fields
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], auditSet)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	binary.NativeEndian.PutUint32(msg[unix.NLMSG_HDRLEN:], auditStatusEnabled)
	binary.NativeEndian.PutUint32(msg[unix.NLMSG_HDRLEN+4:], want)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return cur != 0, err
	}
	buf := make([]byte, 1024)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return cur != 0, err
	}
	if n >= unix.NLMSG_HDRLEN+4 && binary.NativeEndian.Uint16(buf[4:]) == unix.NLMSG_ERROR {
		if e := int32(binary.NativeEndian.Uint32(buf[unix.NLMSG_HDRLEN:])); e < 0 {
			return cur != 0, unix.Errno(-e)
		}
	}
	auditOnce.Lock()
	if on && theAudit == nil {
		auditErr = nil // try again
	}
	auditOnce.Unlock()
	return cur != 0, nil
}

// HoldAudit turns the machine's audit on (or off) until release is called
// and then puts it back as it was: for tests, which need Landlock's
// records (or their absence).
// Holders exclude each other, in this process and across processes (an
// exclusive flock on a file of the temporary directory), so a test that
// puts the setting back never does it under another test's run.
func HoldAudit(on bool) (release func(), err error) {
	f, err := os.OpenFile(os.TempDir()+"/ccrun-audit-test.lock", os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	was, err := SetAuditEnabled(on)
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		if was != on {
			SetAuditEnabled(was)
		}
		f.Close() // and the lock with it
	}, nil
}

// barrierWait bounds the wait for a barrier: audit delivers in a
// kernel thread, in order, within microseconds unless the machine is
// starved; past this the refusals are said to be possibly incomplete.
const barrierWait = 5 * time.Second

// barrier queues a user message behind every record queued so far and
// waits until the group delivers it: the records of a program that has
// exited have all arrived then.
func (a *auditor) barrier() error {
	if err := a.enabled(); err != nil {
		return err // a message would be dropped: do not wait for it
	}
	// a token nobody can guess, from this pid (the record says the
	// sender's): a program that may write audit messages cannot end the
	// wait early
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	token := fmt.Sprintf("ccrun-barrier %d-%x", a.seq.Add(1), nonce)
	ch := make(chan struct{})
	a.mu.Lock()
	if a.broken != nil {
		a.mu.Unlock()
		return a.broken
	}
	a.barriers[token] = ch
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.barriers, token)
		a.mu.Unlock()
	}()
	msg := make([]byte, unix.NLMSG_HDRLEN+len(token)+1)
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], auditUser)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST)
	copy(msg[unix.NLMSG_HDRLEN:], token)
	a.ctlMu.Lock()
	err := unix.Sendto(a.ctl, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
	a.ctlMu.Unlock()
	if err != nil {
		return fmt.Errorf("audit's barrier message cannot be sent (CAP_AUDIT_WRITE): %w", err)
	}
	t := time.NewTimer(barrierWait)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		return errors.New("audit's records did not arrive in time (is audit still enabled?)")
	}
}

// read parses the group's records until the socket fails.
func (a *auditor) read() {
	buf := make([]byte, 1<<16)
	for {
		n, err := a.mcast.Read(buf)
		if errors.Is(err, unix.ENOBUFS) {
			a.mu.Lock()
			a.lost = true
			a.mu.Unlock()
			continue
		}
		if err != nil {
			a.mu.Lock()
			a.broken = fmt.Errorf("audit's records cannot be read: %w", err)
			a.mu.Unlock()
			return
		}
		for b := buf[:n]; len(b) >= unix.NLMSG_HDRLEN; {
			l := int(binary.NativeEndian.Uint32(b))
			if l < unix.NLMSG_HDRLEN || l > len(b) {
				l = len(b) // the group sends one record a datagram
			}
			a.record(binary.NativeEndian.Uint16(b[4:]), string(b[unix.NLMSG_HDRLEN:l]))
			b = b[min(len(b), (l+unix.NLMSG_ALIGNTO-1)&^(unix.NLMSG_ALIGNTO-1)):]
		}
	}
}

// record takes one record: "audit(SEC.MS:SERIAL): FIELDS".
func (a *auditor) record(typ uint16, text string) {
	if typ != auditLandlockAccess && typ != auditLandlockDomain && typ != auditUser {
		return
	}
	text = strings.TrimRight(text, "\x00\n")
	serial, fields, ok := strings.Cut(text, "): ")
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch typ {
	case auditUser:
		if !strings.HasPrefix(fields, "pid="+strconv.Itoa(os.Getpid())+" ") {
			return
		}
		for token, ch := range a.barriers {
			if strings.HasSuffix(fields, "msg='"+token+"'") {
				close(ch)
				delete(a.barriers, token)
			}
		}
	case auditLandlockDomain:
		f := parseFields(fields)
		d, err := strconv.ParseUint(f["domain"], 16, 64)
		if err != nil || f["status"] != "allocated" {
			return
		}
		pid, err := strconv.Atoi(f["pid"])
		if err != nil {
			return
		}
		if _, ok := a.creator[d]; !ok {
			a.order = append(a.order, d)
			if len(a.order) > maxDomains {
				delete(a.creator, a.order[0])
				delete(a.denials, a.order[0])
				a.order = a.order[1:]
			}
		}
		a.gen++
		a.creator[d] = named{pid, a.gen}
		rest := a.pending[:0]
		for _, p := range a.pending {
			if p.domain == d && p.serial == serial {
				a.add(d, p.r)
			} else {
				rest = append(rest, p)
			}
		}
		a.pending = rest
	case auditLandlockAccess:
		f := parseFields(fields)
		d, err := strconv.ParseUint(f["domain"], 16, 64)
		if err != nil {
			return
		}
		r, ok := refusalOf(f)
		if !ok {
			return
		}
		if _, known := a.creator[d]; known {
			a.add(d, r)
		} else {
			if len(a.pending) >= maxPending {
				a.pending = append(a.pending[:0], a.pending[1:]...)
			}
			a.pending = append(a.pending, pendingDenial{serial, d, r})
		}
	}
}

// add keeps r for domain d, once, at most maxPerRun of them.
func (a *auditor) add(d uint64, r Refusal) {
	rs := a.denials[d]
	if len(rs) >= maxPerRun {
		return
	}
	for _, x := range rs {
		if x == r {
			return
		}
	}
	a.denials[d] = append(rs, r)
}

// refusalOf is the Refusal a denial record says, if it is one a person
// can act on: a file read or written, a name made or removed in a
// directory (the record names the directory only), a TCP port connected
// to. Of several rights refused at once, the strongest is said.
func refusalOf(f map[string]string) (Refusal, bool) {
	rank := map[string]int{"read": 1, "remove in": 2, "create in": 3, "write": 4}
	op := ""
	for _, b := range strings.Split(f["blockers"], ",") {
		o := ""
		switch {
		case b == "fs.read_file" || b == "fs.read_dir" || b == "fs.execute":
			o = "read"
		case strings.HasPrefix(b, "fs.make_"):
			o = "create in"
		case strings.HasPrefix(b, "fs.remove_"):
			o = "remove in"
		case strings.HasPrefix(b, "fs."): // write_file, truncate, refer, ioctl_dev
			o = "write"
		case b == "net.connect_tcp" && f["dest"] != "":
			return Refusal{Op: "connect", What: "port " + f["dest"]}, true
		}
		if rank[o] > rank[op] {
			op = o
		}
	}
	if op == "" || f["path"] == "" || procEntry(f["path"]) {
		return Refusal{}, false
	}
	return Refusal{Op: op, What: printable(f["path"])}, true
}

// printable is p, quoted as Go would when it holds a control character
// (a name audit gave in hex may): a refusal is one line.
func printable(p string) string {
	for _, c := range p {
		if c < 0x20 || c == 0x7f {
			return strconv.Quote(p)
		}
	}
	return p
}

// procEntry reports whether p lies in a process's /proc entry, hidden from
// every confined program (HideProcesses) and asked for by many that cope
// without (/proc/self/maps): no refusal a person could grant, so not said.
func procEntry(p string) bool {
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return false
	}
	pid, _, _ := strings.Cut(rest, "/")
	_, err := strconv.Atoi(pid)
	return err == nil || pid == "self" || pid == "thread-self"
}

// parseFields splits audit's "k=v k2="quoted v" k3=HEX" fields; a value
// audit gave in hex (one with spaces or quotes in it) is decoded when the
// key is a path's.
func parseFields(s string) map[string]string {
	f := map[string]string{}
	for s != "" {
		s = strings.TrimLeft(s, " ")
		k, rest, ok := strings.Cut(s, "=")
		if !ok {
			break
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				break
			}
			v, s = rest[1:1+end], rest[2+end:]
		} else {
			v, s, _ = strings.Cut(rest, " ")
			if k == "path" || k == "name" || k == "exe" || k == "comm" {
				if b, err := hex.DecodeString(v); err == nil && v != "(null)" {
					v = string(b)
				}
			}
		}
		f[k] = v
	}
	return f
}

// mark is the gen before a program starts: the domains named after it
// with its pid are its own (an earlier process of that pid is not).
func (a *auditor) mark() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gen
}

// takeAll is take for each pid of starts, after one barrier.
func (a *auditor) takeAll(starts map[int]uint64) ([]Refusal, error) {
	err := a.barrier()
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []Refusal
	for d, n := range a.creator {
		if since, ok := starts[n.pid]; ok && n.gen > since {
			out = append(out, a.denials[d]...)
			delete(a.denials, d)
		}
	}
	if err == nil && a.lost {
		err = errors.New("some of audit's records were lost (the reading socket overflowed)")
		a.lost = false
	}
	return out, err
}

// take returns, and forgets, what the domains pid made after since were
// refused since the last take, after a barrier.
func (a *auditor) take(pid int, since uint64) ([]Refusal, error) {
	return a.takeAll(map[int]uint64{pid: since})
}
