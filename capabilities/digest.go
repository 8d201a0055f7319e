package capabilities

import (
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
	return digest(root, abs, data)
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
func digest(root *os.Root, dir string, manifest []byte) (string, error) {
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
			return "", walkErr
		}
		return "", fmt.Errorf("capability %s: digest: %w", dir, walkErr)
	}
	slices.SortFunc(ents, func(a, b entry) int { return strings.Compare(a.rel, b.rel) })

	h := sha256.New()
	io.WriteString(h, digestHeader)
	var total int64
	for _, e := range ents {
		where := filepath.Join(dir, filepath.FromSlash(e.rel))
		switch {
		case e.mode.IsDir():
			writeRecord(h, 'd', e.rel)
		case e.mode&fs.ModeSymlink != 0:
			target, err := root.Readlink(e.rel)
			if err != nil {
				return "", fmt.Errorf("capability %s: digest: %w", dir, err)
			}
			if !linkStaysInside(e.rel, target) {
				return "", &ManifestError{File: where, Errors: []*FieldError{{File: where,
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
			n, err := hashFile(h, root, e.rel, MaxTreeBytes-total)
			if err != nil {
				return "", fmt.Errorf("capability %s: digest %s: %w", dir, e.rel, err)
			}
			total += n
		default:
			return "", &ManifestError{File: where, Errors: []*FieldError{{File: where,
				Message: fmt.Sprintf("a %s has no place in a capability's directory; want files, directories and links inside it", fileKind(e.mode))}}}
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// hashFile writes the length and contents of the regular file rel, which
// must not change size while it is read.
func hashFile(h hash.Hash, root *os.Root, rel string, room int64) (int64, error) {
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
	got, err := io.Copy(h, io.LimitReader(f, size+1))
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
