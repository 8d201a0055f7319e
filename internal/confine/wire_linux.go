//go:build linux

package confine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// The confinement server's exchange, one request and one reply a
// connection, each a frame: its length (4 bytes, the machine's order) and
// that many bytes of fields, each ended by a NUL, which no path holds. A
// number is written in decimal, a list as its length and then its
// entries. It is read where encoding/json would cost a one-call process
// more than the rest of the exchange: the reflection over Policy on its
// first use.

// maxFrame bounds a frame: a Policy of a few thousand paths.
const maxFrame = 1 << 20

// errFrame: a frame that does not say what it should.
var errFrame = errors.New("confine server: malformed message")

type frameWriter struct {
	b      []byte
	fields int
}

func newFrame() *frameWriter { return &frameWriter{b: make([]byte, 4, 4<<10)} }

func (w *frameWriter) str(s string) { w.b = append(append(w.b, s...), 0); w.fields++ }

func (w *frameWriter) uint(n uint64) { w.b = append(strconv.AppendUint(w.b, n, 10), 0); w.fields++ }

func (w *frameWriter) int(n int64) { w.b = append(strconv.AppendInt(w.b, n, 10), 0); w.fields++ }

func (w *frameWriter) bool(v bool) {
	if v {
		w.uint(1)
	} else {
		w.uint(0)
	}
}

func (w *frameWriter) list(l []string) {
	w.uint(uint64(len(l)))
	for _, s := range l {
		w.str(s)
	}
}

// bytes ends the frame: its length in front. A string holding a NUL
// cannot be sent.
func (w *frameWriter) bytes() ([]byte, error) {
	if len(w.b) > maxFrame {
		return nil, fmt.Errorf("confine server: a message of %d bytes", len(w.b))
	}
	if bytes.Count(w.b[4:], []byte{0}) != w.fields {
		return nil, errors.New("confine server: a path holds a NUL")
	}
	binary.NativeEndian.PutUint32(w.b, uint32(len(w.b)-4))
	return w.b, nil
}

type frameReader struct {
	b   []byte
	err error
}

func (r *frameReader) str() string {
	i := bytes.IndexByte(r.b, 0)
	if i < 0 {
		r.err = errFrame
		return ""
	}
	s := string(r.b[:i])
	r.b = r.b[i+1:]
	return s
}

func (r *frameReader) uint() uint64 {
	n, err := strconv.ParseUint(r.str(), 10, 64)
	if err != nil && r.err == nil {
		r.err = errFrame
	}
	return n
}

func (r *frameReader) int() int64 {
	n, err := strconv.ParseInt(r.str(), 10, 64)
	if err != nil && r.err == nil {
		r.err = errFrame
	}
	return n
}

func (r *frameReader) bool() bool { return r.uint() != 0 }

func (r *frameReader) list() []string {
	n := r.uint()
	if n > uint64(len(r.b)) { // each entry takes its NUL at least
		r.err = errFrame
		return nil
	}
	var l []string
	for range n {
		l = append(l, r.str())
	}
	return l
}

// done reports the first error, or one for what is left over.
func (r *frameReader) done() error {
	if r.err == nil && len(r.b) > 0 {
		return errFrame
	}
	return r.err
}

// readFrame reads one frame from c: its fields.
func readFrame(c io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return nil, err
	}
	size := binary.NativeEndian.Uint32(n[:])
	if size > maxFrame {
		return nil, errFrame
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(c, b); err != nil {
		return nil, err
	}
	return b, nil
}

func encodeRequest(q request) ([]byte, error) {
	w := newFrame()
	w.int(int64(q.ABI))
	w.uint(q.Exe.Dev)
	w.uint(q.Exe.Ino)
	w.uint(q.Exe.Size)
	w.int(q.Exe.Mtime)
	p := q.Policy
	for _, l := range [][]string{p.Hide, p.Read, p.Write, p.Private, p.Search, p.Writable, p.Protect, p.Mask} {
		w.list(l)
	}
	w.bool(p.HideProcesses)
	w.bool(p.Network)
	return w.bytes()
}

func decodeRequest(b []byte) (request, error) {
	r := &frameReader{b: b}
	var q request
	q.ABI = int(r.int())
	q.Exe = exeID{Dev: r.uint(), Ino: r.uint(), Size: r.uint(), Mtime: r.int()}
	p := &q.Policy
	for _, l := range []*[]string{&p.Hide, &p.Read, &p.Write, &p.Private, &p.Search, &p.Writable, &p.Protect, &p.Mask} {
		*l = r.list()
	}
	p.HideProcesses = r.bool()
	p.Network = r.bool()
	return q, r.done()
}

func encodeReply(p reply) []byte {
	w := newFrame()
	w.int(int64(p.ABI))
	w.int(int64(p.Rules))
	w.uint(p.Where.MountNS)
	w.uint(p.Where.RootDev)
	w.uint(p.Where.RootIno)
	w.str(p.Error)
	w.bool(p.AuditOff)
	b, err := w.bytes()
	if err != nil { // an error text holding a NUL
		w = newFrame()
		w.int(int64(p.ABI))
		w.int(0)
		w.uint(0)
		w.uint(0)
		w.uint(0)
		w.str("confine server: an unprintable error")
		w.bool(false)
		b, _ = w.bytes()
	}
	return b
}

// decodeReply reads the reply whose first bytes are got, and the rest
// from c.
func decodeReply(c io.Reader, got []byte) (reply, error) {
	frame, err := readFrame(io.MultiReader(bytes.NewReader(got), c))
	if err != nil {
		return reply{}, err
	}
	r := &frameReader{b: frame}
	var p reply
	p.ABI = int(r.int())
	p.Rules = int(r.int())
	p.Where = place{MountNS: r.uint(), RootDev: r.uint(), RootIno: r.uint()}
	p.Error = r.str()
	p.AuditOff = r.bool()
	return p, r.done()
}
