package egress

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// maxRefusals is how many distinct refusals a Refusals keeps.
const maxRefusals = 20

// Refusals collects the refusals of a run's Proxy (its Add is a WithReport
// function), once per host, port and reason, at most 20, and says them as
// lines for a person (Lines). The zero value is ready; it is safe for
// concurrent use.
type Refusals struct {
	mu   sync.Mutex
	list []Refusal
}

// Add records r, unless one like it (host, port, reason) is kept already
// or 20 are.
func (rs *Refusals) Add(r Refusal) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.list) >= maxRefusals || slices.ContainsFunc(rs.list, func(o Refusal) bool {
		return o.Host == r.Host && o.Port == r.Port && o.Reason == r.Reason
	}) {
		return
	}
	rs.list = append(rs.list, r)
}

// Lines returns a line for each refusal kept, "network refused: …", with
// the settings' entry that would allow it where one would. A nil
// Refusals has none.
func (rs *Refusals) Lines() []string {
	if rs == nil {
		return nil
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out []string
	for _, r := range rs.list {
		line := "network refused: " + strings.TrimPrefix(r.String(), "egress: refused ")
		switch r.Reason {
		case ReasonNotAllowed:
			line += fmt.Sprintf(" (allow it with \"network\": {\"allow\": [%q]})", r.Host)
		case ReasonPort:
			line += fmt.Sprintf(" (allow it with \"network\": {\"allow\": [%q]})", net.JoinHostPort(r.Host, strconv.Itoa(int(r.Port))))
		}
		out = append(out, line)
	}
	return out
}
