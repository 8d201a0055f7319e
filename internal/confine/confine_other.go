//go:build !linux

package confine

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
)

// Available reports ErrUnavailable: Landlock is Linux's.
func Available() (abi int, err error) {
	return 0, fmt.Errorf("confine: no landlock on %s: %w", runtime.GOOS, ErrUnavailable)
}

// noLinks reports false: the path is walked by EvalSymlinks.
func noLinks(string) bool { return false }

// Seccomp reports false: seccomp is Linux's.
func Seccomp() bool { return false }

// Ruleset is never made on this OS.
type Ruleset struct{}

// Prepare fails with ErrUnavailable on this OS.
func Prepare(p Policy) (*Ruleset, error) {
	_, err := Available()
	return nil, err
}

// Start fails with ErrUnavailable on this OS.
func (rs *Ruleset) Start(cmd *exec.Cmd) error {
	_, err := Available()
	return err
}

// Open fails with ErrUnavailable on this OS.
func (rs *Ruleset) Open(name string, flag int, perm os.FileMode) (*os.File, error) {
	_, err := Available()
	return nil, err
}

// Bind fails with ErrUnavailable on this OS.
func (rs *Ruleset) Bind(p Policy) error { return ErrUnavailable }

// ABI is 0 on this OS.
func (rs *Ruleset) ABI() int { return 0 }

// Rules is 0 on this OS.
func (rs *Ruleset) Rules() int { return 0 }

// Close does nothing on this OS.
func (rs *Ruleset) Close() error { return nil }

// NonDumpable does nothing on this OS.
func NonDumpable() error { return nil }

// ServerExe is unused on this OS: nothing is confined, so no ruleset is
// served.
var ServerExe string

// IsRulesetServer reports false: this OS has no confinement server.
func IsRulesetServer() bool { return false }

// ServeMain fails: this OS has no confinement server.
func ServeMain() int { return 1 }

// findRows: nothing is searched on this OS (nothing is confined).
func findRows(dir string, limit int) (leaks, implants []string, complete bool, err error) {
	return nil, nil, false, ErrUnavailable
}

// Sweep: nothing is searched on this OS (nothing is confined).
func Sweep(dir string, keep []string) (removed []string, complete bool, err error) {
	return nil, false, ErrUnavailable
}

// MountNamespace: this OS has none for a confined program.
func MountNamespace() error { return ErrUnavailable }

// ProgramRefusals: ErrUnavailable.
func (rs *Ruleset) ProgramRefusals() error { return ErrUnavailable }

// Refused: nothing, with ErrUnavailable.
func (rs *Ruleset) Refused(pid int) ([]Refusal, error) { return nil, ErrUnavailable }

// HoldAudit: ErrUnavailable.
func HoldAudit(on bool) (release func(), err error) { return nil, ErrUnavailable }

// SetAuditEnabled: ErrUnavailable.
func SetAuditEnabled(on bool) (was bool, err error) { return false, ErrUnavailable }

// RefusedRest: nothing, with ErrUnavailable.
func (rs *Ruleset) RefusedRest() ([]Refusal, error) { return nil, ErrUnavailable }

// ProgramRefusals: ErrUnavailable.
func ProgramRefusals() error { return ErrUnavailable }
