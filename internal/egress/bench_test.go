package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The measures of docs/network.md, side by side in one run:
//
//	go test -run NONE -bench . -benchtime 5x ./internal/egress/
//
// Each iteration of a side-by-side benchmark runs every way in turn,
// rotating the order, so that the machine's load falls on all alike.

const downloadSize = 200 << 20

// benchServer serves /bulk (downloadSize bytes) and /small ("ok") on
// 127.0.0.1.
func benchServer(b *testing.B) (*httptest.Server, uint16) {
	chunk := make([]byte, 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/small" {
			w.Write([]byte("ok"))
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(downloadSize))
		for n := 0; n < downloadSize; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	b.Cleanup(srv.Close)
	return srv, portOf(b, srv.Listener.Addr().String())
}

// benchWays are the clients compared: direct, through the proxy's plain
// HTTP forwarding, and through a CONNECT tunnel of the proxy (the client
// speaking plain HTTP in it, so that no TLS cost hides the tunnel's).
func benchWays(b *testing.B, proxyAddr string, keepAlive bool) map[string]*http.Client {
	mk := func(tr *http.Transport) *http.Client {
		tr.DisableKeepAlives = !keepAlive
		tr.DisableCompression = true
		tr.ReadBufferSize = copyBufferSize
		b.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}
	}
	return map[string]*http.Client{
		"direct": mk(&http.Transport{}),
		"http":   mk(&http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: proxyAddr})}),
		"connect": mk(&http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			c, err := new(net.Dialer).DialContext(ctx, "tcp", proxyAddr)
			if err != nil {
				return nil, err
			}
			_, port, _ := net.SplitHostPort(addr)
			fmt.Fprint(c, connectReq(net.JoinHostPort("bench.test", port)))
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != 200 {
				c.Close()
				return nil, fmt.Errorf("CONNECT: %v %v", resp, err)
			}
			return c, nil
		}}),
	}
}

var wayOrder = []string{"direct", "http", "connect"}

func benchProxy(b *testing.B, port uint16) string {
	_, addr := startProxy(b, Policy{Allow: []string{hostPort("bench.test", port)}, AllowInternal: true}, WithResolver(newResolver("bench.test")))
	return addr
}

// BenchmarkDownload: 200 MB from a loopback HTTP server, directly and
// through the proxy; MB/s of each, and each way's throughput over the
// direct one's.
func BenchmarkDownload(b *testing.B) {
	_, port := benchServer(b)
	ways := benchWays(b, benchProxy(b, port), true)
	u := fmt.Sprintf("http://bench.test:%d/bulk", port)
	direct := fmt.Sprintf("http://127.0.0.1:%d/bulk", port)
	spent, cpu := map[string]time.Duration{}, map[string]time.Duration{}
	buf := make([]byte, copyBufferSize)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range wayOrder {
			way := wayOrder[(i+j)%len(wayOrder)]
			target := u
			if way == "direct" {
				target = direct
			}
			start, cpu0 := time.Now(), cpuTime()
			resp, err := ways[way].Get(target)
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, struct{ io.Reader }{resp.Body}, buf)
			resp.Body.Close()
			if err != nil || n != downloadSize {
				b.Fatalf("%s: %d bytes, %v", way, n, err)
			}
			spent[way] += time.Since(start)
			cpu[way] += cpuTime() - cpu0
		}
	}
	mbps := func(way string) float64 { return float64(b.N) * downloadSize / 1e6 / spent[way].Seconds() }
	for _, way := range wayOrder {
		b.ReportMetric(mbps(way), way+"-MB/s")
		// The CPU time of the whole process (client, server and proxy) per
		// 100 MB: on a machine with no core to spare, what bounds the ratio.
		b.ReportMetric(float64(cpu[way].Milliseconds())/(float64(b.N)*downloadSize/100e6), way+"-cpu-ms/100MB")
	}
	b.ReportMetric(mbps("http")/mbps("direct"), "http/direct")
	b.ReportMetric(mbps("connect")/mbps("direct"), "connect/direct")
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLatency: a small request's time, directly and through the
// proxy; the p50 of each, and what the proxy adds at p50. Through the
// proxy's plain HTTP forwarding each request is a new connection to the
// proxy (it serves one request per client connection); "direct-new" is a
// new connection per request too, for comparison; the tunnel stays open.
func BenchmarkLatency(b *testing.B) {
	_, port := benchServer(b)
	addr := benchProxy(b, port)
	ways := benchWays(b, addr, true)
	ways["direct-new"] = benchWays(b, addr, false)["direct"]
	order := append(slices.Clone(wayOrder), "direct-new")
	u := fmt.Sprintf("http://bench.test:%d/small", port)
	direct := fmt.Sprintf("http://127.0.0.1:%d/small", port)
	times := map[string][]time.Duration{}
	const per = 200
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := 0; k < per; k++ {
			for j := range order {
				way := order[(k+j)%len(order)]
				target := u
				if way == "direct" || way == "direct-new" {
					target = direct
				}
				start := time.Now()
				resp, err := ways[way].Get(target)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				times[way] = append(times[way], time.Since(start))
			}
		}
	}
	p50 := func(way string) float64 {
		ts := times[way]
		slices.Sort(ts)
		return float64(ts[len(ts)/2].Microseconds())
	}
	for _, way := range order {
		b.ReportMetric(p50(way), way+"-p50-µs")
	}
	b.ReportMetric(p50("http")-p50("direct"), "http-added-p50-µs")
	b.ReportMetric(p50("connect")-p50("direct"), "connect-added-p50-µs")
}

// BenchmarkStart: New, a listener, and Serve accepting (Close not
// counted); then the same through the first request answered.
func BenchmarkStart(b *testing.B) {
	_, port := benchServer(b)
	u := fmt.Sprintf("http://bench.test:%d/small", port)
	pol := Policy{Allow: []string{hostPort("bench.test", port)}, AllowInternal: true}
	res := WithResolver(newResolver("bench.test"))
	b.Run("serving", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			p, _, done := listenProxy(b, pol, res)
			b.StopTimer()
			p.Close()
			<-done
			b.StartTimer()
		}
	})
	b.Run("first-answer", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			p, addr, done := listenProxy(b, pol, res)
			tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr})}
			resp, err := (&http.Client{Transport: tr}).Get(u)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			b.StopTimer()
			tr.CloseIdleConnections()
			p.Close()
			<-done
			b.StartTimer()
		}
	})
}
