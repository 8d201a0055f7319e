//go:build race

package main

// raceEnabled: the tests run under the race detector, so the ccrun binary
// they drive is built with it too.
const raceEnabled = true
