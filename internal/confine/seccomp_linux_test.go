//go:build linux && (amd64 || arm64)

package confine

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// runFilter interprets the classic BPF of a seccomp program (the
// instructions buildFilter uses) over one struct seccomp_data.
func runFilter(t *testing.T, prog []unix.SockFilter, arch, nr uint32, arg1 uint64) uint32 {
	t.Helper()
	action, _ := runFilterSteps(t, prog, arch, nr, arg1)
	return action
}

// runFilterSteps is runFilter, also counting the instructions run.
func runFilterSteps(t *testing.T, prog []unix.SockFilter, arch, nr uint32, arg1 uint64) (action uint32, steps int) {
	t.Helper()
	data := make([]byte, 64)
	binary.NativeEndian.PutUint32(data[offNr:], nr)
	binary.NativeEndian.PutUint32(data[offArch:], arch)
	binary.NativeEndian.PutUint64(data[16+8:], arg1)
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		if steps++; steps > len(prog) {
			t.Fatal("the filter loops")
		}
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.NativeEndian.Uint32(data[in.K:])
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			if acc == in.K {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			if acc >= in.K {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_JMP | unix.BPF_JA:
			pc += int(in.K)
		case unix.BPF_RET | unix.BPF_K:
			return in.K, steps
		default:
			t.Fatalf("instruction %d: unknown code %#x", pc, in.Code)
		}
	}
	t.Fatal("the filter runs off its end")
	return 0, steps
}

// TestFilterDecides runs the filter over every syscall number: the denied
// ones (and the denied ioctls) get EACCES, another architecture's and the
// x32 ABI's get refused, everything else is allowed; and it stays short.
func TestFilterDecides(t *testing.T) {
	for _, v := range []struct{ network, writable bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		t.Run(fmt.Sprintf("network=%v,writable=%v", v.network, v.writable), func(t *testing.T) {
			list := slices.Clone(denied)
			if !v.network {
				list = append(list, deniedNet...)
			}
			if !v.writable {
				list = append(list, deniedMeta...)
			}
			testFilterDecides(t, buildFilter(v.network, v.writable), list)
		})
	}
}

func testFilterDecides(t *testing.T, prog []unix.SockFilter, denied []uint32) {
	const (
		allow   = unix.SECCOMP_RET_ALLOW
		eacces  = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
		enosys  = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		anyArch = 0x12345678
	)
	for nr := uint32(0); nr < 1024; nr++ {
		want := uint32(allow)
		if slices.Contains(denied, nr) {
			want = eacces
		}
		if got := runFilter(t, prog, auditArch, nr, 0); got != want {
			t.Errorf("syscall %d: got %#x, want %#x", nr, got, want)
		}
		if got := runFilter(t, prog, anyArch, nr, 0); got != enosys {
			t.Errorf("syscall %d of another architecture: got %#x, want ENOSYS", nr, got)
		}
		if x32Bit != 0 {
			if got := runFilter(t, prog, auditArch, x32Bit|nr, 0); got != eacces {
				t.Errorf("x32 syscall %d: got %#x, want EACCES", nr, got)
			}
		}
	}
	for _, req := range deniedIoctls {
		if got := runFilter(t, prog, auditArch, unix.SYS_IOCTL, uint64(req)); got != eacces {
			t.Errorf("ioctl %#x: got %#x, want EACCES", req, got)
		}
		// only the low 32 bits are the request
		if got := runFilter(t, prog, auditArch, unix.SYS_IOCTL, 1<<32|uint64(req)); got != eacces {
			t.Errorf("ioctl %#x with high bits: got %#x, want EACCES", req, got)
		}
	}
	for _, req := range []uint64{unix.TCGETS, unix.TIOCGWINSZ, unix.TIOCSWINSZ, 0} {
		if got := runFilter(t, prog, auditArch, unix.SYS_IOCTL, req); got != allow {
			t.Errorf("ioctl %#x: got %#x, want allowed", req, got)
		}
	}
	// the longest path through the filter, which the kernel walks for
	// every syscall number when it installs it
	longest := 0
	for nr := uint32(0); nr < 1024; nr++ {
		if _, n := runFilterSteps(t, prog, auditArch, nr, 0); n > longest {
			longest = n
		}
	}
	if longest > 16 {
		t.Errorf("the longest path through the filter is %d instructions, want at most 16", longest)
	}
}
