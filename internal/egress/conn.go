package egress

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/textproto"
	"sync"
	"sync/atomic"
	"time"
)

// conn is a connection the Proxy tracks: a client's or an upstream one.
// It notes when it last moved a byte, for the idle timeout, and Close
// closes it once, giving back a client's token.
type conn struct {
	net.Conn
	p      *Proxy
	client bool
	last   atomic.Int64 // when a byte last moved, as p.now
	pinned atomic.Int32 // > 0: kept from the idle timeout

	prefix []byte    // the first bytes, read before the connection was passed on
	rec    *recorder // an HTTP client's first request header

	closeOnce sync.Once
	closeErr  error
}

// track makes nc a conn of p, or closes it and returns nil when p is
// closed.
func (p *Proxy) track(nc net.Conn, client bool) *conn {
	c := &conn{Conn: nc, p: p, client: client}
	c.touch()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		nc.Close()
		if client {
			<-p.sem
		}
		return nil
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	return c
}

func (p *Proxy) now() int64 { return int64(time.Since(p.epoch)) }

func (c *conn) touch() { c.last.Store(c.p.now()) }

func (c *conn) Read(b []byte) (int, error) {
	var n int
	var err error
	if len(c.prefix) > 0 {
		n = copy(b, c.prefix)
		c.prefix = c.prefix[n:]
	} else {
		n, err = c.Conn.Read(b)
	}
	if n > 0 {
		c.touch()
		if c.rec != nil {
			c.rec.add(b[:n])
		}
	}
	return n, err
}

func (c *conn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.touch()
	}
	return n, err
}

func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = c.Conn.Close()
		c.p.mu.Lock()
		delete(c.p.conns, c)
		c.p.mu.Unlock()
		if c.client {
			<-c.p.sem
		}
	})
	return c.closeErr
}

// closeWrite shuts the connection's write side, when it has one.
func (c *conn) closeWrite() {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}

// watch closes the connections idle for the idle timeout, until Close.
func (p *Proxy) watch() {
	defer p.wg.Done()
	period := min(max(p.cfg.idle/4, 10*time.Millisecond), 30*time.Second)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		}
		now := p.now()
		var idle []*conn
		p.mu.Lock()
		for c := range p.conns {
			if c.pinned.Load() == 0 && time.Duration(now-c.last.Load()) >= p.cfg.idle {
				idle = append(idle, c)
			}
		}
		p.mu.Unlock()
		for _, c := range idle {
			c.Close()
		}
	}
}

// chanListener hands the HTTP server the connections handle passes on.
type chanListener struct {
	ch       chan net.Conn
	done     chan struct{}
	doneOnce sync.Once
}

func newChanListener() *chanListener {
	return &chanListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) push(c *conn) {
	select {
	case l.ch <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.doneOnce.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return &net.UnixAddr{Name: "egress", Net: "unix"} }

// maxRecord bounds what a recorder keeps: net/http reads a header of at
// most MaxHeaderBytes plus 4096 bytes.
const maxRecord = maxHeaderBytes + 4096 + 1

// recorder keeps an HTTP client connection's first bytes, up to the end of
// the first request's header.
type recorder struct {
	done atomic.Bool
	mu   sync.Mutex
	buf  []byte
}

func (r *recorder) add(b []byte) {
	if r.done.Load() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if room := maxRecord - len(r.buf); len(b) > room {
		b = b[:room]
	}
	from := max(0, len(r.buf)-2)
	r.buf = append(r.buf, b...)
	tail := r.buf[from:]
	if bytes.Contains(tail, []byte("\n\n")) || bytes.Contains(tail, []byte("\n\r\n")) || len(r.buf) >= maxRecord {
		r.done.Store(true)
	}
}

// hosts returns the values of the first request's Host header fields, as
// sent, read with the parser net/http reads them with.
func (r *recorder) hosts() ([]string, error) {
	r.mu.Lock()
	b := r.buf
	r.mu.Unlock()
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(b)))
	if _, err := tp.ReadLine(); err != nil {
		return nil, err
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return nil, err
	}
	return h.Values("Host"), nil
}

// copyBufferSize is the size of the buffers data is copied through.
const copyBufferSize = 64 << 10

var buffers = sync.Pool{New: func() any { b := make([]byte, copyBufferSize); return &b }}

// bufferPool lends httputil.ReverseProxy the copy buffers.
type bufferPool struct{}

func (bufferPool) Get() []byte  { return *buffers.Get().(*[]byte) }
func (bufferPool) Put(b []byte) { buffers.Put(&b) }

// copyData copies src to dst through a pooled buffer, hiding the
// ReaderFrom and WriterTo of both (bufio's would copy through its own
// small buffer).
func copyData(dst io.Writer, src io.Reader) error {
	b := buffers.Get().(*[]byte)
	defer buffers.Put(b)
	_, err := io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, *b)
	return err
}
