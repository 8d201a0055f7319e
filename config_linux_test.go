package ccrun_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/internal/runtimehook"
)

// TestNewReadsProjectFileOnce counts, with inotify, how often New opens
// ccrun.json: once, for the settings layer and the project allowlist
// both.
func TestNewReadsProjectFileOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "ccrun.json")
	doc := `{"mode": "default", "permissions": {"deny": ["run_command:rm"]}, "allowlist": {"run_wasm:a.wasm": "AlwaysThisProject"}}`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	rt, err := ccrun.New(ccrun.WithProjectDir(dir), ccrun.WithTrustDir(t.TempDir()), ccrun.WithAuditLog(""))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	// The events of New's opens are queued by the time it returns.
	opens := 0
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EAGAIN) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if ev.Mask&unix.IN_OPEN != 0 {
				opens++
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
	if opens != 1 {
		t.Errorf("New opened ccrun.json %d times, want 1", opens)
	}
	al, err := runtimehook.Lint(rt)
	if err != nil || len(al.Entries) != 1 {
		t.Errorf("the allowlist read with the settings: %v, %d entries; want nil, 1", err, len(al.Entries))
	}
}
