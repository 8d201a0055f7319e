package rootfs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero/api"
)

// files is a run's table of its descriptors, kept by the wrappers: the
// synchronization flags each file was opened with, and the run's own
// numbering of descriptors where it differs from wazero's.
//
// wazero keeps standard input, output and error and the preopened
// directories as preopens, which its fd_renumber refuses to move or to
// replace (ENOTSUP), and its descriptor table has no public API. So when
// wazero refuses, renumber closes the target in wazero and gives the
// guest's number to the descriptor being moved: alias maps that number to
// wazero's, moved maps back. Every WASI function that takes a descriptor
// then asks wazero about the one the guest's number names (numbered), and
// a descriptor wazero opens gets the lowest number the guest has free.
// Nothing but the numbers changes: every call still goes to wazero, on
// descriptors wazero holds for this guest, so no file is reached that was
// not before.
//
// A guest number that is an alias names wazero's descriptor alias[n]; one
// that is wazero's number of a moved descriptor (a key of moved, not an
// alias) names none; any other is wazero's own. An alias's own number is,
// in wazero, either closed or moved: each open descriptor of wazero's has
// exactly one guest number.
type files struct {
	mu    sync.Mutex
	sync  map[uint32]uint16 // wazero's fd -> dsync|rsync|sync asked at path_open; guarded by mu
	alias map[uint32]uint32 // guest's fd -> wazero's, where they differ; guarded by mu
	moved map[uint32]uint32 // wazero's fd -> guest's: alias reversed; guarded by mu
	// renumbered is whether alias holds any: when not, every number is
	// wazero's own and the calls go straight through.
	renumbered atomic.Bool
}

// noFD is the number a guest's number that names no descriptor is given
// to wazero as: -1 to wazero, which is never open.
const noFD = ^uint32(0)

func (t *files) syncs(fd uint32) uint16 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sync[fd]
}

func (t *files) set(fd uint32, flags uint16) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.setLocked(fd, flags)
}

func (t *files) setLocked(fd uint32, flags uint16) {
	if flags == 0 {
		delete(t.sync, fd)
		return
	}
	t.sync[fd] = flags
}

// moveLocked moves the flags of wazero's from to wazero's to, as wazero's
// fd_renumber moved the descriptor.
func (t *files) moveLocked(from, to uint32) {
	if from == to {
		return
	}
	if f, ok := t.sync[from]; ok {
		t.sync[to] = f
	} else {
		delete(t.sync, to)
	}
	delete(t.sync, from)
}

// host is wazero's number of the descriptor the guest's g names (noFD for
// none).
func (t *files) host(g uint32) uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.hostLocked(g)
}

func (t *files) hostLocked(g uint32) uint32 {
	if h, ok := t.alias[g]; ok {
		return h
	}
	if _, ok := t.moved[g]; ok {
		return noFD
	}
	return g
}

// unaliasLocked forgets the guest's number g, if it is an alias.
func (t *files) unaliasLocked(g uint32) {
	if h, ok := t.alias[g]; ok {
		delete(t.alias, g)
		delete(t.moved, h)
	}
	t.renumbered.Store(len(t.alias) > 0)
}

// aliasLocked gives the guest's number g to wazero's h.
func (t *files) aliasLocked(g, h uint32) {
	t.alias[g], t.moved[h] = h, g
	t.renumbered.Store(true)
}

// table is wazero's descriptor table, as the numbering uses it: through
// wazero's functions (wazeroTable), or a model in the tests. The errnos
// are WASI's.
type table interface {
	isOpen(h uint32) bool
	renumber(from, to uint32) uint64
	close(h uint32) uint64
}

// wazeroTable is the table of mod's instance, reached through wazero's own
// functions.
type wazeroTable struct {
	w   wasi
	ctx context.Context
	mod api.Module
}

func (z wazeroTable) isOpen(h uint32) bool {
	return z.w.open(z.ctx, z.mod, uint64(h)) == errnoSuccess
}

func (z wazeroTable) renumber(from, to uint32) uint64 {
	return z.w.call(z.ctx, z.mod, "fd_renumber", uint64(from), uint64(to))
}

func (z wazeroTable) close(h uint32) uint64 {
	return z.w.call(z.ctx, z.mod, "fd_close", uint64(h))
}

// opened is the number the guest gets for wazero's h, just opened in tab:
// the lowest number the guest has free, as POSIX's open(2) gives; h itself
// while nothing is renumbered (wazero gives its lowest free).
func (t *files) opened(tab table, h uint32) uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.alias) == 0 {
		return h
	}
	for g := uint32(0); ; g++ {
		if _, ok := t.alias[g]; ok {
			continue
		}
		if _, ok := t.moved[g]; ok || g == h || !tab.isOpen(g) {
			if g != h {
				t.aliasLocked(g, h)
			}
			return g
		}
	}
}

// close closes, in tab, the descriptor the guest's g names, and forgets
// its flags and g.
func (t *files) close(tab table, g uint32) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.hostLocked(g)
	if e := tab.close(h); e != errnoSuccess {
		return e
	}
	t.setLocked(h, 0)
	t.unaliasLocked(g)
	return errnoSuccess
}

// renumber moves the descriptor the guest's from names to the guest's to,
// closing the one there; both must be open (EBADF). Onto itself nothing
// changes. What tab refuses to move (ENOTSUP: wazero's preopens) is moved
// in the numbering: tab's target is closed, and the guest's to names
// tab's descriptor of from.
func (t *files) renumber(tab table, from, to uint32) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	hf, ht := t.hostLocked(from), t.hostLocked(to)
	if !tab.isOpen(ht) || !tab.isOpen(hf) {
		return errnoBadf
	}
	if from == to {
		return errnoSuccess
	}
	switch e := tab.renumber(hf, ht); e {
	case errnoSuccess:
		// tab's ht holds what hf did: the guest's to still names it, its
		// from names nothing.
		t.moveLocked(hf, ht)
		t.unaliasLocked(from)
		return e
	case errnoNotsup:
		if e := tab.close(ht); e != errnoSuccess {
			return e
		}
		t.setLocked(ht, 0)
		t.unaliasLocked(to)
		t.unaliasLocked(from)
		t.aliasLocked(to, hf)
		return errnoSuccess
	default:
		return e
	}
}

// fdParams are where a WASI function takes descriptors: the indexes of
// its descriptor parameters, and of the pointer to where it writes one it
// opens (0: none; index 0 is always a descriptor).
type fdParams struct {
	fds    []int
	opened int
}

// descriptorParams are the WASI functions that take a descriptor as a
// parameter, but fd_close and fd_renumber (fdClose and fdRenumber number
// their own) and poll_oneoff (whose descriptors are in the guest's memory:
// numberedPoll).
// checkDescriptorParams holds them to wazero's parameter names.
var descriptorParams = map[string]fdParams{
	"fd_advise":               {fds: []int{0}},
	"fd_allocate":             {fds: []int{0}},
	"fd_datasync":             {fds: []int{0}},
	"fd_fdstat_get":           {fds: []int{0}},
	"fd_fdstat_set_flags":     {fds: []int{0}},
	"fd_fdstat_set_rights":    {fds: []int{0}},
	"fd_filestat_get":         {fds: []int{0}},
	"fd_filestat_set_size":    {fds: []int{0}},
	"fd_filestat_set_times":   {fds: []int{0}},
	"fd_pread":                {fds: []int{0}},
	"fd_prestat_dir_name":     {fds: []int{0}},
	"fd_prestat_get":          {fds: []int{0}},
	"fd_pwrite":               {fds: []int{0}},
	"fd_read":                 {fds: []int{0}},
	"fd_readdir":              {fds: []int{0}},
	"fd_seek":                 {fds: []int{0}},
	"fd_sync":                 {fds: []int{0}},
	"fd_tell":                 {fds: []int{0}},
	"fd_write":                {fds: []int{0}},
	"path_create_directory":   {fds: []int{0}},
	"path_filestat_get":       {fds: []int{0}},
	"path_filestat_set_times": {fds: []int{0}},
	"path_link":               {fds: []int{0, 4}},
	"path_open":               {fds: []int{0}, opened: 8},
	"path_readlink":           {fds: []int{0}},
	"path_remove_directory":   {fds: []int{0}},
	"path_rename":             {fds: []int{0, 3}},
	"path_symlink":            {fds: []int{2}},
	"path_unlink_file":        {fds: []int{0}},
	"sock_accept":             {fds: []int{0}, opened: 2},
	"sock_recv":               {fds: []int{0}},
	"sock_send":               {fds: []int{0}},
	"sock_shutdown":           {fds: []int{0}},
}

// checkDescriptorParams refuses a wazero whose functions take descriptors
// where descriptorParams does not say (a parameter named fd, old_fd,
// new_fd or to; a result pointer named result.fd or result.opened_fd), so
// that no descriptor reaches wazero in the guest's numbering.
func checkDescriptorParams(defs map[string]api.FunctionDefinition) error {
	for name, d := range defs {
		var fds []int
		opened := 0
		for i, p := range d.ParamNames() {
			switch p {
			case "fd", "old_fd", "new_fd", "to":
				fds = append(fds, i)
			case "result.fd", "result.opened_fd":
				opened = i
			}
		}
		want, ok := descriptorParams[name]
		switch {
		case name == "fd_renumber":
			ok = slices.Equal(fds, []int{0, 1}) && opened == 0
		case name == "fd_close":
			ok = slices.Equal(fds, []int{0}) && opened == 0
		case name == "poll_oneoff":
			ok = len(fds) == 0 && opened == 0
		case !ok:
			ok = len(fds) == 0 && opened == 0
		default:
			ok = slices.Equal(fds, want.fds) && opened == want.opened
		}
		if !ok {
			return fmt.Errorf("wasi: wazero's %s takes descriptors as %s, which ccrun does not number", name, strings.Join(d.ParamNames(), ", "))
		}
	}
	for name := range descriptorParams {
		if _, ok := defs[name]; !ok {
			return fmt.Errorf("wasi: wazero exports no function %s", name)
		}
	}
	return nil
}

// numbered calls f, a WASI function that takes descriptors where p says,
// on wazero's numbers of the descriptors the guest's numbers name, and
// gives the guest its own number for a descriptor f opens.
func (w wasi) numbered(p fdParams, f api.GoModuleFunc) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		t := runFiles(ctx)
		if t == nil || !t.renumbered.Load() {
			f(ctx, mod, stack)
			return
		}
		for _, i := range p.fds {
			stack[i] = uint64(t.host(uint32(stack[i])))
		}
		opened := uint32(stack[p.opened])
		f(ctx, mod, stack)
		if p.opened == 0 || stack[0] != errnoSuccess {
			return
		}
		mem := mod.Memory()
		if mem == nil {
			return
		}
		if h, ok := mem.ReadUint32Le(opened); ok {
			mem.WriteUint32Le(opened, t.opened(wazeroTable{w, ctx, mod}, h))
		}
	}
}

// fdClose closes the descriptor the guest's number names and forgets its
// flags, and the number.
func (w wasi) fdClose(ctx context.Context, mod api.Module, stack []uint64) {
	t := runFiles(ctx)
	if t == nil {
		w["fd_close"].Call(ctx, mod, stack)
		return
	}
	stack[0] = t.close(wazeroTable{w, ctx, mod}, uint32(stack[0]))
}

// fdRenumber renumbers in the run's numbering (files.renumber), so that
// what wazero refuses to move — a preopened directory, or standard input,
// output or error, moved or replaced (ENOTSUP) — is moved all the same.
// The target must be open: wazero opens a closed one; EBADF is the
// specification's "atomically replace" and wasmtime's answer. Onto itself
// a descriptor stays open (wazero closes it).
func (w wasi) fdRenumber(ctx context.Context, mod api.Module, stack []uint64) {
	from, to := uint32(stack[0]), uint32(stack[1])
	t := runFiles(ctx)
	if t == nil {
		if stack[0] = w.open(ctx, mod, uint64(to)); stack[0] == errnoSuccess {
			stack[0] = w.call(ctx, mod, "fd_renumber", uint64(from), uint64(to))
		}
		return
	}
	stack[0] = t.renumber(wazeroTable{w, ctx, mod}, from, to)
}

// numberedPoll calls f, poll_oneoff, with the descriptors of the guest's
// subscriptions in wazero's numbers: written over the guest's in its
// subscription array, and the guest's put back after.
func numberedPoll(f api.GoModuleFunc) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		t := runFiles(ctx)
		if t == nil || !t.renumbered.Load() {
			f(ctx, mod, stack)
			return
		}
		mem, in := mod.Memory(), uint32(stack[0])
		b, ok := subscriptions(mem, in, uint32(stack[2]))
		if !ok {
			f(ctx, mod, stack)
			return
		}
		saved := append([]byte(nil), b...)
		for i := 0; i+subscriptionSize <= len(b); i += subscriptionSize {
			if sub := b[i : i+subscriptionSize]; sub[8] == eventtypeFdRead || sub[8] == eventtypeFdWrite {
				le.PutUint32(sub[16:], t.host(le.Uint32(sub[16:])))
			}
		}
		f(ctx, mod, stack)
		mem.Write(in, saved)
	}
}
