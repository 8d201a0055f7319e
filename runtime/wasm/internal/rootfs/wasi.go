package rootfs

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Instantiate instantiates the WASI preview 1 host module in rt: wazero's
// own functions, with the few below wrapped where wazero's answer is not
// the one the specification (and wasmtime, which passes WebAssembly's
// wasi-testsuite) gives. Each wrapper calls wazero's function, taken from
// the module's definitions through the public api.FunctionDefinition.
// GoFunction, and only changes what it answers or refuses; the file
// system underneath stays this package's, so nothing here widens what a
// guest can reach. Every function that takes a descriptor is wrapped once
// more (numbered, numberedPoll): with a Run (WithRun) whose guest has
// renumbered what wazero will not move, the guest's numbers are turned
// into wazero's (see files); otherwise it is called straight through.
//
// A wrapper that needs a scratch word (to learn a descriptor's access
// mode, a preopen's name length, the whole of a symbolic link) borrows it
// from the guest's memory and puts the bytes back before returning: the
// guest is suspended during a host call, and its memory is not shared
// (ccrun's runtime does not enable threads), so it cannot see them.
func Instantiate(ctx context.Context, rt wazero.Runtime) (api.Closer, error) {
	b := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	cm, err := b.Compile(ctx)
	if err != nil {
		return nil, err
	}
	defs := cm.ExportedFunctions()
	w := wasi{}
	for name, d := range defs {
		if f, ok := d.GoFunction().(api.GoModuleFunction); ok {
			w[name] = f
		}
	}
	// wazero's functions the wrappers call, the wrapped ones among them.
	for _, name := range []string{"fd_advise", "fd_allocate", "fd_close", "path_open", "fd_fdstat_get", "fd_fdstat_set_rights", "fd_pread",
		"fd_prestat_dir_name", "fd_prestat_get", "fd_renumber", "fd_write", "path_filestat_get", "path_filestat_set_times", "path_link",
		"path_readlink", "poll_oneoff", "sock_shutdown"} {
		if w[name] == nil {
			_ = cm.Close(ctx)
			return nil, fmt.Errorf("wasi: wazero exports no Go function %s", name)
		}
	}
	if err := checkDescriptorParams(defs); err != nil {
		_ = cm.Close(ctx)
		return nil, err
	}
	// The wrappers that read or borrow the guest's memory: wazero's own
	// function runs for a guest without one.
	withMemory := map[string]api.GoModuleFunc{
		"fd_allocate":          w.fdAllocate,
		"path_open":            w.pathOpen,
		"fd_fdstat_get":        w.fdFdstatGet,
		"fd_fdstat_set_rights": w.fdFdstatSetRights,
		"fd_prestat_dir_name":  w.fdPrestatDirName,
		"path_link":            w.pathLink,
		"path_readlink":        w.pathReadlink,
		"poll_oneoff":          w.pollOneoff,
		"sock_shutdown":        w.sockShutdown,
	}
	own := map[string]api.GoModuleFunc{
		"fd_close":                w.fdClose,
		"fd_renumber":             w.fdRenumber,
		"path_filestat_set_times": w.pathFilestatSetTimes,
	}
	for name, d := range defs {
		f := own[name]
		if g, ok := withMemory[name]; ok {
			f = w.withMemory(name, g)
		}
		if p, ok := descriptorParams[name]; ok {
			if f == nil {
				if w[name] == nil {
					_ = cm.Close(ctx)
					return nil, fmt.Errorf("wasi: wazero exports no Go function %s", name)
				}
				f = w[name].Call
			}
			f = w.numbered(p, f)
		}
		if name == "poll_oneoff" {
			f = numberedPoll(f)
		}
		if f == nil {
			continue
		}
		b.NewFunctionBuilder().WithGoModuleFunction(f, d.ParamTypes(), d.ResultTypes()).
			WithParameterNames(d.ParamNames()...).WithResultNames(d.ResultNames()...).Export(name)
	}
	_ = cm.Close(ctx)
	return b.Instantiate(ctx)
}

// WASI preview 1 numbers (the witx definitions of wasi_snapshot_preview1).
const (
	errnoSuccess     = 0
	errnoBadf        = 8
	errnoFault       = 21
	errnoInval       = 28
	errnoNametoolong = 37
	errnoNotsock     = 57
	errnoNotsup      = 58
	errnoRange       = 68

	eventtypeClock   = 0
	eventtypeFdRead  = 1
	eventtypeFdWrite = 2
	subscriptionSize = 48
	eventSize        = 32
	clockMonotonic   = 1

	filetypeDirectory   = 3
	filetypeRegularFile = 4
	filetypeSymlink     = 7
	filestatSize        = 64
	filestatFiletype    = 16

	fdflagsSyncs              = 1<<1 | 1<<3 | 1<<4 // dsync, rsync, sync
	rightFdRead               = 1 << 1
	rightFdWrite              = 1 << 6
	rightPathFilestatSetSize  = 1 << 19
	lookupSymlinkFollow       = 1
	fdstatSize, prestatSize   = 24, 8
	maxLink                   = 4096 // PATH_MAX: the longest link target read whole
	fdstatRightsBase, wordLen = 8, 4
)

var le = binary.LittleEndian

// wasi holds wazero's functions by name.
type wasi map[string]api.GoModuleFunction

// call runs wazero's function name on params and returns its errno.
func (w wasi) call(ctx context.Context, mod api.Module, name string, params ...uint64) uint64 {
	stack := make([]uint64, max(len(params), 1))
	copy(stack, params)
	w[name].Call(ctx, mod, stack)
	return stack[0]
}

// withMemory runs f when the guest has a memory, and wazero's own name
// when it has none (a wrapper reads and borrows the guest's memory).
func (w wasi) withMemory(name string, f api.GoModuleFunc) api.GoModuleFunc {
	orig := w[name]
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		if mod.Memory() == nil {
			orig.Call(ctx, mod, stack)
			return
		}
		f(ctx, mod, stack)
	}
}

// open reports, as an errno, whether fd is open: fd_advise with the
// normal advice does nothing else in wazero.
func (w wasi) open(ctx context.Context, mod api.Module, fd uint64) uint64 {
	return w.call(ctx, mod, "fd_advise", fd, 0, 0, 0)
}

// borrow saves n bytes of the guest's memory at p and returns their
// restoration; ok is false when they are not all there.
func borrow(mem api.Memory, p, n uint32) (restore func(), ok bool) {
	b, ok := mem.Read(p, n)
	if !ok {
		return nil, false
	}
	saved := append([]byte(nil), b...)
	return func() { mem.Write(p, saved) }, true
}

// fdFdstatGet reports the rights an open regular file has as its access
// mode gives them (no fd_read right on a file opened for writing only, no
// fd_write on one opened for reading), as wasmtime does; wazero reports
// every right on every file. A directory is not reported the
// path_filestat_set_size right: preview 1 has no function it allows.
func (w wasi) fdFdstatGet(ctx context.Context, mod api.Module, stack []uint64) {
	fd, out := stack[0], uint32(stack[1])
	if stack[0] = w.call(ctx, mod, "fd_fdstat_get", fd, uint64(out)); stack[0] != errnoSuccess {
		return
	}
	mem := mod.Memory()
	b, _ := mem.Read(out, fdstatSize)
	st := append([]byte(nil), b...)
	rights := le.Uint64(st[fdstatRightsBase:])
	switch st[0] {
	case filetypeDirectory:
		rights &^= rightPathFilestatSetSize
	case filetypeRegularFile:
		// The fdstat's own 24 bytes are the scratch: an iovec at 0, the
		// count at 8, the byte read at 16. A write of no bytes and a
		// pread of one, neither moving the offset, fail with EBADF
		// exactly when the file was not opened for it.
		le.PutUint32(b[0:], out+16)
		le.PutUint32(b[4:], 0)
		if w.call(ctx, mod, "fd_write", fd, uint64(out), 1, uint64(out+8)) == errnoBadf {
			rights &^= rightFdWrite
		}
		le.PutUint32(b[0:], out+16)
		le.PutUint32(b[4:], 1)
		if w.call(ctx, mod, "fd_pread", fd, uint64(out), 1, 0, uint64(out+8)) == errnoBadf {
			rights &^= rightFdRead
		}
	}
	le.PutUint64(st[fdstatRightsBase:], rights)
	if t := runFiles(ctx); t != nil {
		le.PutUint16(st[2:], le.Uint16(st[2:])|t.syncs(uint32(fd)))
	}
	mem.Write(out, st)
}

// fdFdstatSetRights answers ENOTSUP for an open descriptor (EBADF for
// one that is not), as wasmtime does: rights are not kept, so none can be
// dropped. wazero answers ENOSYS, which a guest takes for a missing
// function rather than for "no rights here".
func (w wasi) fdFdstatSetRights(ctx context.Context, mod api.Module, stack []uint64) {
	if e := w.open(ctx, mod, stack[0]); e != errnoSuccess {
		stack[0] = e
		return
	}
	stack[0] = errnoNotsup
}

// fdPrestatDirName writes a preopen's name into any buffer long enough
// for it, and answers ENAMETOOLONG for a shorter one (an empty one too).
// wazero refuses a buffer longer than the name, and accepts an empty one.
func (w wasi) fdPrestatDirName(ctx context.Context, mod api.Module, stack []uint64) {
	fd, p, n := stack[0], uint32(stack[1]), uint32(stack[2])
	mem := mod.Memory()
	restore, ok := borrow(mem, p, prestatSize)
	if !ok {
		w[("fd_prestat_dir_name")].Call(ctx, mod, stack)
		return
	}
	e := w.call(ctx, mod, "fd_prestat_get", fd, uint64(p))
	nameLen, _ := mem.ReadUint32Le(p + wordLen)
	restore()
	switch {
	case e != errnoSuccess:
		stack[0] = e
	case nameLen > n:
		stack[0] = errnoNametoolong
	default:
		stack[0] = w.call(ctx, mod, "fd_prestat_dir_name", fd, uint64(p), uint64(nameLen))
	}
}

// pathFilestatSetTimes, without symlink_follow, sets the times of a
// symbolic link at the end of the path, not those of its target, as
// utimensat(2) with AT_SYMLINK_NOFOLLOW and wasmtime do; wazero opens the
// path, following the link, and sets the times of what it opened (a
// directory, which it cannot open for writing, fails with EISDIR). wazero
// still resolves the descriptor and the path, as for every path call, and
// is asked to follow: the run's file systems, told by Run.noFollow that
// this call does not, set the times on the last name the walk reached
// without following it. (A file system not of this package follows.)
func (w wasi) pathFilestatSetTimes(ctx context.Context, mod api.Module, stack []uint64) {
	run := runOf(ctx)
	if run == nil || stack[1]&lookupSymlinkFollow != 0 {
		w["path_filestat_set_times"].Call(ctx, mod, stack)
		return
	}
	run.noFollow.Store(true)
	defer run.noFollow.Store(false)
	stack[1] |= lookupSymlinkFollow
	w["path_filestat_set_times"].Call(ctx, mod, stack)
}

// pathLink, asked to follow a symbolic link at the old path that leads
// nowhere (dangling, or a loop), answers as linkat(2) with
// AT_SYMLINK_FOLLOW does (ENOENT, ELOOP); wazero ignores the flag and
// links the symbolic link itself. (One that leads to a file is still
// linked itself, as before: Go's os.Link asks to follow, and Linux's
// link(2) does not.) The filestats are read into borrowed memory.
func (w wasi) pathLink(ctx context.Context, mod api.Module, stack []uint64) {
	fd, flags, p, l := stack[0], stack[1], uint32(stack[2]), uint32(stack[3])
	if flags&lookupSymlinkFollow != 0 {
		mem := mod.Memory()
		if at, restore, ok := borrowAway(mem, filestatSize, p, l); ok {
			e := w.call(ctx, mod, "path_filestat_get", fd, 0, uint64(p), uint64(l), uint64(at))
			ft, _ := mem.ReadByte(at + filestatFiletype)
			link := e == errnoSuccess && ft == filetypeSymlink
			if link {
				e = w.call(ctx, mod, "path_filestat_get", fd, lookupSymlinkFollow, uint64(p), uint64(l), uint64(at))
			}
			restore()
			if link && e != errnoSuccess {
				stack[0] = e
				return
			}
		}
	}
	w["path_link"].Call(ctx, mod, stack)
}

// borrowAway borrows n bytes of the guest's memory that do not overlap
// [p, p+l): at its start, or past that range.
func borrowAway(mem api.Memory, n, p, l uint32) (at uint32, restore func(), ok bool) {
	for _, at := range []uint64{0, (uint64(p) + uint64(l) + 7) &^ 7} {
		if at+uint64(n) <= uint64(p) || at >= uint64(p)+uint64(l) {
			if at+uint64(n) <= uint64(mem.Size()) {
				restore, ok := borrow(mem, uint32(at), n)
				return uint32(at), restore, ok
			}
		}
	}
	return 0, nil, false
}

// pathReadlink fills a buffer too short for the link's target with the
// target's first bytes and reports that many, as readlink(2) and wasmtime
// do; wazero answers ERANGE. The rest of the target is read into guest
// memory borrowed past the buffer (the target's longest is maxLink).
func (w wasi) pathReadlink(ctx context.Context, mod api.Module, stack []uint64) {
	params := append([]uint64(nil), stack[:6]...)
	w["path_readlink"].Call(ctx, mod, stack)
	if stack[0] != errnoRange {
		return
	}
	buf, n, used := uint32(params[3]), uint32(params[4]), uint32(params[5])
	mem := mod.Memory()
	extra := min(uint64(maxLink), uint64(mem.Size())-min(uint64(mem.Size()), uint64(buf)+uint64(n)))
	if extra == 0 {
		return
	}
	restore, ok := borrow(mem, buf+n, uint32(extra))
	if !ok {
		return
	}
	params[4] = uint64(n) + extra
	e := w.call(ctx, mod, "path_readlink", params...)
	restore()
	if e != errnoSuccess {
		stack[0] = e
		return
	}
	if !mem.WriteUint32Le(used, n) {
		stack[0] = errnoRange
		return
	}
	stack[0] = errnoSuccess
}

// sockShutdown answers ENOTSOCK for an open descriptor that is not a
// socket, as POSIX's shutdown(2) does; wazero answers EBADF.
func (w wasi) sockShutdown(ctx context.Context, mod api.Module, stack []uint64) {
	fd := stack[0]
	w["sock_shutdown"].Call(ctx, mod, stack)
	if stack[0] == errnoBadf && w.open(ctx, mod, fd) == errnoSuccess {
		stack[0] = errnoNotsock
	}
}

// fdAllocate answers EBADF for a directory, as fallocate(2) on Linux and
// wasmtime do; wazero reports success when the directory's size already
// covers the range. The filetype is read into 24 borrowed bytes at the
// start of the guest's memory.
func (w wasi) fdAllocate(ctx context.Context, mod api.Module, stack []uint64) {
	fd := stack[0]
	mem := mod.Memory()
	if restore, ok := borrow(mem, 0, fdstatSize); ok {
		e := w.call(ctx, mod, "fd_fdstat_get", fd, 0)
		ft, _ := mem.ReadByte(0)
		restore()
		if e == errnoSuccess && ft == filetypeDirectory {
			stack[0] = errnoBadf
			return
		}
	}
	w["fd_allocate"].Call(ctx, mod, stack)
}

// pollOneoff answers a subscription to a descriptor's writability at once:
// ready when the descriptor is open (every one of a ccrun guest, captured
// standard output and error or a file, takes a write without blocking),
// EBADF when not. wazero answers ENOTSUP, and sleeps out the poll's clock
// even then. When one is ready, the poll does not wait: its clocks are
// dropped, and its read subscriptions are asked of wazero with a clock of
// no timeout, in the guest's own subscription array (put back after).
func (w wasi) pollOneoff(ctx context.Context, mod api.Module, stack []uint64) {
	in, out, n, nevents := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
	mem := mod.Memory()
	subs, ok := subscriptions(mem, in, n)
	if _, okOut := mem.Read(out, n*eventSize); n == 0 || !ok || !okOut || !writeSub(subs) {
		w["poll_oneoff"].Call(ctx, mod, stack)
		return
	}
	saved := append([]byte(nil), subs...)
	var events, reads []byte
	for i := 0; i < len(saved); i += subscriptionSize {
		sub := saved[i : i+subscriptionSize]
		switch sub[8] {
		case eventtypeFdWrite:
			ev := make([]byte, eventSize)
			copy(ev[0:8], sub[0:8])
			le.PutUint16(ev[8:], uint16(w.open(ctx, mod, uint64(le.Uint32(sub[16:])))))
			ev[10] = eventtypeFdWrite
			events = append(events, ev...)
		case eventtypeFdRead:
			reads = append(reads, sub...)
		case eventtypeClock:
		default:
			w["poll_oneoff"].Call(ctx, mod, stack) // wazero's EINVAL
			return
		}
	}
	if len(reads) > 0 {
		clock := make([]byte, subscriptionSize)
		clock[8] = eventtypeClock
		le.PutUint32(clock[16:], clockMonotonic)
		reads = append(reads, clock...)
		mem.Write(in, reads)
		e := w.call(ctx, mod, "poll_oneoff", uint64(in), uint64(out), uint64(len(reads)/subscriptionSize), uint64(nevents))
		k, _ := mem.ReadUint32Le(nevents)
		mem.Write(in, saved)
		if e != errnoSuccess {
			stack[0] = e
			return
		}
		got, _ := mem.Read(out, min(k, n)*eventSize)
		for i := 0; i < len(got); i += eventSize {
			if got[i+10] != eventtypeClock {
				events = append(events, got[i:i+eventSize]...)
			}
		}
	}
	mem.Write(out, events)
	if !mem.WriteUint32Le(nevents, uint32(len(events)/eventSize)) {
		stack[0] = errnoFault
		return
	}
	stack[0] = errnoSuccess
}

// subscriptions are the n subscriptions of poll_oneoff at in, a view of
// the guest's memory; false when they are not all in it.
func subscriptions(mem api.Memory, in, n uint32) ([]byte, bool) {
	if mem == nil || uint64(n)*subscriptionSize > uint64(mem.Size()) {
		return nil, false
	}
	return mem.Read(in, n*subscriptionSize)
}

// writeSub reports whether subs hold a subscription to writability.
func writeSub(subs []byte) bool {
	for i := 0; i+subscriptionSize <= len(subs); i += subscriptionSize {
		if subs[i+8] == eventtypeFdWrite {
			return true
		}
	}
	return false
}

// pathOpen records the synchronization flags of the file it opened
// (wazero opens it O_SYNC for any of them; this package's file system
// passes that on), for fd_fdstat_get to report.
func (w wasi) pathOpen(ctx context.Context, mod api.Module, stack []uint64) {
	fdflags, opened := uint16(stack[7]), uint32(stack[8])
	w["path_open"].Call(ctx, mod, stack)
	t := runFiles(ctx)
	if stack[0] != errnoSuccess || t == nil {
		return
	}
	if fd, ok := mod.Memory().ReadUint32Le(opened); ok {
		t.set(fd, fdflags&fdflagsSyncs)
	}
}
