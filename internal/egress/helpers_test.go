package egress

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// mapResolver resolves the names of its map, and counts the lookups.
type mapResolver struct {
	mu    sync.Mutex
	m     map[string][]netip.Addr
	calls map[string]int
}

func newResolver(names ...string) *mapResolver {
	r := &mapResolver{m: map[string][]netip.Addr{}, calls: map[string]int{}}
	for _, n := range names {
		r.m[n] = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	}
	return r
}

func (r *mapResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[host]++
	if a, ok := r.m[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *mapResolver) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[host]
}

// reports collects the refusals a Proxy reports.
type reports struct {
	mu   sync.Mutex
	list []Refusal
}

func (r *reports) add(x Refusal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, x)
}

func (r *reports) all() []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Refusal(nil), r.list...)
}

// want waits for a refusal of host for why (by via, unless via is ""),
// and fails the test without one.
func (r *reports) want(t *testing.T, host string, why Reason, via string) Refusal {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, x := range r.all() {
			if x.Host == host && x.Reason == why && (via == "" || x.Via == via) {
				return x
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no refusal of %s for %q via %q; got %v", host, why, via, r.all())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// testCA is a certificate authority of the test's own, and a server
// certificate it signed for some names.
type testCA struct {
	pool   *x509.CertPool
	pem    []byte
	server tls.Certificate
}

func newCA(t testing.TB, names ...string) *testCA {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "egress test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return &testCA{
		pool:   pool,
		pem:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		server: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
	}
}

// hello answers every request with "hello NAME" and counts them.
type hello struct {
	name string
	mu   sync.Mutex
	n    int
}

func (h *hello) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.n++
	h.mu.Unlock()
	fmt.Fprintf(w, "hello %s via %s", h.name, r.Host)
}

func (h *hello) hits() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// servers are a plain HTTP and a TLS server on 127.0.0.1, the TLS one with
// a certificate of ca for allowed.test and other.test.
type servers struct {
	ca                *testCA
	http, tls         *httptest.Server
	httpHits, tlsHits *hello
	httpPort, tlsPort uint16
	httpAddr, tlsAddr string
	tlsHellos         atomic.Int32 // ClientHellos the TLS server read
}

func newServers(t testing.TB) *servers {
	t.Helper()
	s := &servers{ca: newCA(t, "allowed.test", "other.test", "a.wild.test", "deny.wild.test"), httpHits: &hello{name: "http"}, tlsHits: &hello{name: "tls"}}
	s.http = httptest.NewServer(s.httpHits)
	t.Cleanup(s.http.Close)
	s.tls = httptest.NewUnstartedServer(s.tlsHits)
	s.tls.TLS = &tls.Config{
		Certificates: []tls.Certificate{s.ca.server},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			s.tlsHellos.Add(1)
			return nil, nil
		},
	}
	s.tls.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused tunnels' handshakes
	s.tls.StartTLS()
	t.Cleanup(s.tls.Close)
	s.httpAddr, s.tlsAddr = s.http.Listener.Addr().String(), s.tls.Listener.Addr().String()
	s.httpPort, s.tlsPort = portOf(t, s.httpAddr), portOf(t, s.tlsAddr)
	return s
}

func portOf(t testing.TB, addr string) uint16 {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return uint16(n)
}

// listenProxy serves a Proxy on 127.0.0.1; done has what Serve returned.
func listenProxy(t testing.TB, pol Policy, opts ...Option) (p *Proxy, addr string, done chan error) {
	t.Helper()
	return listenOn(t, "tcp", "127.0.0.1:0", pol, opts...)
}

// listenOn is listenProxy on network's address.
func listenOn(t testing.TB, network, address string, pol Policy, opts ...Option) (p *Proxy, addr string, done chan error) {
	t.Helper()
	p, err := New(pol, opts...)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen(network, address)
	if err != nil {
		t.Fatal(err)
	}
	done = make(chan error, 1)
	go func() { done <- p.Serve(l) }()
	return p, l.Addr().String(), done
}

// startProxy is listenProxy, the Proxy closed at the end of the test.
func startProxy(t testing.TB, pol Policy, opts ...Option) (*Proxy, string) {
	t.Helper()
	return startOn(t, "tcp", "127.0.0.1:0", pol, opts...)
}

// unixProxy is startProxy on a unix socket; it returns the socket's path.
func unixProxy(t testing.TB, pol Policy, opts ...Option) string {
	t.Helper()
	_, sock := startOn(t, "unix", filepath.Join(t.TempDir(), "egress.sock"), pol, opts...)
	return sock
}

// startOn is listenOn, the Proxy closed at the end of the test.
func startOn(t testing.TB, network, address string, pol Policy, opts ...Option) (*Proxy, string) {
	t.Helper()
	p, addr, done := listenOn(t, network, address, pol, opts...)
	t.Cleanup(func() {
		p.Close()
		if err := <-done; err != ErrClosed {
			t.Errorf("Serve: got %v, want ErrClosed", err)
		}
	})
	return p, addr
}

// namedProxy is startProxy for a Policy allowing allow and internal
// addresses, allowed.test and other.test resolved to 127.0.0.1, refusals
// reported to rep.
func namedProxy(t testing.TB, rep *reports, allow ...string) (*Proxy, string) {
	t.Helper()
	return startProxy(t, Policy{Allow: allow, AllowInternal: true},
		WithResolver(newResolver("allowed.test", "other.test")), WithReport(rep.add))
}

// dialProxy connects to the proxy at addr, the connection closed at the
// end of the test and given 20 s.
func dialProxy(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return c
}

// wantStatus fetches u with c and fails the test unless the status is want.
func wantStatus(t *testing.T, c *http.Client, u string, want int) {
	t.Helper()
	if got, _, err := get(c, u); err != nil || got != want {
		t.Errorf("GET %s: got %d %v, want %d", u, got, err, want)
	}
}

// client is an HTTP client that goes through the proxy at addr, by scheme
// ("http": HTTP_PROXY's way; "socks5": ALL_PROXY's), trusting ca.
func client(t testing.TB, scheme, addr string, ca *testCA) *http.Client {
	tr := &http.Transport{
		Proxy:             http.ProxyURL(&url.URL{Scheme: scheme, Host: addr}),
		TLSClientConfig:   &tls.Config{RootCAs: ca.pool},
		DisableKeepAlives: true,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// get fetches u and returns the status and body.
func get(c *http.Client, u string) (int, string, error) {
	resp, err := c.Get(u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// rawRequest sends req (whole, as text) to the proxy at addr and returns
// the response's status, or 0 when the connection closed without one.
func rawRequest(t testing.TB, addr, req string) (int, net.Conn, *bufio.Reader) {
	t.Helper()
	c := dialProxy(t, addr)
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, c, br
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(req, "CONNECT") {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp.StatusCode, c, br
}

// connectReq is a CONNECT request for authority.
func connectReq(authority string) string {
	return "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n"
}
