package docker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// callerUser is the user a Spec that names none runs as, for a caller of
// effective uid and gid: the caller itself, so that what it mounts
// writable it writes as the directory's owner (as `docker run -u
// "$(id -u):$(id -g)"` has it); DefaultUser (65534:65534) for root, never
// root.
func callerUser(uid, gid int) string {
	if uid == 0 {
		return DefaultUser
	}
	return strconv.Itoa(uid) + ":" + strconv.Itoa(gid)
}

// WithDefaultUser sets the uid and gid a Spec that names no User runs as.
// Default: this process's effective uid and gid when it is not root, so
// that a writable mount of the caller's own directory can be written, and
// what the program makes there is the caller's; 65534:65534 (DefaultUser)
// when it is root, and then a writable mount must be writable by uid
// 65534. Either way the container keeps its hardening (no capabilities,
// no-new-privileges, read-only root). Root (uid 0) is refused here: a run
// as root names it in its Spec.User, which Spec.Loosens lists.
func WithDefaultUser(uid, gid int) Option {
	return func(e *Executor) error {
		if uid <= 0 || gid < 0 {
			return newError(ErrInvalidArgument, nil, "docker: default user %d:%d: want a uid above 0 (root is never a default) and a gid of 0 or more", uid, gid)
		}
		e.user = strconv.Itoa(uid) + ":" + strconv.Itoa(gid)
		return nil
	}
}

// numericUser parses "uid[:gid]"; ok false for a name.
func numericUser(u string) (uid, gid int, ok bool) {
	us, gs, hasG := strings.Cut(u, ":")
	uid, err := strconv.Atoi(us)
	if err != nil || uid < 0 {
		return 0, 0, false
	}
	gid = uid
	if hasG {
		if gid, err = strconv.Atoi(gs); err != nil || gid < 0 {
			return 0, 0, false
		}
	}
	return uid, gid, true
}

// unwritable says, for the Result's Detail, which of s's writable mounts
// the container's user (s.User, resolved; asRoot: the default of a caller
// that is root) may not write at its top: by the
// owner, group and mode of the host directory, as the kernel checks them
// for a process of that uid and gid alone (a container has no
// supplementary groups but the image's). A directory with an access
// control list is not judged (its mode does not say). "" when every one
// may be written, or the user is a name the image knows.
func unwritable(s Spec, asRoot bool) string {
	u := s.user()
	uid, gid, ok := numericUser(u)
	if !ok || uid == 0 {
		return ""
	}
	var notes []string
	for _, m := range s.Mounts {
		if !m.Writable {
			continue
		}
		src := m.Host
		if real, err := filepath.EvalSymlinks(m.Host); err == nil {
			src = real
		}
		fi, err := os.Stat(src)
		if err != nil || !fi.IsDir() {
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || hasACL(src) {
			continue
		}
		perm := uint32(fi.Mode().Perm())
		var bits uint32
		switch {
		case int(st.Uid) == uid:
			bits = perm >> 6
		case int(st.Gid) == gid:
			bits = perm >> 3
		default:
			bits = perm
		}
		if bits&0o3 == 0o3 { // write and search
			continue
		}
		why := fmt.Sprintf("mount %s at %s is not writable by the container's user %s (the directory is %d:%d, mode %04o)",
			m.Host, m.Guest, u, st.Uid, st.Gid, perm)
		if asRoot {
			why += ": ccrun runs as root, so @docker runs as uid 65534; make the directory writable by uid 65534, or run ccrun as its owner"
		}
		notes = append(notes, why)
	}
	return strings.Join(notes, "; ")
}

// hasACL reports whether dir has an access control list beyond its mode
// (or whether that cannot be told: then its mode is not the whole story
// either).
func hasACL(dir string) bool {
	_, err := unix.Getxattr(dir, "system.posix_acl_access", nil)
	return err == nil || !(errors.Is(err, unix.ENODATA) || errors.Is(err, unix.ENOTSUP))
}
