package wasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"slices"

	"github.com/tetratelabs/wazero"

	"github.com/ccrun/ccrun/runtime/wasm/internal/wasmbin"
)

// DefaultKeep is how many compiled modules an Executor keeps in memory
// unless WithKeep says otherwise.
const DefaultKeep = 16

// WithKeep sets how many compiled modules the Executor keeps in memory
// (the least recently run go first; a module still running is released
// when its last run ends). A module no longer kept is compiled again, or
// loaded from the disk cache, when it next runs. Default: DefaultKeep.
func WithKeep(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("keep %d compiled modules: want at least 1: %w", n, ErrInvalidSpec)
		}
		c.keep = n
		return nil
	}
}

// perSize is how many modules of one size lookupBytes compares with.
const perSize = 4

// modules is an Executor's compiled modules, guarded by its mu.
type modules struct {
	keep  int
	clock uint64                          // ticks at every use
	byKey map[[sha256.Size]byte]*compiled // by the SHA-256 of the bytes
	files map[string]*compiled            // by fileKey
	sizes map[int][]*compiled             // by len(bin), newest last
}

func newModules(keep int) modules {
	return modules{keep: keep, byKey: map[[sha256.Size]byte]*compiled{}, files: map[string]*compiled{}, sizes: map[int][]*compiled{}}
}

// compiled is one module, being compiled until ready is closed.
type compiled struct {
	key   [sha256.Size]byte
	ready chan struct{} // closed once mod or err is set
	mod   wazero.CompiledModule
	err   error
	bin   []byte // a copy of the module's bytes, once compiled

	// Guarded by the Executor's mu.
	done    bool   // compiled: mod is set
	users   int    // runs holding mod
	used    uint64 // clock at the last use
	evicted bool   // no longer kept: mod is closed when users drops to 0
}

// use marks c as used by one more run. e.mu is held.
func (e *Executor) use(c *compiled) *compiled {
	e.mods.clock++
	c.used = e.mods.clock
	c.users++
	return c
}

// release ends a run's use of c (from use, lookupBytes, lookupFile or
// compile), closing the module if it was evicted meanwhile.
func (e *Executor) release(c *compiled) {
	e.mu.Lock()
	c.users--
	drop := c.evicted && c.users == 0 && !e.closed
	e.mu.Unlock()
	if drop {
		_ = c.mod.Close(context.Background())
	}
}

// lookupBytes returns the compiled module whose bytes are bin's, in use,
// or nil: comparing bin with a copy kept at compile time costs a fraction
// of hashing it.
func (e *Executor) lookupBytes(bin []byte) *compiled {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	for _, c := range e.mods.sizes[len(bin)] {
		if bytes.Equal(c.bin, bin) {
			return e.use(c)
		}
	}
	return nil
}

// lookupFile returns the compiled module of a file already compiled and
// not changed since (same device, inode, size, mtime and ctime), in use,
// or nil.
func (e *Executor) lookupFile(fk string) *compiled {
	if fk == "" {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.mods.files[fk]; ok && !e.closed {
		return e.use(c)
	}
	return nil
}

// compile returns the compiled module for bin, whose SHA-256 is key, in
// use, compiling it at most once however many runs ask for it at the same
// time. fk, when not "", is the file bin was read from. notice is told
// when the caller begins and ends waiting for a compilation (not called
// for a module already compiled).
//
// The compilation itself goes on in the background: wazero cannot stop
// one, and a module can be made to take minutes (a br_table of a few
// hundred thousand targets does), so a caller whose ctx ends gets
// ctx.Err() at once and the compiled module, when it is done, is kept for
// the next run.
func (e *Executor) compile(ctx context.Context, key [sha256.Size]byte, bin []byte, fk string, notice func(compiling bool)) (*compiled, error) {
	if err := wasmbin.Header(bin); err != nil {
		return nil, err
	}
	for {
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			return nil, fmt.Errorf("wasm: run: %w", ErrClosed)
		}
		c, ok := e.mods.byKey[key]
		if !ok {
			c = &compiled{key: key, ready: make(chan struct{})}
			e.mods.byKey[key] = c
			e.compiling++
		}
		e.mu.Unlock()
		if !ok {
			go e.compileNew(context.WithoutCancel(ctx), c, bin)
		}
		select {
		case <-c.ready:
		default:
			notice(true)
			select {
			case <-c.ready:
				notice(false)
			case <-ctx.Done():
				notice(false)
				return nil, ctx.Err()
			}
		}
		if c.err != nil {
			return nil, c.err
		}
		e.mu.Lock()
		if !c.evicted {
			if fk != "" {
				e.mods.files[fk] = c
			}
			e.use(c)
			e.mu.Unlock()
			return c, nil
		}
		e.mu.Unlock() // evicted since: compile it again
	}
}

// compileNew compiles bin into c, which compile just added, and makes room
// for it.
func (e *Executor) compileNew(ctx context.Context, c *compiled, bin []byte) {
	mod, err := e.compileNow(ctx, bin)
	e.mu.Lock()
	e.compiling--
	if e.closed {
		// Closed meanwhile: nobody keeps this module; the last compilation
		// to end closes the runtime Close left open.
		last := e.compiling == 0 && e.closePending
		c.err = fmt.Errorf("wasm: run: %w", ErrClosed)
		e.mu.Unlock()
		close(c.ready)
		if last {
			_ = e.closeRuntime(context.Background())
		} else if mod != nil {
			_ = mod.Close(context.Background())
		}
		return
	}
	c.mod, c.err = mod, err
	if err != nil {
		delete(e.mods.byKey, c.key) // errors are not kept: they are cheap to find again
		e.mu.Unlock()
		close(c.ready)
		return
	}
	c.bin = bytes.Clone(bin)
	c.done = true
	e.mods.clock++
	c.used = e.mods.clock // the newest: not the one to evict
	same := append(e.mods.sizes[len(bin)], c)
	e.mods.sizes[len(bin)] = same[max(0, len(same)-perSize):]
	closeNow := e.evict()
	e.mu.Unlock()
	close(c.ready)
	for _, m := range closeNow {
		_ = m.Close(context.Background())
	}
}

// evict forgets the least recently used compiled modules past keep and
// returns those no run holds, to close once e.mu is released. A module
// still compiling is never evicted. e.mu is held.
func (e *Executor) evict() []wazero.CompiledModule {
	var closeNow []wazero.CompiledModule
	for len(e.mods.byKey) > e.mods.keep {
		var lru *compiled
		for _, c := range e.mods.byKey {
			if c.done && !c.evicted && (lru == nil || c.used < lru.used) {
				lru = c
			}
		}
		if lru == nil {
			break
		}
		lru.evicted = true
		delete(e.mods.byKey, lru.key)
		for fk, c := range e.mods.files {
			if c == lru {
				delete(e.mods.files, fk)
			}
		}
		n := len(lru.bin)
		e.mods.sizes[n] = slices.DeleteFunc(e.mods.sizes[n], func(c *compiled) bool { return c == lru })
		if len(e.mods.sizes[n]) == 0 {
			delete(e.mods.sizes, n)
		}
		if lru.users == 0 {
			closeNow = append(closeNow, lru.mod)
		}
	}
	return closeNow
}
