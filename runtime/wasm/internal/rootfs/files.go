package rootfs

import "sync"

// files is a run's table of its descriptors' synchronization flags, kept
// by the wrappers of path_open, fd_close and fd_renumber.
type files struct {
	mu   sync.Mutex
	sync map[uint32]uint16 // fd -> dsync|rsync|sync asked at path_open; guarded by mu
}

func (t *files) syncs(fd uint32) uint16 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sync[fd]
}

func (t *files) set(fd uint32, flags uint16) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if flags == 0 {
		delete(t.sync, fd)
		return
	}
	t.sync[fd] = flags
}

func (t *files) move(from, to uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if from == to {
		return
	}
	if f, ok := t.sync[from]; ok {
		t.sync[to] = f
	} else {
		delete(t.sync, to)
	}
	delete(t.sync, from)
}
