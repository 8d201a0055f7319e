package confine

import _ "embed"

// helperBin is ccrun-confine for this architecture, built from
// helper/helper.c by `make confine-helper` (TestHelperBuiltFromSource).
//
//go:embed helper_amd64.bin
var helperBin []byte
