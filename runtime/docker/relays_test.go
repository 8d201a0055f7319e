package docker

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/ccrun/ccrun/internal/egress"
	"github.com/ccrun/ccrun/internal/egresstest"
	"github.com/ccrun/ccrun/runtime/job"
)

// counting resolves as names does, and counts the lookups: a proxy that
// looked a name up was reached.
type counting struct {
	names
	n atomic.Int64
}

func (c *counting) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	c.n.Add(1)
	return c.names.LookupNetIP(ctx, network, host)
}

// policyProxy is a proxy that allows host on port and reports refusals.
type policyProxy struct {
	sock    string
	p       *egress.Proxy
	lookups *counting
	mu      sync.Mutex
	refused []string
}

func newPolicyProxy(t *testing.T, host string, port int) *policyProxy {
	lo := netip.MustParseAddr("127.0.0.1")
	pp := &policyProxy{lookups: &counting{names: names{"a.test": lo, "b.test": lo}}}
	pp.sock, pp.p = egresstest.Proxy(t, egress.Policy{Allow: []string{fmt.Sprintf("%s:%d", host, port)}, AllowInternal: true},
		egress.WithResolver(pp.lookups),
		egress.WithReport(func(r egress.Refusal) { pp.mu.Lock(); pp.refused = append(pp.refused, r.Host); pp.mu.Unlock() }))
	return pp
}

func (pp *policyProxy) egress() Egress { return Egress{Socket: pp.sock, Env: pp.p.Env} }

func (pp *policyProxy) refusals() []string {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return append([]string(nil), pp.refused...)
}

// fetch is a script line that asks the proxy, as HTTP_PROXY names it, for
// http://NAME:PORT/ and prints the answer's last line after "NAME: ".
func fetch(name string, port int) string {
	return fmt.Sprintf(`hp=${HTTP_PROXY#http://}
{ printf 'GET http://%s:%d/ HTTP/1.0\r\n\r\n'; /bin/busybox sleep 1; } | /bin/busybox nc -w 3 ${hp%%:*} ${hp##*:} | /bin/busybox tail -1 | /bin/busybox sed 's/^/%s: /'
`, name, port, name)
}

// settle waits until no relay of e is on its way back from a run.
func settle(e *Executor) {
	for {
		e.relays.mu.Lock()
		if e.relays.releasing == 0 {
			e.relays.mu.Unlock()
			return
		}
		w := e.relays.wakeChan()
		e.relays.mu.Unlock()
		<-w
	}
}

// relayCount is how many relays e started.
func relayCount(e *Executor) int {
	e.relays.mu.Lock()
	defer e.relays.mu.Unlock()
	return e.relays.starts
}

// TestBehindReuse: two calls in turn, with different lists, on one
// Executor: the second is served by the relay of the first, and reaches
// only its own proxy. The first leaves a listener and a loop asking its
// proxy in the background; after it, neither is there: the second cannot
// connect to the listener, its request for the first's allowed name is
// refused by its own proxy, and the first's proxy is asked nothing more.
func TestBehindReuse(t *testing.T) {
	e := executor(t)
	port := egresstest.Server(t)
	a, b := newPolicyProxy(t, "a.test", port), newPolicyProxy(t, "b.test", port)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var out strings.Builder
	script := `/bin/busybox nc -l -p 4444 -e /bin/busybox echo leaked </dev/null >/dev/null 2>&1 &
( while :; do ` + strings.ReplaceAll(strings.TrimSpace(fetch("a.test", port)), "\n", "; ") + ` >/dev/null 2>&1; done ) &
` + fetch("a.test", port) + fetch("b.test", port) + "/bin/busybox sleep 1\n"
	res, err := e.RunBehind(ctx, Spec{Image: testImage, Cmd: sh(script), Streams: job.Streams{Stdout: &out}}, a.egress())
	if err != nil || !res.OK() {
		t.Fatalf("A: %v %v", res, err)
	}
	got := out.String()
	if !strings.Contains(got, fmt.Sprintf("a.test: hello from a.test:%d", port)) || !strings.Contains(got, "b.test: egress: refused") {
		t.Fatalf("A's output: %q, want a.test answered and b.test refused", got)
	}
	before := a.lookups.n.Load()
	settle(e) // the relay back (a run waits for it a while; not this test)

	out.Reset()
	script = `/bin/busybox nc -w 2 127.0.0.1 4444 </dev/null && echo "listener: reached"
` + fetch("a.test", port) + fetch("b.test", port)
	res, err = e.RunBehind(ctx, Spec{Image: testImage, Cmd: sh(script), Streams: job.Streams{Stdout: &out}}, b.egress())
	if err != nil || !res.OK() {
		t.Fatalf("B: %v %v", res, err)
	}
	got = out.String()
	t.Logf("B:\n%s", got)
	if n := relayCount(e); n != 1 {
		t.Errorf("%d relays started for two calls in turn, want 1 (reused)", n)
	}
	for _, bad := range []string{"reached", "leaked", "hello from a.test"} {
		if strings.Contains(got, bad) {
			t.Errorf("%q in B's output: B reached what A left", bad)
		}
	}
	if !strings.Contains(got, fmt.Sprintf("b.test: hello from b.test:%d", port)) || !strings.Contains(got, "a.test: egress: refused a.test") {
		t.Errorf("B's output: want b.test answered and a.test refused by B's proxy")
	}
	if r := b.refusals(); len(r) == 0 || r[0] != "a.test" {
		t.Errorf("B's proxy refused %v, want a.test", r)
	}
	if after := a.lookups.n.Load(); after != before {
		t.Errorf("A's proxy was asked %d times during B's run", after-before)
	}
}

// signal is a writer that closes c once what was written holds word.
type signal struct {
	mu   sync.Mutex
	buf  strings.Builder
	word string
	c    chan struct{}
}

func (s *signal) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	had := strings.Contains(s.buf.String(), s.word)
	s.buf.Write(p)
	if !had && strings.Contains(s.buf.String(), s.word) {
		close(s.c)
	}
	return len(p), nil
}

// TestBehindConcurrent: two calls at once, with different lists, have
// relays of their own (different network namespaces): the second cannot
// reach a listener of the first, nor, through its relay, the first's
// allowed name; the first's proxy is asked nothing by the second.
func TestBehindConcurrent(t *testing.T) {
	e := executor(t)
	port := egresstest.Server(t)
	a, b := newPolicyProxy(t, "a.test", port), newPolicyProxy(t, "b.test", port)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	actx, stopA := context.WithCancel(ctx)
	defer stopA()
	listening := &signal{word: "listening", c: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := e.RunBehind(actx, Spec{Image: testImage, Cmd: sh(`/bin/busybox nc -lk -p 4444 -e /bin/busybox echo leaked &
/bin/busybox nc -l -u -p 4445 >/dev/null &
/bin/busybox sleep 1; echo listening; /bin/busybox sleep 100`), Streams: job.Streams{Stdout: listening}}, a.egress())
		done <- err
	}()
	select {
	case <-listening.c:
	case err := <-done:
		t.Fatalf("A ended before it listened: %v", err)
	case <-ctx.Done():
		t.Fatal("A did not listen")
	}
	before := a.lookups.n.Load()
	var out strings.Builder
	script := `/bin/busybox nc -w 2 127.0.0.1 4444 </dev/null && echo "listener: reached"
/bin/busybox netstat -ltun | /bin/busybox grep -q ':444[45] ' && echo "listener: seen"
` + fetch("a.test", port) + fetch("b.test", port)
	res, err := e.RunBehind(ctx, Spec{Image: testImage, Cmd: sh(script), Streams: job.Streams{Stdout: &out}}, b.egress())
	if err != nil || !res.OK() {
		t.Fatalf("B: %v %v", res, err)
	}
	got := out.String()
	t.Logf("B:\n%s", got)
	for _, bad := range []string{"reached", "seen", "leaked", "hello from a.test"} {
		if strings.Contains(got, bad) {
			t.Errorf("%q in B's output: B reached A's container or proxy", bad)
		}
	}
	if !strings.Contains(got, fmt.Sprintf("b.test: hello from b.test:%d", port)) || !strings.Contains(got, "a.test: egress: refused a.test") {
		t.Errorf("B's output: want b.test answered and a.test refused by B's proxy")
	}
	if after := a.lookups.n.Load(); after != before {
		t.Errorf("A's proxy was asked %d times during B's run", after-before)
	}
	if n := relayCount(e); n != 2 {
		t.Errorf("%d relays started for two calls at once, want 2", n)
	}
	stopA()
	<-done
}

// TestBehindRelayReset: a reset kills the connections of the run the relay
// served: a connection held open by a container in the relay's network
// namespace, to a proxy that never answers, is closed by it.
func TestBehindRelayReset(t *testing.T) {
	e := executor(t)
	dir := t.TempDir()
	l, err := net.Listen("unix", filepath.Join(dir, "hold.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c // held open, never answered
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, link, err := e.takeRelay(ctx, Spec{Image: testImage}, filepath.Join(dir, "hold.sock"))
	if err != nil || link == "" {
		t.Fatalf("takeRelay: %v (link %q)", err, link)
	}
	defer e.dropRelay(r)
	ran := make(chan string, 1)
	go func() {
		var out strings.Builder
		b := &behind{relay: r.id}
		_, err := e.Run(context.WithValue(ctx, behindKey{}, b), Spec{Image: testImage,
			Cmd: sh(`/bin/busybox nc 127.0.0.1 ` + relayPort + ` </dev/null; echo closed`), Streams: job.Streams{Stdout: &out}})
		ran <- fmt.Sprint(out.String(), err)
	}()
	var held net.Conn
	select {
	case held = <-accepted:
		defer held.Close()
	case <-ctx.Done():
		t.Fatal("the relay did not connect")
	}
	if err := r.reset(); err != nil {
		t.Fatal(err)
	}
	// The relay's end of the held connection is closed: the proxy's side
	// reads EOF, and the client's nc ends.
	_ = held.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := held.Read(make([]byte, 1)); err == nil {
		t.Errorf("read %d bytes after the reset, want EOF", n)
	}
	select {
	case got := <-ran:
		if !strings.Contains(got, "closed") {
			t.Errorf("client: %q, want its connection closed", got)
		}
	case <-ctx.Done():
		t.Error("the client's connection was not closed by the reset")
	}
}

// gcRelayStarted is what TestGCBehindChild's program prints once it runs.
const gcRelayStarted = "ccrun-gc-behind-child-runs"

// relayChildEnv makes the test binary TestGCBehindChild; its value is the
// directory for the proxy's socket.
const relayChildEnv = "CCRUN_DOCKER_TEST_RELAY_CHILD"

// TestGCBehindChild is the ccrun that TestGCBehindAfterKill kills: a long
// run behind a proxy.
func TestGCBehindChild(t *testing.T) {
	dir := os.Getenv(relayChildEnv)
	if dir == "" {
		t.Skip("the child of TestGCBehindAfterKill")
	}
	e, err := New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p, err := egress.New(egress.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "egress.sock"))
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(l)
	_, _ = e.RunBehind(context.Background(), Spec{Image: testImage, Cmd: sh("echo " + gcRelayStarted + "; sleep 300"),
		Streams: job.Streams{Stdout: os.Stdout}}, Egress{Socket: l.Addr().String(), Env: p.Env})
}

// TestGCBehindAfterKill: a ccrun killed while a run behind the proxy runs
// leaves its container and maybe its relay (which ends by itself once its
// stdin closes); Garbage lists them, GC removes them and the relay's
// directory. Not parallel: GC sweeps the host.
func TestGCBehindAfterKill(t *testing.T) {
	e := executor(t)
	child := exec.Command(os.Args[0], "-test.run=^TestGCBehindChild$")
	child.Env = append(os.Environ(), childEnv+"=1", relayChildEnv+"="+t.TempDir())
	started := &signal{word: gcRelayStarted, c: make(chan struct{})}
	child.Stdout = started
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	select {
	case <-started.c:
	case <-time.After(time.Minute):
		t.Fatal("the child's program did not start")
	}
	pid := child.Process.Pid
	var relays, calls []string
	for _, c := range ours(t, e, pid) {
		if c.Labels[LabelRelay] == "1" {
			relays = append(relays, c.ID)
		} else {
			calls = append(calls, c.ID)
		}
	}
	if len(relays) != 1 || len(calls) != 1 {
		t.Fatalf("the child has %d relays and %d other containers, want 1 and 1", len(relays), len(calls))
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("%s%d.*", relayDirPrefix, pid)))
	if len(dirs) != 1 {
		t.Fatalf("relay directories of the child: %v, want 1", dirs)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	// The relay's stdin closed with the child's attach session: it ends,
	// and the engine removes it.
	wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	removed, errC := e.eng.ContainerWait(wctx, relays[0], container.WaitConditionRemoved)
	select {
	case <-removed:
	case err := <-errC:
		if !isNotFound(err) {
			t.Errorf("the child's relay did not end by itself: %v", err)
		}
	}
	listed, err := e.Garbage(context.Background(), false)
	if err != nil || !contains(listed, calls[0]) {
		t.Fatalf("Garbage = %v, %v; want the child's %s listed", listed, err, calls[0])
	}
	if _, err := e.GC(context.Background()); err != nil {
		t.Fatal(err)
	}
	left, err := e.eng.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", LabelPID+"="+strconv.Itoa(pid)))})
	if err != nil || len(left) != 0 {
		t.Errorf("after GC: %d containers of the child left (%v)", len(left), err)
	}
	if _, err := os.Stat(dirs[0]); !os.IsNotExist(err) {
		t.Errorf("after GC: the child's relay directory %s: %v", dirs[0], err)
	}
}

// TestBehindRelayWaitsForRun: a relay goes back to serve another run only once
// the run's container runs no more: awaitGone is false while a container
// in the relay's network namespace runs (a program that outlives its
// run's return), true once it was killed.
func TestBehindRelayWaitsForRun(t *testing.T) {
	e := executor(t)
	sock, _ := egresstest.Proxy(t, egress.Policy{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, _, err := e.takeRelay(ctx, Spec{Image: testImage}, sock)
	if err != nil {
		t.Fatal(err)
	}
	defer e.dropRelay(r)
	cfg, hc := Spec{Image: testImage, Cmd: sh("sleep 300")}.config(job.Limits{}.WithDefaults(), e.labels())
	(&behind{relay: r.id}).apply(cfg, hc)
	id, err := e.create(ctx, cfg, hc, "")
	if err != nil {
		t.Fatal(err)
	}
	defer e.eng.ContainerRemove(context.Background(), id, container.RemoveOptions{Force: true})
	if err := e.eng.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	short, stop := context.WithTimeout(ctx, time.Second)
	defer stop()
	if e.awaitGone(short, id) {
		t.Fatal("awaitGone: true for a container that runs")
	}
	if err := e.eng.ContainerKill(ctx, id, "KILL"); err != nil {
		t.Fatal(err)
	}
	if !e.awaitGone(ctx, id) {
		t.Error("awaitGone: false for a container killed")
	}
}

// TestBehindOtherFS: a proxy socket on another file system than the
// temporary directory cannot be linked into a kept relay's directory: the
// run gets a relay of its own, bound to the socket, reaches its proxy
// through it, and the relay is removed after the run.
func TestBehindOtherFS(t *testing.T) {
	e := executor(t)
	dir := otherFS(t)
	port := egresstest.Server(t)
	lo := netip.MustParseAddr("127.0.0.1")
	p, err := egress.New(egress.Policy{Allow: []string{fmt.Sprintf("a.test:%d", port)}, AllowInternal: true}, egress.WithResolver(names{"a.test": lo}))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	l, err := net.Listen("unix", filepath.Join(dir, "egress.sock"))
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(l)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out strings.Builder
	res, err := e.RunBehind(ctx, Spec{Image: testImage, Cmd: sh(fetch("a.test", port)), Streams: job.Streams{Stdout: &out}},
		Egress{Socket: l.Addr().String(), Env: p.Env})
	if err != nil || !res.OK() {
		t.Fatalf("%v %v", res, err)
	}
	if want := fmt.Sprintf("a.test: hello from a.test:%d", port); !strings.Contains(out.String(), want) {
		t.Errorf("output %q, want %q", out.String(), want)
	}
	e.relays.mu.Lock()
	idle := len(e.relays.idle) + e.relays.releasing
	e.relays.mu.Unlock()
	if idle != 0 {
		t.Errorf("%d relays kept or on their way back, want the run's own removed", idle)
	}
	for _, c := range ours(t, e, os.Getpid()) {
		if c.Labels[LabelRelay] == "1" {
			t.Errorf("relay %s left after the run", c.ID)
		}
	}
}

// otherFS is a new directory on another file system than the temporary
// directory: under /dev/shm where that is one, else a tmpfs of its own
// (as root); the test is skipped only where neither can be had.
func otherFS(t *testing.T) string {
	t.Helper()
	var tmp, shm syscall.Stat_t
	if syscall.Stat(os.TempDir(), &tmp) != nil {
		t.Fatal("no temporary directory")
	}
	if syscall.Stat("/dev/shm", &shm) == nil && shm.Dev != tmp.Dev {
		dir, err := os.MkdirTemp("/dev/shm", "ccrun-test-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	dir, err := os.MkdirTemp("", "ccrun-test-fs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=1m,mode=0755"); err != nil {
		t.Skipf("no /dev/shm on another file system than %s, and no tmpfs of the test's own: %v", os.TempDir(), err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}
