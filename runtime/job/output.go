package job

import (
	"io"
	"sync"
	"time"
)

// Output captures one stream of a run up to a limit, copying what it keeps
// to an optional writer as it arrives. Past the limit it keeps nothing more,
// calls the overflow function once (executors stop the program there), and
// still reports every write as complete, so that a program is never blocked
// or handed a short-write error by the cap itself.
//
// An Output is safe for concurrent use.
type Output struct {
	mu       sync.Mutex
	limit    int64 // < 0: no limit
	buf      []byte
	w        io.Writer
	over     bool
	overflow func()
}

// NewOutput returns an Output that keeps at most limit bytes (limit < 0: no
// limit), streams them to w when w is not nil, and calls overflow (when not
// nil) once, the first time a write goes past the limit.
func NewOutput(limit int64, w io.Writer, overflow func()) *Output {
	return &Output{limit: limit, w: w, overflow: overflow}
}

// Write implements io.Writer.
func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	n := len(p)
	keep := p
	fire := false
	if o.limit >= 0 {
		room := o.limit - int64(len(o.buf))
		if room < 0 {
			room = 0
		}
		if int64(len(keep)) > room {
			keep = keep[:room]
			if !o.over {
				o.over, fire = true, true
			}
		}
	}
	o.buf = append(o.buf, keep...)
	if o.w != nil && len(keep) > 0 {
		_, _ = o.w.Write(keep) // the caller's writer failing must not stop the run
	}
	o.mu.Unlock()
	if fire && o.overflow != nil {
		o.overflow()
	}
	return n, nil
}

// Bytes returns what was kept.
func (o *Output) Bytes() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]byte(nil), o.buf...)
}

// Exceeded reports whether a write went past the limit.
func (o *Output) Exceeded() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.over
}

// Capture is a run's two output streams, each capped at the same limit,
// and when the run started: what every executor needs to say how it ended.
type Capture struct {
	Stdout, Stderr *Output   // the output streams, each capped
	Start          time.Time // when the run started
}

// NewCapture starts capturing a run's output: each stream kept up to limit
// (see NewOutput) and copied to s's writer; overflow is called once, when
// either stream first goes past the limit.
func NewCapture(limit int64, s Streams, overflow func()) *Capture {
	var once sync.Once
	over := func() {
		if overflow != nil {
			once.Do(overflow)
		}
	}
	return &Capture{
		Stdout: NewOutput(limit, s.Stdout, over),
		Stderr: NewOutput(limit, s.Stderr, over),
		Start:  time.Now(),
	}
}

// Fill sets r's output, truncation and duration from what was captured so
// far, and returns r.
func (c *Capture) Fill(r *Result) *Result {
	r.Stdout, r.Stderr = c.Stdout.Bytes(), c.Stderr.Bytes()
	r.Truncated = c.Stdout.Exceeded() || c.Stderr.Exceeded()
	r.Duration = time.Since(c.Start)
	return r
}

// Result is Fill of a new Result with the reason, exit code and detail.
func (c *Capture) Result(reason Reason, code int, detail string) *Result {
	return c.Fill(&Result{Reason: reason, ExitCode: code, Detail: detail})
}
