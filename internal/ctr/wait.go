package ctr

import (
	"sync"
	"time"
)

// WaitAtMost waits for wg (an Executor's background work: refills,
// removals of used containers or pods), at most d, and reports whether it
// ended within it. What it gives up on goes on: the caller cancels it.
func WaitAtMost(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
