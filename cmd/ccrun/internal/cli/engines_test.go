package cli_test

import (
	"github.com/ccrun/ccrun/cmd/ccrun/internal/cli"
	"github.com/ccrun/ccrun/cmd/ccrun/internal/full"
)

// The tests run the whole ccrun: its engines are package full's, which
// imports package cli, so only a test of package cli_test may import it.
func init() { cli.SetTestEngines(full.Engines()) }
