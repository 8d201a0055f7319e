package wasm

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ccrun/ccrun/runtime/wasm/internal/wasmbin"
)

// CheckModule says whether bin can be run at all, so that it is refused
// before anyone is asked to approve it: it is a WebAssembly binary module
// (ErrNotWasm, ErrTruncated) that the guard accepts (ErrInvalidModule: see
// Run). It does not compile the module: what only compilation finds (a
// missing _start, a type error) is found by Run. It is safe for concurrent
// use.
func CheckModule(bin []byte) error {
	if err := wasmbin.Header(bin); err != nil {
		return err
	}
	_, err := wasmbin.Guard(bin)
	return err
}

// Check is CheckModule of bin, whose sha256 is sum, with the verdict kept
// in the executor's disk cache: a module this executable's guard accepted
// once is not guarded again before the gate by every new process (the
// guard reads the whole module: 3.8 ms for a 2.4 MB Go-built one). A
// verdict is only what lets the gate ask about a module: every
// compilation guards the module again, so a verdict file planted in the
// cache can make ccrun ask about a module the guard refuses, never run
// it. Verdicts are kept per executable (its path, size and modification
// time): a new build of ccrun, whose guard may be stricter, guards every
// module again. Refusals are not kept. Without a disk cache, Check is
// CheckModule.
func (e *Executor) Check(bin []byte, sum [sha256.Size]byte) error {
	if err := wasmbin.Header(bin); err != nil {
		return err
	}
	dir := e.verdictDir()
	name := hex.EncodeToString(sum[:])
	if dir != "" && accepted(filepath.Join(dir, name)) {
		return nil
	}
	if _, err := wasmbin.Guard(bin); err != nil {
		return err
	}
	if dir != "" {
		if f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			_ = f.Close()
		}
	}
	return nil
}

// accepted reports whether path is a verdict: a regular file of this user.
func accepted(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular() && ownedByMe(fi)
}

// verdictAge is how long the verdicts of another executable are kept
// after their directory last changed.
const verdictAge = 7 * 24 * time.Hour

// verdictDir is the directory of this executable's verdicts, made when
// missing (0700, this user's, not a link), or "" when there is none to
// use: no disk cache, no executable to tell, a directory of another user.
// It is looked at on every Check, not once: a directory that became
// writable by others since is not trusted (two system calls).
func (e *Executor) verdictDir() string {
	if e.cacheDir == "" {
		return ""
	}
	id := exeID()
	if id == "" {
		return ""
	}
	dir := filepath.Join(e.cacheDir, "guarded-"+id)
	made := os.Mkdir(dir, 0o700) == nil
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 || !ownedByMe(fi) {
		return ""
	}
	if made {
		pruneVerdicts(e.cacheDir, dir)
	}
	return dir
}

// pruneVerdicts removes the verdict directories of other executables that
// did not change for verdictAge.
func pruneVerdicts(cacheDir, keep string) {
	ents, err := os.ReadDir(cacheDir)
	if err != nil {
		return
	}
	for _, d := range ents {
		path := filepath.Join(cacheDir, d.Name())
		if !strings.HasPrefix(d.Name(), "guarded-") || !d.IsDir() || path == keep {
			continue
		}
		if fi, err := d.Info(); err == nil && time.Since(fi.ModTime()) > verdictAge {
			_ = os.RemoveAll(path)
		}
	}
}

// exeID names this executable's build: its path, size and modification
// time, hashed; "" when they cannot be told.
var exeID = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	fi, err := os.Stat(exe)
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	h := sha256.Sum256([]byte(exe + "\x00" + strconv.FormatInt(fi.Size(), 10) + "\x00" + strconv.FormatInt(fi.ModTime().UnixNano(), 10)))
	return hex.EncodeToString(h[:8])
})
