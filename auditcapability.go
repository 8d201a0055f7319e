package ccrun

import (
	"fmt"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/internal/audit"
	"github.com/ccrun/ccrun/internal/runtimehook"
)

func init() {
	runtimehook.CapabilityWritten = func(rt any, c *capabilities.Capability, via string, replaced bool) error {
		return rt.(*Runtime).recordCapabilityWritten(c, via, replaced)
	}
}

// recordCapabilityWritten is runtimehook.CapabilityWritten: the MCP
// server's record of a capability an agent wrote, in the project's audit
// log (a sub-agent's too: the log is the project's).
func (r *Runtime) recordCapabilityWritten(c *capabilities.Capability, via string, replaced bool) error {
	outcome := "created"
	if replaced {
		outcome = "replaced"
	}
	return r.audit.Write(audit.Record{Kind: "capability", Tool: c.Manifest.Name, Key: c.Key().String(),
		Environment: string(c.Manifest.Environment), Outcome: outcome, Reason: "written through " + via,
		Display: fmt.Sprintf("%s %s (digest %s)", outcome, r.rel(c.Dir), c.Digest)})
}
