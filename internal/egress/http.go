package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// connKey keys the client's *conn in a request's context.
type connKey struct{}

// handler serves the HTTP side of the Proxy: CONNECT, and absolute-URI
// requests forwarded through httputil.ReverseProxy.
type handler struct{ p *Proxy }

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := h.p
	if !p.enter() {
		return
	}
	defer p.wg.Done()
	c, _ := r.Context().Value(connKey{}).(*conn)
	if c == nil {
		http.Error(w, "egress: no connection", http.StatusInternalServerError)
		return
	}
	// net/http cancels a request's context when its client's connection
	// reads EOF, which a client that shuts its writing side after the
	// request (busybox nc) does at once: the request would end before the
	// upstream is asked. What ends it is the Proxy's Close, the timeouts,
	// and a failed write to the client.
	ctx, stop := context.WithCancel(context.WithoutCancel(r.Context()))
	defer stop()
	defer context.AfterFunc(p.ctx, stop)()
	r = r.WithContext(ctx)
	if r.Method == http.MethodConnect {
		p.connect(w, r, c)
		return
	}
	p.forward(w, r, c)
}

// refuse reports ref and answers the client with status.
func (p *Proxy) refuse(w http.ResponseWriter, ref Refusal, status int) {
	p.report(ref)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	fmt.Fprintln(w, ref.String())
}

// hostAgrees says whether the Host header fields c's request was sent
// with, if any, name host and port (a field without a port names defPort).
func hostAgrees(c *conn, host string, port, defPort uint16) (bool, string) {
	if c.rec == nil {
		return false, "no request header"
	}
	vs, err := c.rec.hosts()
	if err != nil {
		return false, "unreadable request header"
	}
	switch len(vs) {
	case 0:
		return true, ""
	case 1:
	default:
		return false, "more than one Host header"
	}
	h, _, pt, err := parseHostPort(vs[0], defPort)
	if err != nil || h != host || pt != port {
		return false, "Host: " + quoteHost(vs[0])
	}
	return true, ""
}

// forward proxies a plain HTTP request, its URI absolute.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, c *conn) {
	const via = "http"
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		detail := "want an absolute http:// URI"
		if r.URL.Scheme == "https" {
			detail = "https goes through CONNECT"
		}
		p.refuse(w, Refusal{Host: quoteHost(r.Host), Reason: ReasonInvalid, Detail: detail, Via: via}, http.StatusBadRequest)
		return
	}
	host, isIP, port, err := parseHostPort(r.URL.Host, 80)
	if err != nil {
		p.refuse(w, Refusal{Host: quoteHost(r.URL.Host), Reason: ReasonInvalid, Detail: err.Error(), Via: via}, http.StatusBadRequest)
		return
	}
	if ok, detail := hostAgrees(c, host, port, 80); !ok {
		p.refuse(w, Refusal{Host: host, Port: port, Reason: ReasonMismatch, Detail: detail, Via: via}, http.StatusForbidden)
		return
	}
	if why := p.decide(r.Context(), c, host, isIP, port, true); why != "" {
		p.refuse(w, Refusal{Host: host, Port: port, Reason: why, Via: via}, http.StatusForbidden)
		return
	}
	p.rp.ServeHTTP(w, r)
}

// dialHTTP is the Transport's dial: the destination checked again (an
// answer the ask hook gave counts; it is not asked again), then resolved
// and connected to.
func (p *Proxy) dialHTTP(ctx context.Context, network, addr string) (net.Conn, error) {
	host, isIP, port, err := parseHostPort(addr, 0)
	if err != nil {
		return nil, &refusalError{Refusal{Host: quoteHost(addr), Reason: ReasonInvalid, Detail: err.Error()}}
	}
	if why := p.decide(ctx, nil, host, isIP, port, false); why != "" {
		return nil, &refusalError{Refusal{Host: host, Port: port, Reason: why}}
	}
	c, err := p.open(ctx, host, isIP, port)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// forwardError answers a request the Transport could not carry.
func (p *Proxy) forwardError(w http.ResponseWriter, r *http.Request, err error) {
	if p.refuseErr(w, err, "http") {
		return
	}
	if r.Context().Err() != nil {
		return // the client is gone
	}
	http.Error(w, errText(err), http.StatusBadGateway)
}

// refuseErr refuses for err when it is a refusal met opening a connection.
func (p *Proxy) refuseErr(w http.ResponseWriter, err error, via string) bool {
	var re *refusalError
	if !errors.As(err, &re) {
		return false
	}
	ref := re.Refusal
	ref.Via = via
	status := http.StatusForbidden
	if ref.Reason == ReasonUnresolved {
		status = http.StatusBadGateway
	}
	p.refuse(w, ref, status)
	return true
}

// connect serves CONNECT: the authority checked, resolved and connected
// to, then the tunnel.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request, c *conn) {
	const via = "connect"
	if r.URL.Host == "" || r.URL.Path != "" {
		p.refuse(w, Refusal{Host: quoteHost(r.RequestURI), Reason: ReasonInvalid, Detail: "want CONNECT HOST:PORT", Via: via}, http.StatusBadRequest)
		return
	}
	host, isIP, port, err := parseHostPort(r.URL.Host, 0)
	if err != nil {
		p.refuse(w, Refusal{Host: quoteHost(r.URL.Host), Reason: ReasonInvalid, Detail: err.Error(), Via: via}, http.StatusBadRequest)
		return
	}
	if ok, detail := hostAgrees(c, host, port, port); !ok {
		p.refuse(w, Refusal{Host: host, Port: port, Reason: ReasonMismatch, Detail: detail, Via: via}, http.StatusForbidden)
		return
	}
	if why := p.decide(r.Context(), c, host, isIP, port, true); why != "" {
		p.refuse(w, Refusal{Host: host, Port: port, Reason: why, Via: via}, http.StatusForbidden)
		return
	}
	up, err := p.open(r.Context(), host, isIP, port)
	if err != nil {
		if !p.refuseErr(w, err, via) {
			http.Error(w, errText(err), http.StatusBadGateway)
		}
		return
	}
	_, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		return
	}
	if _, err := c.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		up.Close()
		c.Close()
		return
	}
	p.tunnel(c, brw.Reader, up, host, port, via)
}

// errText is err as the body of an answer, "egress: " once in front.
func errText(err error) string {
	if m := err.Error(); strings.HasPrefix(m, "egress: ") {
		return m
	}
	return "egress: " + err.Error()
}
