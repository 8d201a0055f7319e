package ccrun

import (
	"slices"
	"sync"
	"time"

	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/runtime/job"
)

// State is where a call is in the pipeline (README.md, "The gate"):
//
//	validating → awaiting_approval? → scheduled → executing → success | error | cancelled
//
// A call the gate denies goes from validating (or awaiting_approval) to error.
type State string

// The states of a call. Each Go name is its value's.
const (
	Validating       State = "validating"
	AwaitingApproval State = "awaiting_approval"
	Scheduled        State = "scheduled"
	Executing        State = "executing"
	Success          State = "success"
	Error            State = "error" // denied, failed, or did not exit 0 by itself
	Cancelled        State = "cancelled"
)

// Final reports whether s ends a call.
func (s State) Final() bool { return s == Success || s == Error || s == Cancelled }

// Event is one transition of one call.
type Event struct {
	Call    string        `json:"call"`          // the call's id, unique within the Runtime
	Tool    string        `json:"tool"`          // the tool called: run_command, write_file, a capability's name…
	Key     string        `json:"key,omitempty"` // the key a grant of the call covers (tool:action[:detail])
	State   State         `json:"state"`         // the state the call entered
	Time    time.Time     `json:"time"`          // when it entered it
	Elapsed time.Duration `json:"elapsed_ns"`    // since the call entered validating
	// Decision is set from awaiting_approval or scheduled on, and on a deny.
	Decision *permission.Decision `json:"decision,omitempty"`
	// Result is set on success, and on error or cancelled when the tool ran.
	Result *job.Result `json:"result,omitempty"`
	// Err is set on error.
	Err string `json:"error,omitempty"`
}

// bus delivers events to subscribers, synchronously and in the order they
// subscribed. A subscriber may cancel itself, or subscribe another, from
// inside its callback: publish calls the subscribers without holding the
// lock, on the list as it was when the event was published (the list is
// copied on write, never changed in place).
type bus struct {
	mu   sync.Mutex
	next int
	subs []subscriber
}

type subscriber struct {
	id int
	f  func(Event)
}

func (b *bus) subscribe(f func(Event)) (cancel func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.next
	b.next++
	b.subs = append(slices.Clip(b.subs), subscriber{id, f})
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.subs = slices.DeleteFunc(slices.Clone(b.subs), func(s subscriber) bool { return s.id == id })
	}
}

func (b *bus) publish(e Event) {
	b.mu.Lock()
	subs := b.subs
	b.mu.Unlock()
	for _, s := range subs {
		s.f(e)
	}
}
