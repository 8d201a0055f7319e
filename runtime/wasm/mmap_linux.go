package wasm

import (
	"syscall"
	"unsafe"

	"github.com/tetratelabs/wazero/experimental"
)

// mappedMemory is a linear memory that reserves its whole limit of address
// space up front (no access, no backing store) and opens pages to reading
// and writing as the guest grows it: growing neither copies nor zeroes,
// and the kernel hands out zero pages only as they are touched. The
// reservation starts on a 2 MiB boundary and asks for transparent huge
// pages: a Go guest's first 2 MiB (its data and the start of its heap) then
// costs one page fault instead of 512, which is a third of a warm run of
// hello. A huge page only forms where all of its 2 MiB are open to the
// guest, so none lies past the memory limit.
type mappedMemory struct {
	a        *allocator
	reserved []byte
	whole    []byte // the mapping reserved is aligned in
	size     uint64
}

// mmapMemory returns a mappedMemory, or nil when the reservation fails
// (the caller falls back to a Go slice).
func mmapMemory(a *allocator) experimental.LinearMemory {
	if a.limit == 0 {
		return nil
	}
	whole, err := syscall.Mmap(-1, 0, int(a.limit)+hugePage, syscall.PROT_NONE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	skip := (hugePage - uintptr(unsafe.Pointer(&whole[0]))%hugePage) % hugePage
	b := whole[skip:][:a.limit:a.limit]
	_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) // a hint: ignored where THP is off
	m := &mappedMemory{a: a, reserved: b, whole: whole}
	a.mu.Lock()
	a.release = append(a.release, m.unmap)
	a.mu.Unlock()
	return m
}

const (
	osPage   = 4096
	hugePage = 2 << 20
)

func (m *mappedMemory) Reallocate(size uint64) []byte {
	if size > m.a.limit || m.reserved == nil {
		m.a.denied.Store(true)
		return nil
	}
	if size > m.size {
		from := m.size &^ (osPage - 1)
		to := min((size+osPage-1)&^(osPage-1), uint64(len(m.reserved)))
		if err := syscall.Mprotect(m.reserved[from:to], syscall.PROT_READ|syscall.PROT_WRITE); err != nil {
			m.a.denied.Store(true)
			return nil
		}
		m.size = size
	}
	return m.reserved[:size:size]
}

// Free does nothing: wazero may call it from another goroutine (closing
// the runtime) while the guest still runs. Run unmaps the memory once the
// guest has returned.
func (m *mappedMemory) Free() {}

func (m *mappedMemory) unmap() { _ = syscall.Munmap(m.whole) }
