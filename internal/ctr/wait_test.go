package ctr

import (
	"sync"
	"testing"
	"time"
)

// TestWaitAtMost: work that ends is waited for; work that does not is
// given up on.
func TestWaitAtMost(t *testing.T) {
	var wg sync.WaitGroup
	if !WaitAtMost(&wg, time.Hour) {
		t.Error("no work: not waited for")
	}
	release := make(chan struct{})
	wg.Add(1)
	go func() { <-release; wg.Done() }()
	if WaitAtMost(&wg, time.Millisecond) {
		t.Error("work that goes on was waited for")
	}
	close(release)
	if !WaitAtMost(&wg, time.Hour) {
		t.Error("work that ended: not waited for")
	}
}
