package mountlock

import (
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watcher is an inotify watch of a mount's root directory for the events
// only an outsider can cause: the directory itself moved or removed, its
// file system unmounted. The zero watcher watches nothing.
//
// Every watcher of the process shares one inotify instance, made on first
// use and never closed: closing an instance waits for an RCU grace period
// of the kernel's (tens of milliseconds on a loaded machine, measured at
// the end of every workspace run), while removing one watch from it does
// not wait.
type watcher struct {
	on       bool
	wd       int32
	overflow uint64 // the instance's overflow count when the watch was added
}

var inotify struct {
	sync.Mutex
	fd       int            // 0: not made yet; -1: cannot be made
	moved    map[int32]bool // the watches that had such an event
	overflow uint64         // the events lost, all watches together
}

const watchMask = unix.IN_MOVE_SELF | unix.IN_DELETE_SELF | unix.IN_UNMOUNT

func watch(dir string) watcher {
	inotify.Lock()
	defer inotify.Unlock()
	if inotify.fd == 0 {
		fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
		if err != nil {
			fd = -1
		}
		inotify.fd, inotify.moved = fd, map[int32]bool{}
	}
	if inotify.fd < 0 {
		return watcher{}
	}
	drain() // what is queued belongs to earlier watches
	wd, err := unix.InotifyAddWatch(inotify.fd, dir, watchMask|unix.IN_ONLYDIR|unix.IN_DONT_FOLLOW)
	if err != nil {
		return watcher{}
	}
	delete(inotify.moved, int32(wd))
	return watcher{on: true, wd: int32(wd), overflow: inotify.overflow}
}

// drain reads the queued events into inotify.moved; inotify is locked.
func drain() {
	var buf [4096]byte
	for {
		n, err := unix.Read(inotify.fd, buf[:])
		if err != nil || n <= 0 {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				inotify.overflow++
			case ev.Mask&watchMask != 0:
				inotify.moved[ev.Wd] = true
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// moved reports whether such an event came (or so many events that some
// were lost).
func (w watcher) moved() bool {
	if !w.on {
		return false
	}
	inotify.Lock()
	defer inotify.Unlock()
	drain()
	return inotify.moved[w.wd] || inotify.overflow != w.overflow
}

func (w watcher) close() {
	if !w.on {
		return
	}
	inotify.Lock()
	defer inotify.Unlock()
	drain()
	unix.InotifyRmWatch(inotify.fd, uint32(w.wd))
	delete(inotify.moved, w.wd)
}
