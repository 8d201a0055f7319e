package allowlist

import "github.com/containerd/errdefs"

// NotTrusted is the reason given, in a Decision's diagnostics, by `ccrun
// check` and in the prompt, while a project's files loosen something the
// person has not trusted.
const NotTrusted = "this project is not trusted: run `ccrun trust` to review what it allows"

// ErrNotTrusted is the class of the error of a project allowlist change
// made while the project is not trusted: the file is written, but the
// change counts only once the person trusts the project. Such an error is
// also of class errdefs.ErrPermissionDenied.
var ErrNotTrusted = errdefs.ErrPermissionDenied.WithMessage("project not trusted")

// Trust is where the person's trust in a project is kept. ccrun keeps it
// in the user's state directory (ccrun.New wires it); an implementation
// must be safe for concurrent use.
type Trust interface {
	// Trusted reports whether the project's loosening of this digest was
	// trusted by the person. An empty loosening is always trusted.
	Trusted(digest string) bool
	// Rebind records next as trusted when prev is: ccrun wrote the change
	// from prev to next itself (a grant the person gave), so the trust
	// follows it. It is called under the project file's lock.
	Rebind(prev, next string) error
}

// DigestFunc returns the digest of what a project's files loosen
// (permission.Loosening) with ccrun.json's text as given (nil: no such
// file): what a Trust judges. The permission package makes it, from the
// settings layers this package does not read.
type DigestFunc func(projectJSON []byte) (string, error)
