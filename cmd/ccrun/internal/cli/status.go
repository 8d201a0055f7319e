package cli

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/shellcmd"
)

// status draws one line on a terminal's stderr with the call's state and
// elapsed time, once the call has run longer than a second; while the
// call waits for its module to compile, the line says so ("compiling
// MODULE"). Tool output written through its writers clears the line
// first, so the two never mix.
type status struct {
	mu        sync.Mutex
	w         io.Writer
	state     ccrun.State
	tool      string
	compiling string // the module being compiled, "" when none
	start     time.Time
	shown     bool
	done      chan struct{}
	stopped   bool
}

func newStatus(w io.Writer) *status {
	s := &status{w: w, start: time.Now(), done: make(chan struct{})}
	go s.tick()
	return s
}

func (s *status) tick() {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.mu.Lock()
			if s.state != "" && s.state != ccrun.AwaitingApproval && !s.state.Final() && time.Since(s.start) > time.Second {
				what := string(s.state)
				if s.compiling != "" {
					what = "compiling " + s.compiling + " (first run; kept compiled for the next)"
				}
				fmt.Fprintf(s.w, "\r\x1b[2K%s %s %.1fs", s.tool, what, time.Since(s.start).Seconds())
				s.shown = true
			}
			s.mu.Unlock()
		}
	}
}

// update takes a call's event (a Runtime subscriber).
func (s *status) update(e ccrun.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state, s.tool = e.State, e.Tool
	if e.State == ccrun.Validating {
		s.start = e.Time
	}
	if e.State == ccrun.AwaitingApproval || e.State.Final() {
		s.clear()
	}
}

// compile takes a @wasm call's compile progress (Engines.CompileProgress).
func (s *status) compile(module string, compiling bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compiling = ""
	if compiling {
		s.compiling = shellcmd.Escape(module) // a manifest's name: no control character reaches the terminal
	}
}

func (s *status) clear() {
	if s.shown {
		fmt.Fprint(s.w, "\r\x1b[2K")
		s.shown = false
	}
}

func (s *status) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped {
		s.stopped = true
		close(s.done)
		s.clear()
	}
}

// writer wraps w so that writes clear the status line first.
func (s *status) writer(w io.Writer) io.Writer { return statusWriter{s, w} }

type statusWriter struct {
	s *status
	w io.Writer
}

func (sw statusWriter) Write(p []byte) (int, error) {
	sw.s.mu.Lock()
	defer sw.s.mu.Unlock()
	sw.s.clear()
	return sw.w.Write(p)
}
