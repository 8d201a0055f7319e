package egress

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"time"
)

// tunnel joins a client, whose CONNECT or SOCKS5 request for host:port
// was granted, to up, connected to host. The client's first bytes are read
// first (bounded by the handshake timeout): when they begin a TLS
// handshake, the ClientHello must be whole and its server name, if any,
// must be host, before a byte goes up. tunnel closes both connections.
func (p *Proxy) tunnel(c *conn, br *bufio.Reader, up *conn, host string, port uint16, via string) {
	defer c.Close()
	defer up.Close()
	c.SetReadDeadline(time.Now().Add(p.cfg.handshake))
	first, err := br.Peek(1)
	if err != nil {
		return // nothing in time: dropped
	}
	if first[0] == recordTypeHandshake {
		sni, hello, err := readHello(br)
		if err != nil {
			p.report(Refusal{Host: host, Port: port, Reason: ReasonInvalid, Detail: "unreadable TLS ClientHello", Via: via})
			return
		}
		if sni != "" {
			if name, _, err := normalizeHost(sni); err != nil || name != host {
				p.report(Refusal{Host: host, Port: port, Reason: ReasonSNI, Detail: "server name " + quoteHost(sni), Via: via})
				return
			}
		}
		if _, err := up.Write(hello); err != nil {
			return
		}
	}
	c.SetReadDeadline(time.Time{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		relay(up, c, br)
	}()
	relay(c, up, nil)
	<-done
}

// relay sends what br holds of src (br may be nil), then the rest of src,
// to dst until src's end, then shuts dst's write side. Between two sockets
// the rest moves in the kernel (spliceData), else through a buffer.
func relay(dst, src *conn, br *bufio.Reader) {
	defer dst.closeWrite()
	if br != nil && br.Buffered() > 0 {
		b, _ := br.Peek(br.Buffered())
		if _, err := dst.Write(b); err != nil {
			return
		}
		br.Discard(len(b))
	}
	if len(src.prefix) > 0 {
		if _, err := dst.Write(src.prefix); err != nil {
			return
		}
		src.prefix = nil
	}
	if ok, _ := spliceData(dst, src); !ok {
		copyData(dst, src)
	}
}

// recordTypeHandshake begins a TLS handshake record.
const recordTypeHandshake = 0x16

// errHelloRead stops the handshake once the ClientHello is read.
var errHelloRead = errors.New("egress: ClientHello read")

// readHello reads a TLS ClientHello from r with crypto/tls's own parser
// and returns its server name and the bytes it was read from (to be sent
// on). Nothing is written to the client.
func readHello(r *bufio.Reader) (sni string, raw []byte, err error) {
	hc := &helloConn{r: r}
	got := false
	cfg := &tls.Config{
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			sni, got = h.ServerName, true
			return nil, errHelloRead
		},
	}
	err = tls.Server(hc, cfg).Handshake()
	if !got {
		return "", nil, err
	}
	return sni, hc.buf.Bytes(), nil
}

// helloConn is what crypto/tls reads a ClientHello through: it keeps what
// it reads and drops what is written (the alert that ends the handshake).
type helloConn struct {
	r   *bufio.Reader
	buf bytes.Buffer
}

func (c *helloConn) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.buf.Write(b[:n])
	return n, err
}

func (c *helloConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c *helloConn) Close() error                     { return nil }
func (c *helloConn) LocalAddr() net.Addr              { return helloAddr{} }
func (c *helloConn) RemoteAddr() net.Addr             { return helloAddr{} }
func (c *helloConn) SetDeadline(time.Time) error      { return nil }
func (c *helloConn) SetReadDeadline(time.Time) error  { return nil }
func (c *helloConn) SetWriteDeadline(time.Time) error { return nil }

type helloAddr struct{}

func (helloAddr) Network() string { return "tcp" }
func (helloAddr) String() string  { return "client" }
