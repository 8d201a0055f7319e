// Package egress is the proxy ccrun runs for a call whose network is
// limited to named hosts: HTTP CONNECT, plain HTTP proxying (absolute-URI
// requests) and SOCKS5 CONNECT, on one listener, each connection's
// destination checked against the call's Policy before anything is sent
// to it.
//
// The proxy resolves names itself, once per connection, and connects to an
// address that resolution gave (never resolving again, so a name that
// changes its answer between the check and the connection — DNS rebinding —
// gains nothing). Of a tunnel it reads the TLS ClientHello before passing a
// byte on, and refuses one whose server name is not the host the tunnel
// was opened to. Every refusal is reported through WithReport.
//
// A Proxy is safe for concurrent use. docs/network.md says what it checks
// and what it does not.
package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/containerd/errdefs"
)

// Refusal is one refused connection, as WithReport receives it.
type Refusal struct {
	// Host is the destination, normalized (a lowercase name, or an IP
	// literal in its canonical form); for ReasonInvalid, what the client
	// sent, quoted and cut to 100 bytes, so that it is safe to print.
	Host string
	// Port is the destination port, 0 when none could be read.
	Port uint16
	// Reason says why.
	Reason Reason
	// Detail is more of the why, for a person; may be empty.
	Detail string
	// Via is how the client asked: "http", "connect" or "socks5".
	Via string
}

// String is the refusal as one line: "egress: refused HOST:PORT (via): reason: detail".
func (r Refusal) String() string {
	s := fmt.Sprintf("egress: refused %s (%s): %s", hostPort(r.Host, r.Port), r.Via, r.Reason)
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	return s
}

// Resolver resolves host names to addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// AskFunc asks whether a connection to host:port, which no list allows,
// may be made. It is called at most once per host and port for the life of
// a Proxy (the answer is kept, yes or no), possibly for several hosts at
// once. It must return when ctx is done; if it has not answered by then the
// answer is no.
type AskFunc func(ctx context.Context, host string, port uint16) bool

// Option configures a Proxy.
type Option func(*config) error

type config struct {
	resolver   Resolver
	report     func(Refusal)
	ask        AskFunc
	askTimeout time.Duration
	maxConns   int
	handshake  time.Duration
	idle       time.Duration
	dial       time.Duration
}

// WithResolver resolves names with r. Default: net.DefaultResolver, the
// system's.
func WithResolver(r Resolver) Option {
	return func(c *config) error {
		if r == nil {
			return fmt.Errorf("egress: nil resolver: %w", errdefs.ErrInvalidArgument)
		}
		c.resolver = r
		return nil
	}
}

// WithReport calls f for every refused connection, one call at a time (the
// calls are serialized, so f needs no lock of its own), from the goroutine
// of that connection: f should be quick. Default: none.
func WithReport(f func(Refusal)) Option {
	return func(c *config) error {
		c.report = f
		return nil
	}
}

// WithAsk asks f about a destination no Allow entry names (a Deny entry
// is never asked about), waiting at most timeout (0: one minute) for the
// answer. Default: none, such a connection is refused.
func WithAsk(f AskFunc, timeout time.Duration) Option {
	return func(c *config) error {
		if timeout < 0 {
			return fmt.Errorf("egress: ask timeout %s: want 0 or more: %w", timeout, errdefs.ErrInvalidArgument)
		}
		if timeout == 0 {
			timeout = time.Minute
		}
		c.ask, c.askTimeout = f, timeout
		return nil
	}
}

// WithMaxConns serves at most n client connections at once; more wait in
// the listener's backlog. Default: 256.
func WithMaxConns(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("egress: max conns %d: want 1 or more: %w", n, errdefs.ErrInvalidArgument)
		}
		c.maxConns = n
		return nil
	}
}

// WithHandshakeTimeout drops a client that has not sent its whole request
// (the HTTP request header, the SOCKS5 handshake, then a tunnel's first
// bytes) within d of connecting. Default: 10 seconds.
func WithHandshakeTimeout(d time.Duration) Option {
	return positive("handshake timeout", d, func(c *config) { c.handshake = d })
}

// WithIdleTimeout closes a connection, client or upstream, that neither
// read nor wrote a byte for d (a connection waiting for the ask hook
// excepted). Default: 5 minutes.
func WithIdleTimeout(d time.Duration) Option {
	return positive("idle timeout", d, func(c *config) { c.idle = d })
}

// WithDialTimeout bounds resolving a destination and connecting to it.
// Default: 30 seconds.
func WithDialTimeout(d time.Duration) Option {
	return positive("dial timeout", d, func(c *config) { c.dial = d })
}

// positive is an option that sets a duration, which must be more than 0.
func positive(what string, d time.Duration, set func(*config)) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("egress: %s %s: want more than 0: %w", what, d, errdefs.ErrInvalidArgument)
		}
		set(c)
		return nil
	}
}

// maxHeaderBytes bounds an HTTP request's header.
const maxHeaderBytes = 64 << 10

// ErrClosed is returned by Serve once the Proxy is closed.
var ErrClosed = fmt.Errorf("egress: proxy closed: %w", net.ErrClosed)

// Proxy is an egress proxy. Make one with New, serve it with Serve, end it
// with Close.
type Proxy struct {
	pol    compiled
	cfg    config
	epoch  time.Time
	ctx    context.Context // done at Close
	cancel context.CancelFunc
	sem    chan struct{} // a token per client connection
	wg     sync.WaitGroup

	httpL *chanListener
	srv   *http.Server
	tr    *http.Transport
	rp    *httputil.ReverseProxy

	reportMu sync.Mutex

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	asks      map[string]*answer
}

// New makes a Proxy enforcing policy. It returns an error of class
// errdefs.ErrInvalidArgument for a malformed Policy entry or option.
func New(policy Policy, opts ...Option) (*Proxy, error) {
	pol, err := compile(policy)
	if err != nil {
		return nil, err
	}
	cfg := config{
		resolver:  net.DefaultResolver,
		maxConns:  256,
		handshake: 10 * time.Second,
		idle:      5 * time.Minute,
		dial:      30 * time.Second,
	}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		pol:       pol,
		cfg:       cfg,
		epoch:     time.Now(),
		ctx:       ctx,
		cancel:    cancel,
		sem:       make(chan struct{}, cfg.maxConns),
		httpL:     newChanListener(),
		listeners: map[net.Listener]struct{}{},
		conns:     map[*conn]struct{}{},
		asks:      map[string]*answer{},
	}
	p.tr = &http.Transport{
		Proxy:               nil, // never another proxy
		DialContext:         p.dialHTTP,
		DisableCompression:  true, // pass bodies through as they are
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     min(90*time.Second, cfg.idle/2), // the pool lets go before the idle timeout
		ReadBufferSize:      copyBufferSize,
		WriteBufferSize:     copyBufferSize,
	}
	p.rp = &httputil.ReverseProxy{
		// The request is already absolute: the out request keeps its URL
		// and gets its Host from it; Rewrite drops the hop-by-hop headers
		// and adds no X-Forwarded-* header.
		Rewrite:      func(*httputil.ProxyRequest) {},
		Transport:    p.tr,
		BufferPool:   bufferPool{},
		ErrorHandler: p.forwardError,
		ErrorLog:     log.New(io.Discard, "", 0),
	}
	p.srv = &http.Server{
		Handler:           handler{p},
		ReadHeaderTimeout: cfg.handshake,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          log.New(io.Discard, "", 0),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
	}
	// One request per client connection: the Host header a request was sent
	// with is read from the connection's first bytes (net/http drops it for
	// an absolute URI), which only holds for the first request.
	p.srv.SetKeepAlivesEnabled(false)
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		_ = p.srv.Serve(p.httpL)
	}()
	go p.watch()
	return p, nil
}

// Serve accepts connections on l and serves them until l fails or the
// Proxy is closed, then returns the error (ErrClosed after Close). l may be
// a TCP or a unix socket listener; Close closes it. Serve may be called
// for several listeners at once.
func (p *Proxy) Serve(l net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.Close()
		return ErrClosed
	}
	p.listeners[l] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.listeners, l)
		p.mu.Unlock()
	}()
	var backoff time.Duration
	for {
		select {
		case p.sem <- struct{}{}:
		case <-p.ctx.Done():
			return ErrClosed
		}
		nc, err := l.Accept()
		if err != nil {
			<-p.sem
			if p.ctx.Err() != nil {
				return ErrClosed
			}
			var te interface{ Temporary() bool }
			if errors.As(err, &te) && te.Temporary() {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				select {
				case <-time.After(backoff):
				case <-p.ctx.Done():
				}
				continue
			}
			return err
		}
		backoff = 0
		c := p.track(nc, true)
		if c == nil {
			return ErrClosed
		}
		if !p.enter() {
			c.Close()
			return ErrClosed
		}
		go p.handle(c)
	}
}

// Close stops every Serve, closes every connection, and returns when every
// goroutine of the Proxy has ended. Asks waiting for an answer are answered
// no. Close may be called more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closed = true
	var ls []net.Listener
	for l := range p.listeners {
		ls = append(ls, l)
	}
	var cs []*conn
	for c := range p.conns {
		cs = append(cs, c)
	}
	p.mu.Unlock()
	p.cancel()
	for _, l := range ls {
		l.Close()
	}
	p.srv.Close()
	for _, c := range cs {
		c.Close()
	}
	p.tr.CloseIdleConnections()
	p.wg.Wait()
	return nil
}

// Env is the environment that points a program at the proxy, reached by
// the program at addr (HOST:PORT, say "127.0.0.1:3128" inside a sandbox
// bridged to the proxy's socket): HTTP_PROXY and HTTPS_PROXY (http://addr),
// ALL_PROXY (socks5h://addr: the proxy resolves names), and NO_PROXY empty,
// so that nothing is meant to go direct; each in upper and lower case
// (curl reads http_proxy only in lower case).
func (p *Proxy) Env(addr string) []string {
	h, s := "http://"+addr, "socks5h://"+addr
	return []string{
		"HTTP_PROXY=" + h, "HTTPS_PROXY=" + h, "ALL_PROXY=" + s, "NO_PROXY=",
		"http_proxy=" + h, "https_proxy=" + h, "all_proxy=" + s, "no_proxy=",
	}
}

// enter counts a goroutine of the Proxy in p.wg, unless it is closed.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	return true
}

// handle reads a client connection's first bytes and passes it on: to the
// SOCKS5 handshake, or to the HTTP server. It runs counted in p.wg.
func (p *Proxy) handle(c *conn) {
	defer p.wg.Done()
	c.SetReadDeadline(time.Now().Add(p.cfg.handshake))
	buf := make([]byte, 4096)
	n, err := c.Conn.Read(buf)
	if n == 0 {
		_ = err // a client that sent nothing in time is dropped
		c.Close()
		return
	}
	c.prefix = buf[:n]
	c.touch()
	if buf[0] == 5 {
		p.socks(c)
		return
	}
	c.SetReadDeadline(time.Time{})
	c.rec = &recorder{}
	p.httpL.push(c)
}

// report hands r to the report hook.
func (p *Proxy) report(r Refusal) {
	if p.cfg.report == nil {
		return
	}
	p.reportMu.Lock()
	defer p.reportMu.Unlock()
	p.cfg.report(r)
}

// answer is the kept answer of the ask hook for one host and port.
type answer struct {
	done chan struct{}
	why  Reason // "" for yes
}

// decide says whether host:port may be reached: "" when it may, else why
// not. With mayAsk, a destination no list decides is asked about (once per
// Proxy); without, only an answer already given counts. c, when not nil,
// is kept from the idle timeout while the ask waits.
func (p *Proxy) decide(ctx context.Context, c *conn, host string, isIP bool, port uint16, mayAsk bool) Reason {
	why := p.pol.check(host, isIP, port)
	if why == "" || why == ReasonDenied || p.cfg.ask == nil {
		return why
	}
	key := hostPort(host, port)
	p.mu.Lock()
	a, asked := p.asks[key]
	if !asked && mayAsk {
		a = &answer{done: make(chan struct{})}
		p.asks[key] = a
	}
	p.mu.Unlock()
	if a == nil {
		return why
	}
	if c != nil {
		c.pinned.Add(1)
		defer func() { c.touch(); c.pinned.Add(-1) }()
	}
	if !asked {
		a.why = p.ask(host, port)
		close(a.done)
	}
	select {
	case <-a.done:
		return a.why
	case <-ctx.Done():
		return ReasonNoAnswer
	}
}

// ask calls the ask hook, bounded by its timeout and by Close.
func (p *Proxy) ask(host string, port uint16) Reason {
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.askTimeout)
	defer cancel()
	res := make(chan bool, 1)
	go func() { res <- p.cfg.ask(ctx, host, port) }()
	select {
	case yes := <-res:
		if yes {
			return ""
		}
		return ReasonAskDenied
	case <-ctx.Done():
		return ReasonNoAnswer
	}
}

// refusalError is a refusal met while opening a connection.
type refusalError struct{ Refusal }

func (e *refusalError) Error() string { return e.Refusal.String() }

// open resolves host (a name; an IP literal is itself) and connects to one
// of the addresses that resolution gave, on port. A name's internal
// addresses are passed over unless the Policy allows them.
func (p *Proxy) open(ctx context.Context, host string, isIP bool, port uint16) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.dial)
	defer cancel()
	var addrs []netip.Addr
	if isIP {
		addrs = []netip.Addr{netip.MustParseAddr(host)}
	} else {
		got, err := p.cfg.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, &refusalError{Refusal{Host: host, Port: port, Reason: ReasonUnresolved, Detail: err.Error()}}
		}
		var skipped []string
		for _, a := range got {
			a = a.Unmap()
			if !a.IsValid() || a.Zone() != "" {
				continue
			}
			if !p.pol.allowInternal && isInternal(a) {
				skipped = append(skipped, a.String())
				continue
			}
			addrs = append(addrs, a)
		}
		if len(addrs) == 0 {
			if len(skipped) > 0 {
				return nil, &refusalError{Refusal{Host: host, Port: port, Reason: ReasonInternal, Detail: fmt.Sprintf("resolves to %v", skipped)}}
			}
			return nil, &refusalError{Refusal{Host: host, Port: port, Reason: ReasonUnresolved, Detail: "no address"}}
		}
	}
	var d net.Dialer
	var first error
	for _, a := range addrs {
		nc, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a, port).String())
		if err == nil {
			c := p.track(nc, false)
			if c == nil {
				return nil, ErrClosed
			}
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, fmt.Errorf("egress: connect to %s: %w", hostPort(host, port), first)
}

// quoteHost is s made safe to print in a Refusal.
func quoteHost(s string) string {
	if len(s) > 100 {
		s = s[:100]
	}
	return strconv.QuoteToASCII(s)
}
