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
// few dozen bytes (once, the warm pod's, a few hundred), built here from
// its machine code.
const (
	helpersDir = "/.ccrun"
	// gatePath waits for one byte on stdin, then execs its arguments:
	// the call's program starts only once ccrun is attached to it, so
	// none of its output is missed. An exec that fails exits 127.
	gatePath = helpersDir + "/gate"
	// holdPath blocks in pause(2) for ever: the program of the copy
	// container of a pod whose mounts are copied, into which tar is
	// exec'd. (A warm pod runs once: once.go.)
	holdPath = helpersDir + "/hold"
)

// gateCode is the gate's machine code. At entry rsp points at argc, then
// argv[0..argc-1], NULL, envp.
var gateCode = []byte{
	0x31, 0xff, // xor edi, edi            fd 0
	0x48, 0x8d, 0x74, 0x24, 0xf8, // lea rsi, [rsp-8]  a byte below the stack (red zone)
	0xba, 0x01, 0x00, 0x00, 0x00, // mov edx, 1
	0x31, 0xc0, // xor eax, eax            SYS_read
	0x0f, 0x05, // syscall
	0x48, 0x8b, 0x7c, 0x24, 0x10, // mov rdi, [rsp+16]  argv[1]
	0x48, 0x8d, 0x74, 0x24, 0x10, // lea rsi, [rsp+16]  &argv[1]
	0x48, 0x8b, 0x04, 0x24, // mov rax, [rsp]          argc
	0x48, 0x8d, 0x54, 0xc4, 0x10, // lea rdx, [rsp+rax*8+16]  envp
	0xb8, 0x3b, 0x00, 0x00, 0x00, // mov eax, 59   SYS_execve
	0x0f, 0x05, // syscall
	0xbf, 0x7f, 0x00, 0x00, 0x00, // mov edi, 127
	0xb8, 0x3c, 0x00, 0x00, 0x00, // mov eax, 60   SYS_exit
	0x0f, 0x05, // syscall
}

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
	return map[string][]byte{"gate": elf64(0x3e, gateCode), "hold": elf64(0x3e, holdCode), "once": elf64(0x3e, onceCode)}
}

// helpersName is the name of the ConfigMap holding the helpers: it names
// their content, so a ConfigMap of that name that holds anything else is
// refused, and a new ccrun never meets an old helper.
func helpersName() string {
	h := sha256.New()
	for _, name := range []string{"gate", "hold", "once"} {
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
