package docker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ccrun/ccrun/internal/once"
)

// oncePath is where once (internal/once) is bound, read-only, in a pooled
// container: its program, under the container's docker-init.
const oncePath = "/.ccrun-once"

// engineArch is what the engine said of its architecture: asked once per
// Executor, in the background from New (askArch), so that no run waits
// for it unless it comes first.
type engineArch struct {
	done    chan struct{} // closed when machine and err are set
	machine string        // Info's Architecture: the engine's kernel's (uname -m: "x86_64", "aarch64")
	err     error
}

// askArch asks the engine its architecture (its Info), in the background.
func (e *Executor) askArch() {
	a := &engineArch{done: make(chan struct{})}
	e.arch = a
	go func() {
		defer close(a.done)
		ctx, cancel := context.WithTimeout(e.bg, pingTimeout)
		defer cancel()
		info, err := e.eng.Info(ctx)
		if err != nil {
			a.err = classify(e.host, "info", err)
			return
		}
		a.machine = info.Architecture
	}()
}

// withEngineArch takes machine as the engine's architecture instead of
// asking it (the tests of an arm64 engine, run here under emulation).
func withEngineArch(machine string) Option {
	return func(e *Executor) error {
		a := &engineArch{done: make(chan struct{}), machine: machine}
		close(a.done)
		e.arch = a
		return nil
	}
}

// goArch names a kernel's architecture (uname -m, as the Engine API's
// Info reports it; or GOARCH's name) as GOARCH does, the name once's
// programs go by: "" for one once is not built for.
func goArch(machine string) string {
	switch machine {
	case "x86_64", "amd64":
		return "amd64"
	case "aarch64", "arm64":
		return "arm64"
	}
	return ""
}

// errNoOnce is why there is no once for the engine: its architecture is
// not one once is built for, or it could not be asked.
type errNoOnce struct {
	machine string
	err     error
}

func (n errNoOnce) Error() string {
	if n.err != nil {
		return fmt.Sprintf("the engine's architecture is not known (%v)", n.err)
	}
	return fmt.Sprintf("no warm-pool program (once) for the engine's architecture %q (it is built for %s)", n.machine, strings.Join(once.Arches(), ", "))
}

func (n errNoOnce) Unwrap() error { return n.err }

// onceCode is once for the engine's architecture (not ccrun's: an arm64
// engine runs arm64 code, whatever ccrun runs on), and that architecture;
// an errNoOnce where there is none.
func (e *Executor) onceCode() (code []byte, arch string, err error) {
	if e.arch == nil {
		return nil, "", errNoOnce{err: errors.New("not asked")}
	}
	<-e.arch.done
	if e.arch.err != nil {
		return nil, "", errNoOnce{err: e.arch.err}
	}
	arch = goArch(e.arch.machine)
	if code = once.ELF(arch); code == nil {
		return nil, "", errNoOnce{machine: e.arch.machine}
	}
	return code, arch, nil
}

// poolNote says why a pooled run ran cold, when it is something the
// caller should know — no once for the engine — and "" otherwise (no idle
// container yet is the pool working as it does).
func (e *Executor) poolNote() string {
	if e.poolDir == "" {
		return ""
	}
	var no errNoOnce
	if _, _, err := e.onceCode(); errors.As(err, &no) {
		return "not pooled, run cold: " + no.Error()
	}
	return ""
}

// onceFile writes once, the program of a pooled container (internal/once:
// it keeps an idle container started without running anything of the
// image's, then serves one call read from the container's stdin), for the
// engine's architecture, once, into the pool directory and returns its
// path: named by its architecture and content, mode 0555, written under a
// temporary name and renamed, and checked byte for byte when it exists
// already. For an engine of an architecture once is not built for this
// is an errNoOnce: the pool is off and pooled runs run cold (saying so:
// poolNote).
func (e *Executor) onceFile() (string, error) {
	code, arch, err := e.onceCode()
	if err != nil {
		return "", err
	}
	return e.programFile("once", arch, code)
}

// programFile is the file of the pool directory that holds code, a static
// program of ccrun's for the engine's architecture arch (once, relay),
// bound read-only into the containers that run it: written, executable
// and read-only, when it is not there already.
func (e *Executor) programFile(name, arch string, code []byte) (string, error) {
	if e.poolDir == "" {
		return "", newError(ErrUnavailable, nil, "docker: no directory for ccrun's programs in containers (no cache directory: set XDG_CACHE_HOME)")
	}
	sum := sha256.Sum256(code)
	path := filepath.Join(e.poolDir, name+"-"+arch+"-"+hex.EncodeToString(sum[:6]))
	if b, err := os.ReadFile(path); err == nil && bytes.Equal(b, code) {
		return path, nil
	}
	if err := os.MkdirAll(e.poolDir, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(e.poolDir, "."+name+"-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(code); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Chmod(0o555); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}
