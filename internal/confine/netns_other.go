//go:build !linux

package confine

import (
	"fmt"
	"net"
	"os/exec"
	"runtime"
)

// NetNS is never made on this OS.
type NetNS struct{}

// NewNetNS fails with ErrUnavailable on this OS.
func NewNetNS() (*NetNS, error) {
	return nil, fmt.Errorf("confine: no network namespace on %s: %w", runtime.GOOS, ErrUnavailable)
}

// Listen fails with ErrUnavailable on this OS.
func (n *NetNS) Listen(network, address string) (net.Listener, error) {
	_, err := NewNetNS()
	return nil, err
}

// Start fails with ErrUnavailable on this OS.
func (n *NetNS) Start(rs *Ruleset, cmd *exec.Cmd) error {
	_, err := NewNetNS()
	return err
}

// Close does nothing on this OS.
func (n *NetNS) Close() {}
