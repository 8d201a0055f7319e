// Package enginerecord keeps the record of where this user's ccrun
// processes started containers: each Docker Engine, by its address, and
// each namespace of a Kubernetes cluster, by its kubeconfig, context and
// namespace. ccrun gc visits every place of the record without being told
// where, so that what a killed ccrun left on a cluster it no longer
// points at is found.
//
// The record is a file of JSON lines, engines.jsonl in ccrun's state
// directory ($XDG_STATE_HOME/ccrun, else ~/.local/state/ccrun), one place
// a line, at most MaxSites of them. Add appends a place not in it yet,
// under a lock file beside it that every ccrun process of the user takes
// (flock(2), waited for at most a second: a record is never worth a
// hang), and rewrites the file (a temporary file renamed over it) only to
// drop the places used longest ago past MaxSites, to date a place again
// once a day, or to drop lines it cannot read. A process records each
// place once. Read returns the places it can read, and says what it
// cannot: a line that is not a record, a file past MaxBytes, a file or
// directory another user could have written (then none of it is used:
// gc would connect where someone else said).
//
// Everything here is safe for concurrent use, across processes too.
package enginerecord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/containerd/errdefs"
	"github.com/gofrs/flock"
)

// The engines of a Site.
const (
	Docker     = "docker"
	Kubernetes = "kubernetes"
)

// Bounds of the record.
const (
	// MaxSites is how many places the record keeps: those used last.
	MaxSites = 32
	// MaxBytes is how much of the file Read reads.
	MaxBytes = 64 << 10
	// maxField bounds each field of a Site, so that a line stays one
	// short write.
	maxField = 512
	// lockWait bounds how long Add waits for another process's lock.
	lockWait = time.Second
)

// ErrUnreadable: the record, or a line of it, cannot be read, or it may
// have been written by someone else. Read still returns what it could
// read, unless the whole file is suspect.
var ErrUnreadable = errdefs.ErrDataLoss.WithMessage("engine record unreadable")

// Site is one place where ccrun started something.
type Site struct {
	Engine string `json:"engine"` // Docker or Kubernetes
	// Host is a Docker Engine's address, as DOCKER_HOST names it
	// (unix:///var/run/docker.sock).
	Host string `json:"host,omitempty"`
	// Kubeconfig is the kubeconfig file as it was named ("": kubectl's
	// default, ~/.kube/config or in-cluster), Context its context,
	// Namespace the pods' namespace, Server the API server's address (for
	// messages: the context says where it is now).
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Context    string `json:"context,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	Server     string `json:"server,omitempty"`
	// Seen is the day the place was last recorded (2006-01-02, UTC).
	Seen string `json:"seen,omitempty"`
}

// Key is what tells two places apart: the engine and where it is, not
// when it was seen nor the server a context names.
func (s Site) Key() string {
	if s.Engine == Docker {
		return Docker + "\x00" + s.Host
	}
	return strings.Join([]string{s.Engine, s.Kubeconfig, s.Context, s.Namespace}, "\x00")
}

// String names the place for a person.
func (s Site) String() string {
	if s.Engine == Docker {
		return "docker engine " + s.Host
	}
	out := "kubernetes"
	if s.Context != "" {
		out += " context " + s.Context
	}
	if s.Namespace != "" {
		out += " namespace " + s.Namespace
	}
	if s.Kubeconfig != "" {
		out += " of " + s.Kubeconfig
	}
	if s.Server != "" {
		out += " (" + s.Server + ")"
	}
	return out
}

// check says what makes s no record: an unknown engine, a Docker Engine
// with no address, a field too long or holding a control character, a
// kubeconfig that is not an absolute path.
func (s Site) check() error {
	switch s.Engine {
	case Docker:
		if s.Host == "" {
			return errors.New("a docker engine with no address")
		}
	case Kubernetes:
		if s.Kubeconfig != "" && !filepath.IsAbs(s.Kubeconfig) {
			return fmt.Errorf("kubeconfig %q is not an absolute path", s.Kubeconfig)
		}
	default:
		return fmt.Errorf("engine %q: want %s or %s", s.Engine, Docker, Kubernetes)
	}
	for _, f := range []string{s.Host, s.Kubeconfig, s.Context, s.Namespace, s.Server, s.Seen} {
		if len(f) > maxField {
			return fmt.Errorf("a field of %d bytes (at most %d)", len(f), maxField)
		}
		if strings.IndexFunc(f, unicode.IsControl) >= 0 {
			return fmt.Errorf("a field holds a control character: %q", f)
		}
	}
	return nil
}

// Dir is ccrun's state directory: $XDG_STATE_HOME/ccrun when
// XDG_STATE_HOME is an absolute path, else ~/.local/state/ccrun; "" with
// neither.
func Dir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "ccrun")
	}
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "ccrun")
	}
	return ""
}

// File is the record's path in dir.
func File(dir string) string { return filepath.Join(dir, "engines.jsonl") }

// added is what this process recorded already, by directory and key.
var added sync.Map

// Add records s in the state directory (Dir), dated today. It is best
// effort and never fails the caller: a record it cannot write (no state
// directory, an unsafe one, a lock held past a second) is only a place gc
// is not told about. Each place is recorded once per process.
func Add(s Site) {
	dir := Dir()
	if dir == "" || s.check() != nil {
		return
	}
	s.Seen = ""
	if _, done := added.LoadOrStore(dir+"\x00"+s.Key()+"\x00"+s.Server, true); done {
		return
	}
	_ = AddTo(dir, s, time.Now())
}

// AddTo records s in dir as seen at now, as Add does, and says what went
// wrong.
func AddTo(dir string, s Site, now time.Time) error {
	if err := s.check(); err != nil {
		return fmt.Errorf("engine record: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("engine record: %w", err)
	}
	if err := checkDir(dir); err != nil {
		return err
	}
	lock := flock.New(File(dir) + ".lock")
	ctx, cancel := context.WithTimeout(context.Background(), lockWait)
	defer cancel()
	if ok, err := lock.TryLockContext(ctx, 10*time.Millisecond); !ok {
		return fmt.Errorf("engine record: lock: %w", errors.Join(err, ctx.Err()))
	}
	defer lock.Unlock()

	s.Seen = now.UTC().Format(time.DateOnly)
	sites, p, err := read(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err // unsafe or unreadable: left alone, for Read to report
	}
	i := slices.IndexFunc(sites, func(o Site) bool { return o.Key() == s.Key() })
	switch {
	case i >= 0 && sites[i] == s:
		return nil // recorded today already
	case i < 0 && !p.tooBig && p.bad+len(sites) < MaxSites:
		// Lines that are no record stay until the next rewrite: Read
		// reports them meanwhile.
		line, err := json.Marshal(s)
		if err != nil {
			return err
		}
		return appendLine(File(dir), append(line, '\n'))
	}
	if i >= 0 {
		sites = slices.Delete(sites, i, i+1)
	}
	sites = append(sites, s)
	if n := len(sites) - MaxSites; n > 0 {
		sites = sites[n:]
	}
	return rewrite(dir, sites)
}

// appendLine appends line to the file at path, made 0600 when missing,
// in one write (O_APPEND: a reader sees the line whole or not at all).
func appendLine(path string, line []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("engine record: %w", err)
	}
	if err := checkFile(f); err != nil {
		f.Close()
		return err
	}
	_, err = f.Write(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("engine record: %w", err)
	}
	return nil
}

// rewrite replaces the record with sites: a temporary file of dir,
// renamed over it.
func rewrite(dir string, sites []Site) error {
	var b bytes.Buffer
	for _, s := range sites {
		line, err := json.Marshal(s)
		if err != nil {
			return err
		}
		b.Write(append(line, '\n'))
	}
	tmp, err := os.CreateTemp(dir, ".engines-*")
	if err != nil {
		return fmt.Errorf("engine record: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b.Bytes())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), File(dir))
	}
	if err != nil {
		return fmt.Errorf("engine record: %w", err)
	}
	return nil
}

// Read returns the places recorded in dir, the one recorded last at the
// end, each once. A missing record is none, and no error. An error is of
// class ErrUnreadable: it names the lines that are no record (the others
// are returned), a file past MaxBytes (what was read of it is returned),
// or a file or directory that another user could have written (nothing is
// returned).
func Read(dir string) ([]Site, error) {
	sites, p, err := read(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	}
	if msg := p.String(); msg != "" {
		return sites, fmt.Errorf("%s: %w: %s", File(dir), ErrUnreadable, msg)
	}
	return sites, nil
}

// problems are what read found that is no record.
type problems struct {
	tooBig bool     // the file is past MaxBytes
	bad    int      // lines that are no record
	lines  []string // the first of them, said
}

func (p problems) String() string {
	var out []string
	if p.tooBig {
		out = append(out, fmt.Sprintf("larger than %d bytes: the rest is not read", MaxBytes))
	}
	out = append(out, p.lines...)
	if p.bad > len(p.lines) {
		out = append(out, fmt.Sprintf("%d lines in all are not records", p.bad))
	}
	return strings.Join(out, "; ")
}

// read is Read, with what is no record apart, and the error of a missing
// file as it is (fs.ErrNotExist).
func read(dir string) ([]Site, problems, error) {
	var p problems
	if err := checkDir(dir); err != nil {
		return nil, p, err
	}
	path := File(dir)
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, p, err
	}
	if err != nil {
		return nil, p, fmt.Errorf("%s: %w: %w", path, ErrUnreadable, err)
	}
	defer f.Close()
	if err := checkFile(f); err != nil {
		return nil, p, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, p, fmt.Errorf("%s: %w: %w", path, ErrUnreadable, err)
	}
	if len(data) > MaxBytes {
		data = data[:bytes.LastIndexByte(data[:MaxBytes], '\n')+1]
		p.tooBig = true
	}
	var sites []Site
	for n, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var s Site
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		err := dec.Decode(&s)
		if err == nil && dec.More() {
			err = errors.New("more than one value")
		}
		if err == nil {
			err = s.check()
		}
		if err != nil {
			p.bad++
			if len(p.lines) < 5 {
				p.lines = append(p.lines, fmt.Sprintf("line %d is not a record (%v)", n+1, err))
			}
			continue
		}
		sites = slices.DeleteFunc(sites, func(o Site) bool { return o.Key() == s.Key() })
		sites = append(sites, s)
	}
	return sites, p, nil
}

// checkDir refuses a state directory that is not a plain directory of
// this user that only this user may write.
func checkDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return fmt.Errorf("engine record directory %s: %w: %w", dir, ErrUnreadable, err)
	}
	return owned("engine record directory "+dir, fi, fi.IsDir())
}

// checkFile refuses a record that is not a regular file of this user that
// only this user may write.
func checkFile(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w: %w", f.Name(), ErrUnreadable, err)
	}
	return owned(f.Name(), fi, fi.Mode().IsRegular())
}

func owned(what string, fi fs.FileInfo, plain bool) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0 || !plain:
		return fmt.Errorf("%s: %w: not a plain file or directory", what, ErrUnreadable)
	case !ok || int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s: %w: not yours", what, ErrUnreadable)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s: %w: others may write it (%v)", what, ErrUnreadable, fi.Mode().Perm())
	}
	return nil
}
