package docker

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/ccrun/ccrun/internal/once"
)

// oncePath is where once (internal/once) is bound, read-only, in a pooled
// container: its program, under the container's docker-init.
const oncePath = "/.ccrun-once"

// onceFile writes once, the program of a pooled container (internal/once:
// it keeps an idle container started without running anything of the
// image's, then serves one call read from the container's stdin), once,
// into the pool directory and returns its path: named by its content, mode
// 0555, written under a temporary name and renamed, and checked byte for
// byte when it exists already. once is x86-64 code: on another
// architecture this is an error, the pool is off and pooled runs run cold.
func (e *Executor) onceFile() (string, error) {
	if runtime.GOARCH != "amd64" {
		return "", fmt.Errorf("no warm-pool program (once) for %s", runtime.GOARCH)
	}
	code := once.ELF(runtime.GOARCH)
	sum := sha256.Sum256(code)
	path := filepath.Join(e.poolDir, "once-"+runtime.GOARCH+"-"+hex.EncodeToString(sum[:6]))
	if b, err := os.ReadFile(path); err == nil && bytes.Equal(b, code) {
		return path, nil
	}
	if err := os.MkdirAll(e.poolDir, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(e.poolDir, ".once-*")
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
