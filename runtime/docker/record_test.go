package docker

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/internal/enginerecord"
)

// TestRecorded: the engine a process created a container on is in the
// engine record of ccrun's state directory (for ccrun gc), by the address
// New connected to, which EnvHost says without connecting, and WithHost
// connects to again.
func TestRecorded(t *testing.T) {
	e := executor(t)
	if got := EnvHost(); got != e.Host() {
		t.Errorf("EnvHost() = %q, want the engine New connected to, %q", got, e.Host())
	}
	run(t, e, Spec{Cmd: sh("true")})
	sites, err := enginerecord.Read(enginerecord.Dir())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range sites {
		found = found || s.Engine == enginerecord.Docker && s.Host == e.Host()
	}
	if !found {
		t.Errorf("the record holds %v, not the docker engine %s", sites, e.Host())
	}
	again := executor(t, WithHost(e.Host()))
	if again.Host() != e.Host() {
		t.Errorf("WithHost(%q) connected to %q", e.Host(), again.Host())
	}
}

// TestWithHostRefused: WithHost names the engine whatever DOCKER_HOST
// says; one nobody answers at is ErrUnavailable, naming it.
func TestWithHostRefused(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	_, err = New(context.Background(), WithHost("unix://"+sock))
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), sock) {
		t.Errorf("New(WithHost) = %v, want ErrUnavailable naming %s", err, sock)
	}
	if _, err := New(context.Background(), WithHost("")); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("WithHost(\"\") = %v, want ErrInvalidArgument", err)
	}
}
