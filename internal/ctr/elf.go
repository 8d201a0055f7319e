package ctr

import (
	"encoding/binary"
	"runtime"
)

// EMX8664 is the ELF machine number of x86-64, the one architecture the
// helper programs are built for.
const EMX8664 = 0x3e

// Holder is the program that keeps a container started without running
// anything of its image's (a pooled container on the Docker Engine, a
// pod's copy container on Kubernetes): a static ELF executable of 129
// bytes, built here from its nine bytes of machine code, that calls
// pause(2) in a loop. It reads nothing, writes nothing, opens nothing and
// needs no library, so it runs in any image of the host's architecture
// (the image may hold no program at all); it ends on any fatal signal
// (SIGTERM included: it handles none).
//
// Nil on an architecture without one: only amd64 has one, the one it is
// tested on.
func Holder() []byte {
	if runtime.GOARCH != "amd64" {
		return nil
	}
	return ELF64(EMX8664, []byte{
		0xb8, 34, 0, 0, 0, // loop: mov eax, 34 (SYS_pause)
		0x0f, 0x05, // syscall
		0xeb, 0xf7, // jmp loop (-9)
	})
}

// ELF64 wraps code in the smallest static executable: a little-endian
// ELF64 header, one PT_LOAD program header (read, execute; loaded at
// 0x400000), the code, which starts right after the two headers.
func ELF64(machine uint16, code []byte) []byte {
	const base, ehsize, phsize = 0x400000, 64, 56
	size := uint64(ehsize + phsize + len(code))
	le := binary.LittleEndian
	b := make([]byte, 0, size)
	// ELF header: magic, 64-bit, little-endian, version 1, System V ABI.
	b = append(b, 0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	b = le.AppendUint16(b, 2) // ET_EXEC
	b = le.AppendUint16(b, machine)
	b = le.AppendUint32(b, 1)                  // EV_CURRENT
	b = le.AppendUint64(b, base+ehsize+phsize) // entry point
	b = le.AppendUint64(b, ehsize)             // program headers' offset
	b = le.AppendUint64(b, 0)                  // no section headers
	b = le.AppendUint32(b, 0)                  // flags
	b = le.AppendUint16(b, ehsize)             // header size
	b = le.AppendUint16(b, phsize)             // program header size
	b = le.AppendUint16(b, 1)                  // one program header
	b = append(b, 0, 0, 0, 0, 0, 0)            // no sections
	b = le.AppendUint32(b, 1)                  // PT_LOAD
	b = le.AppendUint32(b, 5)                  // PF_R|PF_X
	b = le.AppendUint64(b, 0)                  // from the file's start
	b = le.AppendUint64(b, base)               // virtual address
	b = le.AppendUint64(b, base)               // physical address
	b = le.AppendUint64(b, size)               // size in the file
	b = le.AppendUint64(b, size)               // size in memory
	b = le.AppendUint64(b, 0x1000)             // alignment
	return append(b, code...)
}
