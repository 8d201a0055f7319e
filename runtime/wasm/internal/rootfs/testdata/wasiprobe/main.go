// Command wasiprobe calls the WASI preview 1 functions that
// internal/rootfs wraps, raw, and prints what each answered, one line a
// case, for the package's tests. It expects its mount as preopen 3,
// holding a file f, a symbolic link l -> target-name, a dangling link
// dang -> nowhere, a directory d holding a file in, a file t, a link
// lt -> t and a link esc -> ../outside, out of the mount; and a second
// mount as preopen 4.
package main

import (
	"fmt"
	"unsafe"
)

//go:wasmimport wasi_snapshot_preview1 path_readlink
func pathReadlink(fd int32, path unsafe.Pointer, pathLen uint32, buf unsafe.Pointer, bufLen uint32, used unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 fd_prestat_dir_name
func fdPrestatDirName(fd int32, path unsafe.Pointer, pathLen uint32) uint32

//go:wasmimport wasi_snapshot_preview1 path_open
func pathOpen(fd int32, dirflags uint32, path unsafe.Pointer, pathLen uint32, oflags uint32, base, inheriting uint64, fdflags uint32, opened unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 fd_fdstat_get
func fdFdstatGet(fd int32, out unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 fd_fdstat_set_rights
func fdFdstatSetRights(fd int32, base, inheriting uint64) uint32

//go:wasmimport wasi_snapshot_preview1 fd_renumber
func fdRenumber(from, to int32) uint32

//go:wasmimport wasi_snapshot_preview1 fd_pwrite
func fdPwrite(fd int32, iovs unsafe.Pointer, n uint32, off uint64, written unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 sock_shutdown
func sockShutdown(fd int32, how uint32) uint32

//go:wasmimport wasi_snapshot_preview1 poll_oneoff
func pollOneoff(in, out unsafe.Pointer, n uint32, nevents unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 path_link
func pathLink(oldFd int32, oldFlags uint32, oldPath unsafe.Pointer, oldLen uint32, newFd int32, newPath unsafe.Pointer, newLen uint32) uint32

//go:wasmimport wasi_snapshot_preview1 fd_allocate
func fdAllocate(fd int32, off, n uint64) uint32

//go:wasmimport wasi_snapshot_preview1 path_filestat_set_times
func pathFilestatSetTimes(fd int32, flags uint32, path unsafe.Pointer, pathLen uint32, atim, mtim uint64, fstflags uint32) uint32

//go:wasmimport wasi_snapshot_preview1 path_filestat_get
func pathFilestatGet(fd int32, flags uint32, path unsafe.Pointer, pathLen uint32, out unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 fd_filestat_get
func fdFilestatGet(fd int32, out unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 fd_prestat_get
func fdPrestatGet(fd int32, out unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 fd_write
func fdWrite(fd int32, iovs unsafe.Pointer, n uint32, written unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 fd_close
func fdClose(fd int32) uint32

const (
	rightRead  = 1 << 1
	rightWrite = 1 << 6
)

func str(s string) (unsafe.Pointer, uint32) {
	b := []byte(s)
	return unsafe.Pointer(&b[0]), uint32(len(b))
}

func open(name string, oflags uint32, rights uint64, fdflags uint32) (int32, uint32) {
	p, n := str(name)
	var fd int32
	e := pathOpen(3, 0, p, n, oflags, rights, 0, fdflags, unsafe.Pointer(&fd))
	return fd, e
}

// mtim is the modification time of name in preopen 3 (following a link
// when follow), -1 when it cannot be had.
func mtim(name string, follow uint32) int64 {
	p, n := str(name)
	var st [64]byte
	if e := pathFilestatGet(3, follow, p, n, unsafe.Pointer(&st[0])); e != 0 {
		return -1
	}
	return *(*int64)(unsafe.Pointer(&st[48]))
}

// ino is the inode of the open fd, 0 when it cannot be had.
func ino(fd int32) uint64 {
	var st [64]byte
	if fdFilestatGet(fd, unsafe.Pointer(&st[0])) != 0 {
		return 0
	}
	return *(*uint64)(unsafe.Pointer(&st[8]))
}

// fdstat is the errno of fd_fdstat_get of fd.
func fdstat(fd int32) uint32 {
	var st [24]byte
	return fdFdstatGet(fd, unsafe.Pointer(&st[0]))
}

// write writes s to fd and returns the errno.
func write(fd int32, s string) uint32 {
	b := []byte(s)
	iov := [2]uint32{uint32(uintptr(unsafe.Pointer(&b[0]))), uint32(len(b))}
	var n uint32
	return fdWrite(fd, unsafe.Pointer(&iov[0]), 1, unsafe.Pointer(&n))
}

// pollWrite is the errno of the event of a poll for fd's writability.
func pollWrite(fd int32) uint16 {
	var in [48]byte
	in[8] = 2 // fd_write
	*(*uint32)(unsafe.Pointer(&in[16])) = uint32(fd)
	var out [32]byte
	var nev uint32
	if e := pollOneoff(unsafe.Pointer(&in[0]), unsafe.Pointer(&out[0]), 1, unsafe.Pointer(&nev)); e != 0 || nev != 1 {
		return 0xffff
	}
	return *(*uint16)(unsafe.Pointer(&out[8]))
}

func rights(fd int32) uint64 {
	var st [24]byte
	if e := fdFdstatGet(fd, unsafe.Pointer(&st[0])); e != 0 {
		return 1 << 63
	}
	return *(*uint64)(unsafe.Pointer(&st[8])) & (rightRead | rightWrite)
}

func main() {
	// A buffer of 4 for a target of 11: its first 4 bytes, the rest of
	// the array (memory the wrapper borrows) as it was.
	var buf [16]byte
	for i := range buf {
		buf[i] = 0xaa
	}
	p, n := str("l")
	var used uint32
	e := pathReadlink(3, p, n, unsafe.Pointer(&buf[0]), 4, unsafe.Pointer(&used))
	untouched := true
	for _, b := range buf[4:] {
		untouched = untouched && b == 0xaa
	}
	fmt.Println("readlink", e, used, string(buf[:used]), untouched)

	var name [8]byte
	fmt.Println("prestat-empty", fdPrestatDirName(3, unsafe.Pointer(&name[0]), 0))
	e = fdPrestatDirName(3, unsafe.Pointer(&name[0]), uint32(len(name)))
	fmt.Println("prestat-long", e, string(name[:1]))

	r, _ := open("f", 0, rightRead, 0)
	w, _ := open("f", 0, rightWrite, 0)
	fmt.Println("rights", rights(r), rights(w))

	fmt.Println("set-rights", fdFdstatSetRights(r, 0, 0), fdFdstatSetRights(99, 0, 0))
	fmt.Println("renumber-closed", fdRenumber(r, 99))

	a, _ := open("a", 1 /* creat */, rightWrite, 1 /* append */)
	data := []byte("abc")
	iov := [2]uint32{uint32(uintptr(unsafe.Pointer(&data[0]))), 3}
	var written uint32
	e = fdPwrite(a, unsafe.Pointer(&iov[0]), 1, 0, unsafe.Pointer(&written))
	fmt.Println("pwrite-append", e, written)

	fmt.Println("shutdown-stdout", sockShutdown(1, 1))

	// A write subscription to stdout and a clock of an hour: the write is
	// ready, so the poll answers it alone, at once.
	var in [2][48]byte
	*(*uint64)(unsafe.Pointer(&in[0][0])) = 7
	in[0][8] = 2 // fd_write
	*(*uint32)(unsafe.Pointer(&in[0][16])) = 1
	*(*uint64)(unsafe.Pointer(&in[1][0])) = 9
	in[1][8] = 0 // clock
	*(*uint32)(unsafe.Pointer(&in[1][16])) = 1
	*(*uint64)(unsafe.Pointer(&in[1][24])) = 3600e9
	var out [2][32]byte
	var nev uint32
	e = pollOneoff(unsafe.Pointer(&in[0][0]), unsafe.Pointer(&out[0][0]), 2, unsafe.Pointer(&nev))
	fmt.Println("poll-write", e, nev, *(*uint64)(unsafe.Pointer(&out[0][0])), out[0][10], *(*uint16)(unsafe.Pointer(&out[0][8])))

	op, on := str("dang")
	np, nn := str("dang-link")
	fmt.Println("link-follow-dangling", pathLink(3, 1, op, on, 3, np, nn))
	op, on = str("f")
	np, nn = str("f-link")
	fmt.Println("link-follow-file", pathLink(3, 1, op, on, 3, np, nn))

	fmt.Println("allocate-dir", fdAllocate(3, 0, 1))

	// Opened with FDFLAGS_SYNC, renumbered onto another open file: the
	// flag is reported where the file now is.
	s, _ := open("s", 1 /* creat */, rightWrite, 16 /* sync */)
	o, _ := open("o", 1, rightWrite, 0)
	var st [24]byte
	fdFdstatGet(s, unsafe.Pointer(&st[0]))
	before := *(*uint16)(unsafe.Pointer(&st[2]))
	fdRenumber(s, o)
	fdFdstatGet(o, unsafe.Pointer(&st[0]))
	fmt.Println("sync-flag", before, *(*uint16)(unsafe.Pointer(&st[2])))

	// Without symlink_follow the link's own modification time is set, the
	// target's left; with it, the target's. A directory's too.
	const mtimFlag = 4
	lp, ln := str("lt")
	targetBefore := mtim("t", 0)
	e = pathFilestatSetTimes(3, 0, lp, ln, 0, 1e9, mtimFlag)
	fmt.Println("settimes-nofollow", e, mtim("lt", 0), mtim("t", 0) == targetBefore)
	e = pathFilestatSetTimes(3, 1, lp, ln, 0, 2e9, mtimFlag)
	fmt.Println("settimes-follow", e, mtim("lt", 0), mtim("t", 0))
	dp, dn := str("d")
	e = pathFilestatSetTimes(3, 0, dp, dn, 0, 3e9, mtimFlag)
	fmt.Println("settimes-dir", e, mtim("d", 0))
	// A link out of the mount: its own time is the mount's to set; the
	// file it leads to is not reached (EPERM).
	ep, en := str("esc")
	e = pathFilestatSetTimes(3, 0, ep, en, 0, 4e9, mtimFlag)
	fmt.Println("settimes-escape", e, mtim("esc", 0), pathFilestatSetTimes(3, 1, ep, en, 0, 5e9, mtimFlag))

	// Renumbered onto itself, a file stays open (wazero closes it).
	self, _ := open("f", 0, rightRead, 0)
	fmt.Println("renumber-self", fdRenumber(self, self), fdstat(self))

	// Standard input renumbered onto an open file: that number is now
	// standard input, and 0 names nothing, until the next file opened
	// gets it, the lowest number free.
	k, _ := open("r1", 1 /* creat */, rightWrite, 0)
	e = fdRenumber(0, k)
	fmt.Println("renumber-stdin", e, fdstat(k), fdstat(0), pollWrite(k), pollWrite(0))
	r2, _ := open("r2", 1, rightWrite, 0)
	fmt.Println("renumber-reuse", r2, write(r2, "x"), fdClose(r2), fdstat(r2), fdstat(k))

	// A directory renumbered over preopen 4: 4 is that directory, no
	// longer a preopen, and the directory's old number names nothing.
	dir, _ := open("d", 2 /* directory */, 0, 0)
	dirIno := ino(dir)
	e = fdRenumber(dir, 4)
	old := fdstat(dir)
	var pre [8]byte
	ip, il := str("in")
	var inFD int32
	opened := pathOpen(4, 0, ip, il, 0, rightRead, 0, 0, unsafe.Pointer(&inFD))
	fmt.Println("renumber-preopen", e, ino(4) == dirIno, old, fdPrestatGet(4, unsafe.Pointer(&pre[0])), opened, fdClose(4), fdstat(4), inFD == dir)
}
