package kube

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"runtime"
)

// The helper programs every ccrun pod gets, read-only, from a ConfigMap
// (helpersVolume at helpersDir): no host path, no image of ccrun's, no
// program of the call's image. Each is a static x86-64 ELF executable of a
// few dozen bytes (once, the run container's program, a few hundred),
// built here from its machine code.
const (
	helpersDir = "/.ccrun"
	// holdPath blocks in pause(2) for ever: the program of the copy
	// container of a pod whose mounts are copied, into which tar is
	// exec'd. (The run container's program is once: once.go.)
	holdPath = helpersDir + "/hold"
)

// holdCode is the holder's: pause(2) in a loop.
var holdCode = []byte{
	0xb8, 34, 0, 0, 0, // loop: mov eax, 34 (SYS_pause)
	0x0f, 0x05, // syscall
	0xeb, 0xf7, // jmp loop
}

// helpers returns the helper files by name, or nil where there are none
// (only amd64 is built and tested).
func helpers() map[string][]byte {
	if runtime.GOARCH != "amd64" {
		return nil
	}
	return map[string][]byte{"hold": elf64(0x3e, holdCode), "once": elf64(0x3e, onceCode)}
}

// helpersName is the name of the ConfigMap holding the helpers: it names
// their content, so a ConfigMap of that name that holds anything else is
// refused, and a new ccrun never meets an old helper.
func helpersName() string {
	h := sha256.New()
	for _, name := range []string{"hold", "once"} {
		h.Write([]byte(name))
		h.Write(helpers()[name])
	}
	return "ccrun-helpers-" + hex.EncodeToString(h.Sum(nil)[:6])
}

// elf64 wraps code in the smallest static ELF64 executable: one header,
// one PT_LOAD program header (read, execute), the code.
func elf64(machine uint16, code []byte) []byte {
	const base, ehsize, phsize = 0x400000, 64, 56
	size := uint64(ehsize + phsize + len(code))
	le := binary.LittleEndian
	b := make([]byte, 0, size)
	b = append(b, 0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	b = le.AppendUint16(b, 2) // ET_EXEC
	b = le.AppendUint16(b, machine)
	b = le.AppendUint32(b, 1)                  // EV_CURRENT
	b = le.AppendUint64(b, base+ehsize+phsize) // entry point
	b = le.AppendUint64(b, ehsize)             // program headers' offset
	b = le.AppendUint64(b, 0)                  // no section headers
	b = le.AppendUint32(b, 0)                  // flags
	b = le.AppendUint16(b, ehsize)
	b = le.AppendUint16(b, phsize)
	b = le.AppendUint16(b, 1)       // one program header
	b = append(b, 0, 0, 0, 0, 0, 0) // no sections
	b = le.AppendUint32(b, 1)       // PT_LOAD
	b = le.AppendUint32(b, 5)       // PF_R|PF_X
	b = le.AppendUint64(b, 0)
	b = le.AppendUint64(b, base)
	b = le.AppendUint64(b, base)
	b = le.AppendUint64(b, size)
	b = le.AppendUint64(b, size)
	b = le.AppendUint64(b, 0x1000)
	return append(b, code...)
}
