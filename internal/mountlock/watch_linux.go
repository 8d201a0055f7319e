package mountlock

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// watcher is an inotify watch of a mount's root directory for the events
// only an outsider can cause: the directory itself moved or removed, its
// file system unmounted. The zero watcher watches nothing.
type watcher struct {
	on bool
	fd int
}

func watch(dir string) watcher {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return watcher{}
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_MOVE_SELF|unix.IN_DELETE_SELF|unix.IN_UNMOUNT|unix.IN_ONLYDIR|unix.IN_DONT_FOLLOW); err != nil {
		unix.Close(fd)
		return watcher{}
	}
	return watcher{on: true, fd: fd}
}

// moved reports whether such an event came (or so many events that some
// were lost).
func (w watcher) moved() bool {
	if !w.on {
		return false
	}
	var buf [4096]byte
	for {
		n, err := unix.Read(w.fd, buf[:])
		if err != nil || n <= 0 {
			return false
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if ev.Mask&(unix.IN_MOVE_SELF|unix.IN_DELETE_SELF|unix.IN_UNMOUNT|unix.IN_Q_OVERFLOW) != 0 {
				return true
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

func (w watcher) close() {
	if w.on {
		unix.Close(w.fd)
	}
}
