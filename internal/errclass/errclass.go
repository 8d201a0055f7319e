// Package errclass holds the error class ccrun's packages share that
// containerd's errdefs has no value for, so that the packages below the
// root (permission, permission/allowlist, capabilities) and the root
// itself mean one value by it. Its one public name is the root's,
// ccrun.ErrInvalidConfig; the other classes are errdefs' values, which
// the root names (ccrun.ErrPermissionDenied, ccrun.ErrInvalidArgument…).
package errclass

import "github.com/containerd/errdefs"

// InvalidConfig is ccrun.ErrInvalidConfig: a settings file, the project
// allowlist, a session file or a capability manifest is malformed or
// holds what cannot be kept (a grant past the ceiling, a key of no known
// form). It is of errdefs' class ErrFailedPrecondition.
var InvalidConfig = errdefs.ErrFailedPrecondition.WithMessage("invalid configuration")
