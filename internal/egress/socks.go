package egress

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"time"
)

// SOCKS5 (RFC 1928), the part a proxy for named hosts needs: no
// authentication, CONNECT only (no BIND, no UDP ASSOCIATE), the
// destination a name or an address.
const (
	socksVersion    = 5
	socksNoAuth     = 0
	socksNoMethod   = 0xff
	socksConnect    = 1
	socksAtypIPv4   = 1
	socksAtypDomain = 3
	socksAtypIPv6   = 4

	socksSucceeded      = 0
	socksNotAllowed     = 2
	socksHostUnreach    = 4
	socksRefused        = 5
	socksCmdUnsupported = 7
	socksAtypUnsupp     = 8
)

// socks serves a SOCKS5 client, then the tunnel.
func (p *Proxy) socks(c *conn) {
	const via = "socks5"
	c.SetDeadline(time.Now().Add(p.cfg.handshake))
	br := bufio.NewReader(c)
	host, isIP, port, code, err := socksRequest(c, br)
	if err != nil {
		if code != 0 {
			socksReply(c, code)
		}
		if code == socksNotAllowed {
			p.report(Refusal{Host: host, Reason: ReasonInvalid, Detail: err.Error(), Via: via})
		}
		c.Close()
		return
	}
	if why := p.decide(p.ctx, c, host, isIP, port, true); why != "" {
		socksReply(c, socksNotAllowed)
		p.report(Refusal{Host: host, Port: port, Reason: why, Via: via})
		c.Close()
		return
	}
	up, err := p.open(p.ctx, host, isIP, port)
	if err != nil {
		var re *refusalError
		code := byte(socksRefused)
		if errors.As(err, &re) {
			ref := re.Refusal
			ref.Via = via
			p.report(ref)
			code = socksNotAllowed
			if ref.Reason == ReasonUnresolved {
				code = socksHostUnreach
			}
		}
		socksReply(c, code)
		c.Close()
		return
	}
	if err := socksReply(c, socksSucceeded); err != nil {
		up.Close()
		c.Close()
		return
	}
	c.SetDeadline(time.Time{})
	p.tunnel(c, br, up, host, port, via)
}

// errSocks is a SOCKS5 request the proxy does not serve.
var errSocks = errors.New("not a SOCKS5 CONNECT request")

// socksRequest reads the greeting and the request. On an error, code is
// the reply to send (0: none); host is what the client named, when read.
func socksRequest(c *conn, br *bufio.Reader) (host string, isIP bool, port uint16, code byte, err error) {
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil || h[0] != socksVersion {
		return "", false, 0, 0, errSocks
	}
	methods := make([]byte, h[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return "", false, 0, 0, errSocks
	}
	ok := false
	for _, m := range methods {
		ok = ok || m == socksNoAuth
	}
	if !ok {
		c.Write([]byte{socksVersion, socksNoMethod})
		return "", false, 0, 0, errSocks
	}
	if _, err := c.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		return "", false, 0, 0, err
	}
	var req [4]byte
	if _, err := io.ReadFull(br, req[:]); err != nil || req[0] != socksVersion {
		return "", false, 0, 0, errSocks
	}
	if req[1] != socksConnect {
		return "", false, 0, socksCmdUnsupported, errSocks
	}
	var raw string
	switch req[3] {
	case socksAtypIPv4:
		var a [4]byte
		if _, err := io.ReadFull(br, a[:]); err != nil {
			return "", false, 0, 0, errSocks
		}
		raw = netip.AddrFrom4(a).String()
	case socksAtypIPv6:
		var a [16]byte
		if _, err := io.ReadFull(br, a[:]); err != nil {
			return "", false, 0, 0, errSocks
		}
		raw = netip.AddrFrom16(a).String()
	case socksAtypDomain:
		n, err := br.ReadByte()
		if err != nil {
			return "", false, 0, 0, errSocks
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return "", false, 0, 0, errSocks
		}
		raw = string(b)
	default:
		return "", false, 0, socksAtypUnsupp, errSocks
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, pb[:]); err != nil {
		return "", false, 0, 0, errSocks
	}
	port = binary.BigEndian.Uint16(pb[:])
	host, isIP, err = normalizeHost(raw)
	if err != nil || port == 0 {
		if err == nil {
			err = errSocks
		}
		return quoteHost(raw), false, port, socksNotAllowed, err
	}
	return host, isIP, port, 0, nil
}

// socksReply sends a reply with code and no bound address.
func socksReply(c *conn, code byte) error {
	_, err := c.Write([]byte{socksVersion, code, 0, socksAtypIPv4, 0, 0, 0, 0, 0, 0})
	return err
}
