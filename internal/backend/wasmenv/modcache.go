package wasmenv

import (
	"crypto/sha256"
	"os"
	"sync"
)

// moduleCache keeps the bytes and sha256 of recently run module files, so
// a warm run neither reads nor hashes the file again. An entry is used only
// while the file's identity (device, inode, size, modification and change
// times) is unchanged; the bytes that run are always the bytes that were
// hashed, so a file changed behind an unchanged identity still runs the
// content that was digested and approved, never unapproved content.
type moduleCache struct {
	mu      sync.Mutex
	entries map[fileID]*cachedModule
	order   []fileID
	checked map[[sha256.Size]byte]bool // modules the guard accepted
}

// check runs guard (the executor's Check, which keeps its verdicts on
// disk for new processes) on a module once per runtime: a warm runtime
// (ccrun mcp, an embedding agent) does not guard the same bytes on every
// call. Refusals are not kept (cheap to find again).
func (c *moduleCache) check(mod []byte, sum [sha256.Size]byte, guard func([]byte, [sha256.Size]byte) error) error {
	c.mu.Lock()
	ok := c.checked[sum]
	c.mu.Unlock()
	if ok {
		return nil
	}
	if err := guard(mod, sum); err != nil {
		return err
	}
	c.mu.Lock()
	if c.checked == nil || len(c.checked) >= 4*moduleCacheSize {
		c.checked = map[[sha256.Size]byte]bool{}
	}
	c.checked[sum] = true
	c.mu.Unlock()
	return nil
}

type cachedModule struct {
	bytes []byte
	sum   [sha256.Size]byte
}

type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

const moduleCacheSize = 16

// statID is path's identity; false when it cannot be told (then the file
// is read and hashed again). See modcache_linux.go, modcache_other.go.
func statID(path string) (fileID, bool) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return fileID{}, false
	}
	return sysID(fi)
}

// read returns path's bytes and their sha256.
func (c *moduleCache) read(path string) ([]byte, [sha256.Size]byte, error) {
	before, ok := statID(path)
	if ok {
		c.mu.Lock()
		e := c.entries[before]
		c.mu.Unlock()
		if e != nil {
			return e.bytes, e.sum, nil
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, [sha256.Size]byte{}, err
	}
	sum := sha256.Sum256(data)
	if after, ok2 := statID(path); ok && ok2 && after == before && int64(len(data)) == before.size {
		c.mu.Lock()
		if c.entries == nil {
			c.entries = map[fileID]*cachedModule{}
		}
		if _, dup := c.entries[before]; !dup {
			c.entries[before] = &cachedModule{bytes: data, sum: sum}
			c.order = append(c.order, before)
			if len(c.order) > moduleCacheSize {
				delete(c.entries, c.order[0])
				c.order = c.order[1:]
			}
		}
		c.mu.Unlock()
	}
	return data, sum, nil
}
