package docker

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	shared "github.com/ccrun/ccrun/internal/container"
)

// holdPath is where the holder is bound, read-only, in a pooled container.
const holdPath = "/.ccrun-hold"

// holderFile writes the holder (shared.Holder: it keeps an idle pooled
// container started without running anything of the image's, as PID 2
// under the container's docker-init), once, into the pool directory and
// returns its path: named by its content, mode 0555, written under a
// temporary name and renamed, and checked byte for byte when it exists
// already. An architecture without a holder is an error: there the pool
// is off and pooled runs run cold.
func (e *Executor) holderFile() (string, error) {
	code := shared.Holder()
	if code == nil {
		return "", fmt.Errorf("no warm-pool holder for %s", runtime.GOARCH)
	}
	sum := sha256.Sum256(code)
	path := filepath.Join(e.poolDir, "hold-"+runtime.GOARCH+"-"+hex.EncodeToString(sum[:6]))
	if b, err := os.ReadFile(path); err == nil && bytes.Equal(b, code) {
		return path, nil
	}
	if err := os.MkdirAll(e.poolDir, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(e.poolDir, ".hold-*")
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
