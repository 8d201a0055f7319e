// Package early runs handoff.Run from its init: imported by the front of
// ccrun alone (cmd/ccrun/front), for that side effect.
package early

import (
	"os"

	"github.com/ccrun/ccrun/cmd/ccrun/internal/handoff"
)

func init() { handoff.Run(os.Args[1:]) }
