package ccrun

import (
	"fmt"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/internal/audit"
)

// RecordCapabilityWritten appends a "capability" line to the audit log: a
// capability c was written into the project by via (e.g. the MCP tool
// capability_create), replacing one of that name when replaced. Writing a
// capability grants nothing — its first run is asked — but what an agent
// wrote into the project is part of what a person reviews afterwards.
func (r *Runtime) RecordCapabilityWritten(c *capabilities.Capability, via string, replaced bool) error {
	outcome := "created"
	if replaced {
		outcome = "replaced"
	}
	return r.audit.Write(audit.Record{Kind: "capability", Tool: c.Manifest.Name, Key: c.Key().String(),
		Environment: string(c.Manifest.Environment), Outcome: outcome, Reason: "written through " + via,
		Display: fmt.Sprintf("%s %s (digest %s)", outcome, r.rel(c.Dir), c.Digest)})
}
