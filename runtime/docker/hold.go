package docker

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// holdPath is where the holder is bound, read-only, in a pooled container.
const holdPath = "/.ccrun-hold"

// holder is the program that keeps an idle pooled container started
// without running anything of the image's: a static ELF executable of 129
// bytes, built here from its nine bytes of machine code, that calls pause(2)
// in a loop. It reads nothing, writes nothing, opens nothing, and needs no
// library, so it runs in any image of the host's architecture (the image
// may hold no program at all). Under the container's docker-init it is
// PID 2; it ends on any fatal signal (SIGTERM included: it handles none).
//
// Nil on an architecture without one (only amd64 has one, the one it is
// tested on): there the pool is off and pooled runs run cold.
func holder() []byte {
	switch runtime.GOARCH {
	case "amd64":
		return elf64(0x3e, []byte{ // EM_X86_64
			0xb8, 34, 0, 0, 0, // loop: mov eax, 34 (SYS_pause)
			0x0f, 0x05, // syscall
			0xeb, 0xf7, // jmp loop (-9)
		})
	default:
		return nil
	}
}

// elf64 is a little-endian ELF64 executable of one read+execute segment,
// loaded at 0x400000, whose code starts right after the two headers.
func elf64(machine uint16, code []byte) []byte {
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

// holderFile writes the holder, once, into the pool directory and returns
// its path: named by its content, mode 0555, written under a temporary name
// and renamed, and checked byte for byte when it exists already.
func (e *Executor) holderFile() (string, error) {
	code := holder()
	if code == nil {
		return "", fmt.Errorf("no warm-pool holder for %s", runtime.GOARCH)
	}
	sum := sha256.Sum256(code)
	path := filepath.Join(e.poolDir, "hold-"+runtime.GOARCH+"-"+hex.EncodeToString(sum[:6]))
	if b, err := os.ReadFile(path); err == nil && bytes.Equal(b, code) {
		return path, nil
	}
	if err := os.MkdirAll(e.poolDir, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(e.poolDir, ".hold-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(code); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Chmod(0o555); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}
