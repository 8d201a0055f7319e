// Package deps pins the project's dependencies while the packages that use
// them are being written. It is removed once every dependency has a user.
package deps

import (
	_ "github.com/containerd/errdefs"
	_ "github.com/creack/pty"
	_ "github.com/docker/docker/client"
	_ "github.com/gofrs/flock"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/rogpeppe/go-internal/testscript"
	_ "github.com/spf13/cobra"
	_ "github.com/tetratelabs/wazero"
	_ "golang.org/x/term"
	_ "mvdan.cc/sh/v3/interp"
	_ "mvdan.cc/sh/v3/syntax"
)
