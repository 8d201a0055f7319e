package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"runtime"

	"github.com/ccrun/ccrun/internal/container"
	"github.com/ccrun/ccrun/internal/once"
)

// The helper programs every ccrun pod gets, read-only, from a ConfigMap
// (helpersVolume at helpersDir): no host path, no image of ccrun's, no
// program of the call's image. Each is a static x86-64 ELF executable of a
// few dozen bytes (once, the run container's program, a few hundred),
// built here from its machine code.
const (
	helpersDir = "/.ccrun"
	// holdPath is container.Holder, which blocks in pause(2) for ever:
	// the program of the copy container of a pod whose mounts are copied,
	// into which tar is exec'd. (The run container's program is once:
	// internal/once.)
	holdPath = helpersDir + "/hold"
	// oncePath is internal/once's program: the program of every pod's run
	// container (cold or warm), which serves exactly one call.
	oncePath = helpersDir + "/once"
)

// helpers returns the helper files by name, or nil where there are none
// (only amd64 is built and tested).
func helpers() map[string][]byte {
	if runtime.GOARCH != "amd64" {
		return nil
	}
	return map[string][]byte{"hold": container.Holder(runtime.GOARCH), "once": once.ELF(runtime.GOARCH)}
}

// helpersName is the name of the ConfigMap holding the helpers: it names
// their content, so a ConfigMap of that name that holds anything else is
// refused, and a new ccrun never meets an old helper.
func helpersName() string {
	h := sha256.New()
	for _, name := range []string{"hold", "once"} {
		h.Write([]byte(name))
		h.Write(helpers()[name])
	}
	return "ccrun-helpers-" + hex.EncodeToString(h.Sum(nil)[:6])
}
