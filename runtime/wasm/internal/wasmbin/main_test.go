package wasmbin_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/ccrun/ccrun/runtime/wasm/internal/wasmtest"
)

// guests are the Go guests of testdata/wasm (hello, escape, probe), built
// by TestMain: the Go linker's layout is what Pack is for.
var guests map[string][]byte

func TestMain(m *testing.M) {
	var err error
	if guests, err = wasmtest.BuildGuests("hello", "escape", "probe"); err != nil {
		fmt.Fprintln(os.Stderr, "build guests:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
