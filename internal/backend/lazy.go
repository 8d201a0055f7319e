package backend

import "sync"

// Lazy holds what a backend starts on first use (a wazero runtime, an
// engine's client): a failed start is tried again by the next Get, and
// Close closes what started, once. It is safe for concurrent use.
type Lazy[T any] struct {
	mu      sync.Mutex
	v       T
	started bool
}

// Get returns the value, starting it with start when none is held.
func (l *Lazy[T]) Get(start func() (T, error)) (T, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started {
		return l.v, nil
	}
	v, err := start()
	if err != nil {
		var zero T
		return zero, err
	}
	l.v, l.started = v, true
	return v, nil
}

// Close closes the value with close, when one started, and forgets it.
func (l *Lazy[T]) Close(close func(T) error) error {
	l.mu.Lock()
	v, started := l.v, l.started
	var zero T
	l.v, l.started = zero, false
	l.mu.Unlock()
	if !started {
		return nil
	}
	return close(v)
}
