package wasm

import (
	"testing"
	"unsafe"
)

// TestMappedMemory: the reservation starts on a huge-page boundary, opens
// as the guest grows, refuses to grow past the limit, and is unmapped whole.
func TestMappedMemory(t *testing.T) {
	a := &allocator{limit: 3 << 20}
	m, ok := mmapMemory(a).(*mappedMemory)
	if !ok {
		t.Fatal("no mapped memory")
	}
	if addr := uintptr(unsafe.Pointer(&m.reserved[0])); addr%hugePage != 0 {
		t.Fatalf("reservation at %#x: not 2 MiB aligned", addr)
	}
	for _, size := range []uint64{65536, 36 * 65536, 3 << 20} {
		b := m.Reallocate(size)
		if uint64(len(b)) != size {
			t.Fatalf("Reallocate(%d): %d bytes", size, len(b))
		}
		if b[size-1] != 0 {
			t.Fatalf("byte %d of a fresh page is %d", size-1, b[size-1])
		}
		b[size-1] = 1
	}
	if b := m.Reallocate(3<<20 + 65536); b != nil || !a.denied.Load() {
		t.Fatal("grew past the limit")
	}
	a.done()
}
