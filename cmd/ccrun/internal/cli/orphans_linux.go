package cli

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// endOrphans finds ccrun's orphaned helper processes of this user and ends
// them (SIGKILL). Each is pinned with a pidfd and checked again through
// it, so that a pid reused meanwhile is never signalled.
func endOrphans(h Helpers) ([]orphan, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("gc: %w", err)
	}
	uid, self := os.Getuid(), os.Getpid()
	var ended []orphan
	var errs []error
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		p, ok := readProc(pid)
		if !ok {
			continue
		}
		if _, bad := orphaned(p, uid, h); !bad {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // gone already
		}
		p, ok = readProc(pid) // the process fd pins, or a newer one: checked again
		what, bad := orphaned(p, uid, h)
		if ok && bad {
			err = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			switch {
			case err == nil:
				ended = append(ended, orphan{pid, what})
			case !errors.Is(err, unix.ESRCH):
				errs = append(errs, fmt.Errorf("gc: end %s %d: %w", what, pid, err))
			}
		}
		_ = unix.Close(fd)
	}
	return ended, errors.Join(errs...)
}
