// Package once speaks to once, the program that serves exactly one call
// in a container made in advance: the run container of every pod of
// runtime/kube, and a pooled container of runtime/docker. Started as the
// container's program with its stdin open, once waits for a request (the
// argv, read from stdin), forks the program and a copier of its stdin,
// waits, writes the nonce of the request and the wait status to stdout
// and to stderr, waits for ccrun's done token (release), and exits as the
// program did: the container ends, and it is used once. src/once.c is
// its source, with the protocol; ELF gives it for an engine's
// architecture.
//
// An engine gives the container's streams as a Conn; Start runs one call
// over it.
package once

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The sizes of once's protocol.
const (
	Max         = 1 << 20 // the largest request: the nonce, argc, and the strings of argv and env
	nonceSize   = 16
	trailerSize = nonceSize + 4 // the nonce, then a u32 wait status
	ackStatus   = 0xffffffff    // the status of the ack, which no wait status is
	chunk       = 32 << 10      // the largest frame of stdin ccrun sends
)

// Conn is an engine's sessions to the streams of a container whose
// program is once.
type Conn interface {
	// Write sends p to once's stdin.
	Write(p []byte) (int, error)
	// Abort ends the sessions, err their error.
	Abort(err error)
	// SetOutput points once's stdout and stderr at w and e from now on.
	SetOutput(w, e io.Writer)
	// Done is closed when the sessions ended; Err then says why.
	Done() <-chan struct{}
	Err() error
}

// request frames argv and env for once: its length, the nonce, argc, the
// strings.
func request(nonce []byte, argv, env []string) []byte {
	n := requestSize(argv, env)
	b := binary.LittleEndian.AppendUint32(make([]byte, 0, 4+n), uint32(n))
	b = append(b, nonce...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(argv)))
	for _, a := range append(argv[:len(argv):len(argv)], env...) {
		b = append(append(b, a...), 0)
	}
	return b
}

// Check says why argv and env cannot be sent to once: a string holding a
// NUL byte (once's strings end at one, so it would split the string, and
// a piece of an argument could become an environment entry; no program
// can receive one anyway), or a request larger than Max. nil: they can.
func Check(argv, env []string) error {
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("argument %d holds a NUL byte, which no program can receive", i)
		}
	}
	for _, kv := range env {
		if strings.IndexByte(kv, 0) >= 0 {
			return fmt.Errorf("environment entry %q holds a NUL byte, which no program can receive", kv)
		}
	}
	if n := requestSize(argv, env); n > Max {
		return fmt.Errorf("the command and its environment are %d bytes: at most %d", n, Max)
	}
	return nil
}

// requestSize is the size of argv and env in once's request (Check: at most Max).
func requestSize(argv, env []string) int {
	n := nonceSize + 4
	for _, a := range append(argv[:len(argv):len(argv)], env...) {
		n += len(a) + 1
	}
	return n
}

// sendStdin sends r (nil: nothing) to once as frames, then the end frame.
// A read error of r ends the program's stdin too, and is returned. It
// stops, sending nothing more, once stop is closed (the program ended: no
// one reads the frames any more).
func sendStdin(w io.Writer, r io.Reader, stop <-chan struct{}) error {
	var rerr error
	if r != nil {
		buf := make([]byte, 4+chunk)
		for {
			n, err := r.Read(buf[4:])
			select {
			case <-stop:
				return nil
			default:
			}
			if n > 0 {
				binary.LittleEndian.PutUint32(buf, uint32(n))
				if _, err := w.Write(buf[:4+n]); err != nil {
					return err
				}
			}
			if err != nil {
				if err != io.EOF {
					rerr = err
				}
				break
			}
		}
	}
	if _, err := w.Write([]byte{0, 0, 0, 0}); err != nil {
		return err
	}
	return rerr
}

// NotStarted is the error of a call whose program never started: a
// request Check refuses, or once did not ack it (the sessions failed, or
// did not come up in time). Nothing of the call ran.
type NotStarted struct{ Err error }

// Error says the program did not start, and why.
func (n NotStarted) Error() string { return "the program did not start: " + n.Err.Error() }

// Unwrap is the reason it did not start.
func (n NotStarted) Unwrap() error { return n.Err }

// Call is one call served by once over a Conn.
type Call struct {
	stdout, stderr *marks
	ended          chan error
	released       chan struct{}
}

// Start starts argv with stdin (nil: none) under once over c, its output
// to stdout and stderr, env (NAME=value each) added to the container's
// environment (replacing what it names): the handshake (at most
// ackTimeout for once's ack), then the frames of stdin and the release
// beside them. It returns at once; Ended says when the call is over.
func Start(c Conn, argv, env []string, stdin io.Reader, stdout, stderr io.Writer, ackTimeout time.Duration) *Call {
	nonce := []byte(newNonce())
	oc := &Call{stdout: newMarks(stdout, nonce), stderr: newMarks(stderr, nonce), ended: make(chan error, 1), released: make(chan struct{})}
	c.SetOutput(oc.stdout, oc.stderr)
	go func() {
		if err := handshake(c, argv, env, nonce, oc.stdout, oc.stderr, ackTimeout); err != nil {
			oc.ended <- err
			return
		}
		stop := make(chan struct{})
		go func() { _ = sendStdin(c, stdin, stop) }()
		go func() {
			if release(c, c.Done(), nonce, oc.stdout, oc.stderr, stop) {
				close(oc.released)
			}
		}()
		<-c.Done()
		oc.ended <- nil
	}()
	return oc
}

// Ended gets the handshake's error (a NotStarted), or nil once the
// sessions ended.
func (oc *Call) Ended() <-chan error { return oc.ended }

// Released is closed when both trailers came and once was sent its done
// token: all the program wrote has come, and once ends by itself. An
// engine that need not see the container end can take Result then.
func (oc *Call) Released() <-chan struct{} { return oc.released }

// Result passes on what the marks held back and returns the program's
// wait status, with whole true only when both streams came with their
// trailer: all the program wrote has come (once writes each after it,
// and ends only when released). Call it after Ended or Released.
func (oc *Call) Result() (ws uint32, whole bool) {
	oc.stdout.flush()
	oc.stderr.flush()
	ws, whole = oc.stderr.trailer()
	if _, out := oc.stdout.trailer(); !out {
		whole = false
	}
	return ws, whole
}

// handshake sends once its request, waits for its ack on both streams
// (timeout at most), then sends the go byte: from there on the program
// runs and its output reaches c.
func handshake(c Conn, argv, env []string, nonce []byte, stdout, stderr *marks, timeout time.Duration) error {
	if err := Check(argv, env); err != nil {
		return NotStarted{err} // sent, it would not be what was asked for
	}
	noAck := errors.New("no ack from the container's program within " + timeout.String())
	t := time.AfterFunc(timeout, func() { c.Abort(noAck) })
	defer t.Stop()
	if _, err := c.Write(request(nonce, argv, env)); err != nil {
		return NotStarted{err}
	}
	for _, m := range []*marks{stdout, stderr} {
		select {
		case <-m.acked:
		case <-c.Done():
			return NotStarted{c.Err()}
		}
	}
	if !t.Stop() {
		return NotStarted{noAck}
	}
	_, err := c.Write([]byte{'g'})
	return err
}

// release waits for the trailer on both of once's streams, then stops
// sendStdin (closing stop) and sends once its done token, 0xff and the
// nonce: the program's output has all come, and the container may end. A
// token in the call's own stdin would need the nonce, which only ccrun
// and once know. It returns early when the session ends first, and
// reports whether the token was sent.
func release(w io.Writer, done <-chan struct{}, nonce []byte, stdout, stderr *marks, stop chan<- struct{}) bool {
	for _, m := range []*marks{stdout, stderr} {
		select {
		case <-m.ended:
		case <-done:
			return false
		}
	}
	close(stop)
	_, err := w.Write(append([]byte{0xff}, nonce...))
	return err == nil
}

// marks passes a stream of once's on to w without its marks: the nonce of
// the call and a u32 status, the ack first (status ackStatus), then the
// trailer with the program's wait status. It holds back only
// bytes that may begin a mark. A program could write the marks itself
// only by reading once's memory, and then only to misreport its own exit
// status, which it sets anyway.
type marks struct {
	w      io.Writer
	nonce  []byte
	mu     sync.Mutex
	held   []byte
	acked  chan struct{} // closed at the ack
	ended  chan struct{} // closed at the trailer; status is then set
	ack    bool
	end    bool
	status uint32
}

func newMarks(w io.Writer, nonce []byte) *marks {
	return &marks{w: w, nonce: nonce, acked: make(chan struct{}), ended: make(chan struct{})}
}

func (m *marks) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.end {
		return len(p), m.pass(p)
	}
	buf := p
	if len(m.held) > 0 {
		buf = append(m.held, p...)
		m.held = nil
	}
	for !m.end {
		i := bytes.Index(buf, m.nonce)
		if i < 0 {
			break
		}
		if len(buf) < i+trailerSize {
			m.held = append([]byte(nil), buf[i:]...)
			return len(p), m.pass(buf[:i])
		}
		if err := m.pass(buf[:i]); err != nil {
			return len(p), err
		}
		status := binary.LittleEndian.Uint32(buf[i+nonceSize:])
		buf = buf[i+trailerSize:]
		switch {
		case status == ackStatus && !m.ack:
			m.ack = true
			close(m.acked)
		case status != ackStatus:
			m.end, m.status = true, status
			close(m.ended)
		}
	}
	if m.end {
		return len(p), m.pass(buf)
	}
	k := partial(buf, m.nonce)
	m.held = append([]byte(nil), buf[len(buf)-k:]...)
	return len(p), m.pass(buf[:len(buf)-k])
}

func (m *marks) pass(p []byte) error {
	if len(p) == 0 || m.w == nil {
		return nil
	}
	_, err := m.w.Write(p)
	return err
}

// flush passes on what was held back: at the end of a stream that had no
// trailer, it was the program's.
func (m *marks) flush() {
	m.mu.Lock()
	defer m.mu.Unlock()
	_ = m.pass(m.held)
	m.held = nil
}

// trailer returns the program's wait status, once the trailer came.
func (m *marks) trailer() (uint32, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status, m.end
}

// partial is the length of the longest end of b that begins mark.
func partial(b, mark []byte) int {
	k := min(len(b), len(mark)-1)
	for ; k > 0; k-- {
		if bytes.HasPrefix(mark, b[len(b)-k:]) {
			return k
		}
	}
	return 0
}

// WaitStatus decodes the status of once's trailer, a wait(2) status: the
// exit code (128+signal for a program killed by a signal; 127 for one
// that could not be executed) and the signal, 0 when it exited.
func WaitStatus(ws uint32) (code, signal int) {
	if _, ok := ExecErrno(ws); ok {
		return 127, 0
	}
	if sig := int(ws & 0x7f); sig != 0 {
		return 128 + sig, sig
	}
	return int(ws>>8) & 0xff, 0
}

// ExecErrno returns why the program could not be executed (execve's
// errno), and false when it was.
func ExecErrno(ws uint32) (syscall.Errno, bool) {
	if ws&0xff != 0x7f || ws == ackStatus {
		return 0, false
	}
	return syscall.Errno(ws >> 8), true
}

// ExecMessage is what the caller of a program that could not be executed
// gets on stderr, argv0 naming it ("ccrun: exec ARGV0: REASON"), or ""
// when it was executed.
func ExecMessage(argv0 string, ws uint32) string {
	errno, ok := ExecErrno(ws)
	if !ok {
		return ""
	}
	return fmt.Sprintf("ccrun: exec %s: %v\n", argv0, errno)
}

// newNonce is a request's nonce: 16 random hex digits, which a program
// cannot guess to forge a trailer or a done token.
func newNonce() string {
	b := make([]byte, nonceSize/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Sink is a writer that can be pointed elsewhere; nil: discard. A Conn
// keeps once's two streams in two Sinks for SetOutput.
type Sink struct {
	mu sync.Mutex
	w  io.Writer
}

// Set points s at w.
func (s *Sink) Set(w io.Writer) {
	s.mu.Lock()
	s.w = w
	s.mu.Unlock()
}

// Write writes p to where s points, or discards it when nowhere.
func (s *Sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return len(p), nil
	}
	return s.w.Write(p)
}
