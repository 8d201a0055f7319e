package capabilities

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ccrun/ccrun/ceiling"
)

// Limits of what Digest reads, so a hostile directory cannot stall a load.
const (
	MaxFiles     = 10000   // entries in a capability's directory
	MaxTreeBytes = 1 << 30 // 1 GiB of file contents in all
)

const digestHeader = "ccrun capability digest v1\x00"

// Digest returns the digest of the capability in dir as Load computes it,
// for a caller that has no *Capability at hand (e.g. to show what a grant
// was bound to). It does not check the manifest.
func Digest(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return "", fmt.Errorf("capability %s: %w", dir, err)
	}
	defer root.Close()
	data, err := readManifest(root, filepath.Join(abs, ManifestFile))
	if err != nil {
		return "", err
	}
	d, _, err := digest(root, abs, data, "")
	return d, err
}

// digest hashes the tree under root: for every entry, in order of its
// slash-separated relative path, a kind byte (d directory, f file, x
// executable file, l symbolic link), the path, and the contents or the
// link's text, each prefixed with its length, so no two trees share a
// digest input. capability.json is hashed from manifest, the very bytes
// that were checked, not read again. A link whose text leads outside the
// directory, and any entry that is not a directory, a regular file or a
// link (a FIFO, a socket, a device), is an error of class
// ErrInvalidManifest.
//
// When tee names a regular file, its contents are also hashed on their own
// and that SHA-256 is returned: what was read for the digest, byte for byte.
func digest(root *os.Root, dir string, manifest []byte, tee string) (string, []byte, error) {
	type entry struct {
		rel  string
		mode fs.FileMode
	}
	var ents []entry
	walkErr := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if len(ents) >= MaxFiles {
			return manifestErr(filepath.Join(dir, ManifestFile), "", fmt.Sprintf("the capability's directory holds more than %d entries", MaxFiles))
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		ents = append(ents, entry{rel: p, mode: fi.Mode()})
		return nil
	})
	if walkErr != nil {
		if _, ok := walkErr.(*ManifestError); ok {
			return "", nil, walkErr
		}
		return "", nil, fmt.Errorf("capability %s: digest: %w", dir, walkErr)
	}
	slices.SortFunc(ents, func(a, b entry) int { return strings.Compare(a.rel, b.rel) })

	h := sha256.New()
	io.WriteString(h, digestHeader)
	var teeSum hash.Hash
	var total int64
	for _, e := range ents {
		where := filepath.Join(dir, filepath.FromSlash(e.rel))
		switch {
		case e.mode.IsDir():
			writeRecord(h, 'd', e.rel)
		case e.mode&fs.ModeSymlink != 0:
			target, err := root.Readlink(e.rel)
			if err != nil {
				return "", nil, fmt.Errorf("capability %s: digest: %w", dir, err)
			}
			if !linkStaysInside(e.rel, target) {
				return "", nil, &ManifestError{File: where, Errors: []*FieldError{{File: where,
					Message: fmt.Sprintf("symbolic link to %s leads outside the capability's directory", show(target))}}}
			}
			writeRecord(h, 'l', e.rel)
			writeBytes(h, []byte(target))
		case e.mode.IsRegular():
			kind := byte('f')
			if e.mode&0o111 != 0 {
				kind = 'x'
			}
			writeRecord(h, kind, e.rel)
			if e.rel == ManifestFile {
				writeBytes(h, manifest)
				continue
			}
			var also io.Writer
			if e.rel == tee {
				teeSum = sha256.New()
				also = teeSum
			}
			n, err := hashFile(h, also, root, e.rel, MaxTreeBytes-total)
			if err != nil {
				return "", nil, fmt.Errorf("capability %s: digest %s: %w", dir, e.rel, err)
			}
			total += n
		default:
			return "", nil, &ManifestError{File: where, Errors: []*FieldError{{File: where,
				Message: fmt.Sprintf("a %s has no place in a capability's directory; want files, directories and links inside it", fileKind(e.mode))}}}
		}
	}
	var sum []byte
	if teeSum != nil {
		sum = teeSum.Sum(nil)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), sum, nil
}

// hashFile writes the length and contents of the regular file rel, which
// must not change size while it is read, to h, and the contents alone to
// also when it is not nil.
func hashFile(h io.Writer, also io.Writer, root *os.Root, rel string, room int64) (int64, error) {
	f, err := root.OpenFile(rel, openFlags, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("changed into a %s while digesting", fileKind(fi.Mode()))
	}
	size := fi.Size()
	if size > room {
		return 0, fmt.Errorf("the capability's files are larger than %s in all", FormatSize(MaxTreeBytes))
	}
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(size))
	h.Write(n[:])
	w := h
	if also != nil {
		w = io.MultiWriter(h, also)
	}
	got, err := io.Copy(w, io.LimitReader(f, size+1))
	if err != nil {
		return 0, err
	}
	if got != size {
		return 0, fmt.Errorf("changed size while digesting (%d bytes, then %d)", size, got)
	}
	return size, nil
}

func writeRecord(h hash.Hash, kind byte, rel string) {
	h.Write([]byte{kind})
	writeBytes(h, []byte(rel))
}

func writeBytes(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}

// linkStaysInside reports whether a link at rel (slash-separated, relative
// to the capability's directory) with text target resolves, lexically,
// inside that directory. Absolute targets never do.
func linkStaysInside(rel, target string) bool {
	if target == "" || strings.HasPrefix(target, "/") || filepath.IsAbs(target) || strings.ContainsRune(target, '\\') {
		return false
	}
	p := path.Join(path.Dir(rel), target)
	return p != "." && filepath.IsLocal(filepath.FromSlash(p))
}

// Verify digests c's directory again and returns an error of class
// ErrChanged when the digest is no longer c.Digest. Call it right before a
// run, after the gate: what runs must be what was approved.
func (c *Capability) Verify() error {
	root, err := os.OpenRoot(c.Dir)
	if err != nil {
		return fmt.Errorf("capability %s: %w", c.Manifest.Name, err)
	}
	defer root.Close()
	data, err := readManifest(root, filepath.Join(c.Dir, ManifestFile))
	if err != nil {
		return err
	}
	d, _, err := digest(root, c.Dir, data, "")
	if err != nil {
		return err
	}
	if d != c.Digest {
		return fmt.Errorf("capability %s: digest %s, loaded as %s: %w", c.Manifest.Name, d, c.Digest, ErrChanged)
	}
	return nil
}

// ReadModule returns the @wasm module's bytes, read through the capability's
// directory (never outside it), and guaranteed to be the very module of
// c.Digest: the module is read, the directory digested again with the
// module hashed on its own on the way, and both must agree with what was
// loaded, else the error is of class ErrChanged. This closes the window in
// which a file could be swapped between approval and run. The wasm
// executor should take the module from here.
func (c *Capability) ReadModule() ([]byte, error) {
	if c.Manifest.Environment != ceiling.Wasm {
		return nil, fmt.Errorf("capability %s: a %s capability has no module: %w", c.Manifest.Name, c.Manifest.Environment, ErrInvalidArgument)
	}
	root, err := os.OpenRoot(c.Dir)
	if err != nil {
		return nil, fmt.Errorf("capability %s: %w", c.Manifest.Name, err)
	}
	defer root.Close()
	rel, err := resolveInside(root, c.Manifest.Entry.Module)
	if err != nil {
		return nil, fmt.Errorf("capability %s: module: %w", c.Manifest.Name, err)
	}
	f, err := root.OpenFile(rel, openFlags, 0)
	if err != nil {
		return nil, fmt.Errorf("capability %s: module: %w", c.Manifest.Name, err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("capability %s: module %s is not a regular file: %w", c.Manifest.Name, show(rel), ErrChanged)
	}
	module, err := io.ReadAll(io.LimitReader(f, MaxTreeBytes+1))
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("capability %s: module: %w", c.Manifest.Name, err)
	}
	data, err := readManifest(root, filepath.Join(c.Dir, ManifestFile))
	if err != nil {
		return nil, err
	}
	d, sum, err := digest(root, c.Dir, data, rel)
	if err != nil {
		return nil, err
	}
	got := sha256.Sum256(module)
	if d != c.Digest || sum == nil || !bytes.Equal(got[:], sum) {
		return nil, fmt.Errorf("capability %s: module %s: %w", c.Manifest.Name, show(c.Manifest.Entry.Module), ErrChanged)
	}
	return module, nil
}

// resolveInside follows symbolic links from rel, each of which must stay
// inside the directory, to the path of a file that is not a link.
func resolveInside(root *os.Root, rel string) (string, error) {
	p, why := localPath(rel)
	if why != "" {
		return "", fmt.Errorf("%s: %s", show(rel), why)
	}
	for hops := 0; hops < 40; hops++ {
		// Resolve links in the directories on the way, one by one.
		parts := strings.Split(p, "/")
		resolved := ""
		link := false
		for i, part := range parts {
			cur := path.Join(resolved, part)
			fi, err := root.Lstat(cur)
			if err != nil {
				return "", err
			}
			if fi.Mode()&fs.ModeSymlink == 0 {
				resolved = cur
				continue
			}
			target, err := root.Readlink(cur)
			if err != nil {
				return "", err
			}
			if !linkStaysInside(cur, target) {
				return "", fmt.Errorf("%s: symbolic link to %s leads outside the capability's directory", show(cur), show(target))
			}
			p = path.Join(append([]string{path.Dir(cur), target}, parts[i+1:]...)...)
			link = true
			break
		}
		if !link {
			return resolved, nil
		}
	}
	return "", fmt.Errorf("%s: too many symbolic links", show(rel))
}
