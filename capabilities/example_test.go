package capabilities_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
)

// Every problem of a manifest is reported at once, each naming the file,
// the line and column, and the field.
func ExampleParse() {
	manifest := `{
  "name": "fmt-json",
  "description": "Pretty-print JSON",
  "environment": "@wasm",
  "entry": {"module": "../fmt-json.wasm"},
  "limits": {"memory": "64XB", "timout": "30s"}
}`
	_, err := capabilities.Parse("capability.json", []byte(manifest))
	fmt.Println(errors.Is(err, capabilities.ErrInvalidManifest))
	fmt.Println(err)
	// Output:
	// true
	// capability.json:5:13: /entry/module: ../fmt-json.wasm: ".." in path; want a path that stays inside its base (the capability's directory)
	// capability.json:6:14: /limits/memory: size "64XB": want a number of bytes with an optional unit (k, KiB, M, MiB, G, GiB, T), e.g. 64MiB
	// capability.json:6:32: /limits/timout: unknown field "timout" (did you mean "timeout"?)
}

// A new capability loads as written; its key is what a grant names, and its
// digest is what a project grant is bound to.
func ExampleScaffold() {
	project, _ := os.MkdirTemp("", "ccrun-example")
	defer os.RemoveAll(project)

	dir, err := capabilities.Scaffold(project, "hello", ceiling.Wasm)
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := capabilities.Find(project, "hello")
	if err != nil {
		fmt.Println(err)
		return
	}
	rel, _ := filepath.Rel(project, dir)
	fmt.Println(rel)
	fmt.Println(c.Key(), c.Manifest.Environment, c.Manifest.Entry.Module)
	fmt.Println(c.Digest[:7])
	// Output:
	// .ccrun/capabilities/hello
	// capability:hello @wasm hello.wasm
	// sha256:
}

func ExampleParseSize() {
	for _, s := range []string{"64MiB", "1GiB", "512k", "1.5g", "64XB"} {
		n, err := capabilities.ParseSize(s)
		fmt.Println(s, n, err != nil)
	}
	// Output:
	// 64MiB 67108864 false
	// 1GiB 1073741824 false
	// 512k 524288 false
	// 1.5g 1610612736 false
	// 64XB 0 true
}
