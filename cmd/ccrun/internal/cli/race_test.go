package cli

import "runtime/debug"

// raceEnabled: the tests run under the race detector (go test -race), so
// the ccrun binary they drive is built with it too. The build's own
// settings say so: no build tag is needed to tell.
var raceEnabled = func() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}()
