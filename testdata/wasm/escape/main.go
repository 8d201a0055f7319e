//go:build wasip1

// Command escape is a hostile guest: it tries one way out of its mounts and
// prints "DONE: ..." when the attempt worked or "BLOCKED: ..." when the
// host refused it. It talks WASI directly (go:wasmimport), so that the paths
// it sends are exactly the ones given, not cleaned by Go's os package.
//
// Usage (DIR is a guest mount point such as /rw; PATH is sent as is,
// relative to that preopened directory):
//
//	escape read DIR PATH              open PATH (following symlinks) and read it
//	escape read-nofollow DIR PATH     the same without following a final symlink
//	escape write DIR PATH DATA        open PATH for writing (create) and write DATA
//	escape symlink DIR TARGET LINK    create LINK -> TARGET, then read LINK
//	escape link DIR1 OLD DIR2 NEW DATA  hard-link OLD to NEW, then write DATA to NEW
//	escape rename DIR1 OLD DIR2 NEW   rename OLD to NEW
//	escape mkdir DIR PATH             create directory PATH
//	escape unlink DIR PATH            remove file PATH
//	escape list DIR PATH              list directory PATH
//	escape append DIR PATH DATA       open PATH for appending (no create) and write DATA
//	escape trunc DIR PATH             open PATH with O_TRUNC (no create)
//	escape setsize DIR PATH           open PATH for writing (no create, no truncate), set its size to 0 (fd_filestat_set_size)
//	escape setsize-ro DIR PATH        the same on PATH opened read-only
//	escape utimes DIR PATH            set PATH's times (path_filestat_set_times)
//	escape futimes DIR PATH           open PATH read-only, set its times (fd_filestat_set_times)
//	escape rmdir DIR PATH             remove directory PATH
//	escape symlink-only DIR TARGET LINK  create LINK -> TARGET, nothing more
//	escape link-only DIR1 OLD DIR2 NEW   hard-link OLD to NEW, nothing more
//	escape symlink-write DIR TARGET LINK DATA  create LINK -> TARGET, then write DATA through LINK
//	escape race-write DIR SECONDS     for SECONDS, write x/config and create x/hooks/pre-commit
//	                                  over and over; print how many writes landed and how many were refused
//	escape race-swap DIR SECONDS TARGET  make the link y -> TARGET, then for SECONDS swap the
//	                                  directory x and the link y with renames (x to z, y to x,
//	                                  x to y, z to x); print how many rounds were done
package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

//go:wasmimport wasi_snapshot_preview1 path_open
func pathOpen(fd int32, dirflags uint32, path unsafe.Pointer, pathLen uint32, oflags uint32, rightsBase uint64, rightsInheriting uint64, fdflags uint32, result unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 path_symlink
func pathSymlink(old unsafe.Pointer, oldLen uint32, fd int32, newPath unsafe.Pointer, newLen uint32) uint32

//go:wasmimport wasi_snapshot_preview1 path_link
func pathLink(oldFd int32, oldFlags uint32, old unsafe.Pointer, oldLen uint32, newFd int32, newPath unsafe.Pointer, newLen uint32) uint32

//go:wasmimport wasi_snapshot_preview1 path_rename
func pathRename(fd int32, old unsafe.Pointer, oldLen uint32, newFd int32, newPath unsafe.Pointer, newLen uint32) uint32

//go:wasmimport wasi_snapshot_preview1 path_create_directory
func pathCreateDirectory(fd int32, path unsafe.Pointer, pathLen uint32) uint32

//go:wasmimport wasi_snapshot_preview1 path_unlink_file
func pathUnlinkFile(fd int32, path unsafe.Pointer, pathLen uint32) uint32

//go:wasmimport wasi_snapshot_preview1 path_remove_directory
func pathRemoveDirectory(fd int32, path unsafe.Pointer, pathLen uint32) uint32

//go:wasmimport wasi_snapshot_preview1 path_filestat_set_times
func pathFilestatSetTimes(fd int32, flags uint32, path unsafe.Pointer, pathLen uint32, atim, mtim uint64, fstflags uint32) uint32

//go:wasmimport wasi_snapshot_preview1 fd_filestat_set_times
func fdFilestatSetTimes(fd int32, atim, mtim uint64, fstflags uint32) uint32

//go:wasmimport wasi_snapshot_preview1 fd_filestat_set_size
func fdFilestatSetSize(fd int32, size uint64) uint32

//go:wasmimport wasi_snapshot_preview1 fd_prestat_get
func fdPrestatGet(fd int32, buf unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 fd_prestat_dir_name
func fdPrestatDirName(fd int32, buf unsafe.Pointer, bufLen uint32) uint32

const (
	lookupFollow = 1
	oCreat       = 1
	oDirectory   = 2
	oTrunc       = 8
	rightRead    = 1 << 1
	rightWrite   = 1 << 6
	rightReaddir = 1 << 14
	fdflagAppend = 1
	setAtim      = 1 // fstflags: set atim to the value given
	setMtim      = 4 // fstflags: set mtim to the value given
	rightSetSize = 1 << 22
	rightSetTime = 1 << 23
)

// openRaw opens path with the given oflags, fdflags and rights, and
// returns the raw descriptor.
func openRaw(dir, path string, oflags, fdflags uint32, rights uint64) (int32, uint32) {
	p, n := ptr(path)
	var fd int32
	e := pathOpen(preopen(dir), lookupFollow, p, n, oflags, rights, rights, fdflags, unsafe.Pointer(&fd))
	return fd, e
}

func ptr(s string) (unsafe.Pointer, uint32) {
	b := []byte(s)
	if len(b) == 0 {
		b = []byte{0}
		return unsafe.Pointer(&b[0]), 0
	}
	return unsafe.Pointer(&b[0]), uint32(len(b))
}

// preopen finds the descriptor of the preopened directory named dir.
func preopen(dir string) int32 {
	for fd := int32(3); fd < 64; fd++ {
		var st [8]byte
		if fdPrestatGet(fd, unsafe.Pointer(&st[0])) != 0 {
			continue
		}
		n := uint32(st[4]) | uint32(st[5])<<8 | uint32(st[6])<<16 | uint32(st[7])<<24
		name := make([]byte, n+1)
		if fdPrestatDirName(fd, unsafe.Pointer(&name[0]), n) != 0 {
			continue
		}
		if strings.TrimRight(string(name[:n]), "\x00") == dir {
			return fd
		}
	}
	fmt.Println("SETUP: no preopen", dir)
	os.Exit(3)
	return -1
}

func open(dir, path string, follow, write, directory bool) (*os.File, uint32) {
	var flags uint32
	if follow {
		flags = lookupFollow
	}
	var oflags uint32
	rights := uint64(rightRead)
	if write {
		oflags = oCreat | oTrunc
		rights |= rightWrite
	}
	if directory {
		oflags = oDirectory
		rights = rightRead | rightReaddir
	}
	p, n := ptr(path)
	var fd int32
	if e := pathOpen(preopen(dir), flags, p, n, oflags, rights, rights, 0, unsafe.Pointer(&fd)); e != 0 {
		return nil, e
	}
	return os.NewFile(uintptr(fd), path), 0
}

func blocked(what string, errno uint32) {
	fmt.Printf("BLOCKED: %s: errno %d\n", what, errno)
	os.Exit(0)
}

func blockedErr(what string, err error) {
	fmt.Printf("BLOCKED: %s: %v\n", what, err)
	os.Exit(0)
}

func readPath(dir, path string, follow bool) {
	f, e := open(dir, path, follow, false, false)
	if e != 0 {
		blocked("open", e)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		blockedErr("read", err)
	}
	fmt.Printf("DONE: read %q\n", b)
}

func writePath(dir, path, data string) {
	f, e := open(dir, path, true, true, false)
	if e != 0 {
		blocked("open", e)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		blockedErr("write", err)
	}
	if err := f.Close(); err != nil {
		blockedErr("close", err)
	}
	fmt.Println("DONE: wrote", len(data), "bytes")
}

func main() {
	a := os.Args[1:]
	if len(a) < 3 {
		fmt.Println("usage: escape ATTACK ARGS...")
		os.Exit(2)
	}
	switch a[0] {
	case "read":
		readPath(a[1], a[2], true)
	case "read-nofollow":
		readPath(a[1], a[2], false)
	case "write":
		writePath(a[1], a[2], a[3])
	case "symlink":
		tp, tn := ptr(a[2])
		lp, ln := ptr(a[3])
		if e := pathSymlink(tp, tn, preopen(a[1]), lp, ln); e != 0 {
			blocked("symlink", e)
		}
		readPath(a[1], a[3], true)
	case "link":
		op, on := ptr(a[2])
		np, nn := ptr(a[4])
		if e := pathLink(preopen(a[1]), lookupFollow, op, on, preopen(a[3]), np, nn); e != 0 {
			blocked("link", e)
		}
		writePath(a[3], a[4], a[5])
	case "rename":
		op, on := ptr(a[2])
		np, nn := ptr(a[4])
		if e := pathRename(preopen(a[1]), op, on, preopen(a[3]), np, nn); e != 0 {
			blocked("rename", e)
		}
		fmt.Println("DONE: renamed")
	case "mkdir":
		p, n := ptr(a[2])
		if e := pathCreateDirectory(preopen(a[1]), p, n); e != 0 {
			blocked("mkdir", e)
		}
		fmt.Println("DONE: made directory")
	case "unlink":
		p, n := ptr(a[2])
		if e := pathUnlinkFile(preopen(a[1]), p, n); e != 0 {
			blocked("unlink", e)
		}
		fmt.Println("DONE: removed")
	case "list":
		f, e := open(a[1], a[2], true, false, true)
		if e != 0 {
			blocked("open", e)
		}
		names, err := f.Readdirnames(-1)
		if err != nil {
			blockedErr("readdir", err)
		}
		fmt.Printf("DONE: listed %q\n", names)
	case "append":
		fd, e := openRaw(a[1], a[2], 0, fdflagAppend, rightRead|rightWrite)
		if e != 0 {
			blocked("open", e)
		}
		f := os.NewFile(uintptr(fd), a[2])
		if _, err := f.Write([]byte(a[3])); err != nil {
			blockedErr("write", err)
		}
		fmt.Println("DONE: appended", len(a[3]), "bytes")
	case "trunc":
		if _, e := openRaw(a[1], a[2], oTrunc, 0, rightRead|rightWrite); e != 0 {
			blocked("open", e)
		}
		fmt.Println("DONE: truncated")
	case "setsize", "setsize-ro":
		rights := uint64(rightRead | rightSetSize)
		if a[0] == "setsize" {
			rights |= rightWrite
		}
		fd, e := openRaw(a[1], a[2], 0, 0, rights)
		if e != 0 {
			blocked("open", e)
		}
		if e := fdFilestatSetSize(fd, 0); e != 0 {
			blocked("set size", e)
		}
		fmt.Println("DONE: set size")
	case "utimes":
		p, n := ptr(a[2])
		if e := pathFilestatSetTimes(preopen(a[1]), lookupFollow, p, n, 1e9, 1e9, setAtim|setMtim); e != 0 {
			blocked("set times", e)
		}
		fmt.Println("DONE: set times")
	case "futimes":
		fd, e := openRaw(a[1], a[2], 0, 0, rightRead|rightSetTime)
		if e != 0 {
			blocked("open", e)
		}
		if e := fdFilestatSetTimes(fd, 1e9, 1e9, setAtim|setMtim); e != 0 {
			blocked("set times", e)
		}
		fmt.Println("DONE: set times")
	case "rmdir":
		p, n := ptr(a[2])
		if e := pathRemoveDirectory(preopen(a[1]), p, n); e != 0 {
			blocked("rmdir", e)
		}
		fmt.Println("DONE: removed directory")
	case "symlink-only":
		tp, tn := ptr(a[2])
		lp, ln := ptr(a[3])
		if e := pathSymlink(tp, tn, preopen(a[1]), lp, ln); e != 0 {
			blocked("symlink", e)
		}
		fmt.Println("DONE: made symlink")
	case "symlink-write":
		tp, tn := ptr(a[2])
		lp, ln := ptr(a[3])
		if e := pathSymlink(tp, tn, preopen(a[1]), lp, ln); e != 0 {
			blocked("symlink", e)
		}
		writePath(a[1], a[3], a[4])
	case "link-only":
		op, on := ptr(a[2])
		np, nn := ptr(a[4])
		if e := pathLink(preopen(a[1]), 0, op, on, preopen(a[3]), np, nn); e != 0 {
			blocked("link", e)
		}
		fmt.Println("DONE: linked")
	case "race-write":
		raceWrite(a[1], seconds(a[2]))
	case "race-swap":
		raceSwap(a[1], seconds(a[2]), a[3])
	default:
		fmt.Println("unknown attack", a[0])
		os.Exit(2)
	}
}

func seconds(s string) time.Duration {
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		fmt.Println("SETUP: seconds:", err)
		os.Exit(2)
	}
	return time.Duration(n * float64(time.Second))
}

// raceWrite writes DIR/x/config and creates DIR/x/hooks/pre-commit, the
// way a program would (Go's os package), until d has passed, while
// something else swaps x with a link to a git directory.
func raceWrite(dir string, d time.Duration) {
	wrote, refused := 0, 0
	for end := time.Now().Add(d); time.Now().Before(end); {
		for _, p := range []string{dir + "/x/config", dir + "/x/hooks/pre-commit"} {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
			if err != nil {
				refused++
				continue
			}
			if _, err := f.Write([]byte("PLANTED\n")); err != nil {
				refused++
			} else {
				wrote++
			}
			_ = f.Close()
		}
	}
	fmt.Printf("DONE: wrote %d refused %d\n", wrote, refused)
}

// raceSwap makes DIR/y a link to target and swaps the directory x with
// it until d has passed: the other writer, a second sandbox sharing the
// directory. Each rename is one WASI call; in between, x is a directory,
// missing, or the link.
func raceSwap(dir string, d time.Duration, target string) {
	if err := os.Symlink(target, dir+"/y"); err != nil {
		blockedErr("symlink", err)
	}
	rounds, failed := 0, 0
	steps := [][2]string{{"x", "z"}, {"y", "x"}, {"x", "y"}, {"z", "x"}}
	for end := time.Now().Add(d); time.Now().Before(end); rounds++ {
		for _, s := range steps {
			if err := os.Rename(dir+"/"+s[0], dir+"/"+s[1]); err != nil {
				failed++
			}
		}
	}
	fmt.Printf("DONE: rounds %d failed %d\n", rounds, failed)
}
