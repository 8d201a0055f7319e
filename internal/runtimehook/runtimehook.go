// Package runtimehook gives ccrun's own front ends (the MCP server, the
// CLI) what they need of a Runtime and a library user does not, so that
// it stays off the root's surface. The root fills the hooks in when it
// is initialised. This package cannot name the root's types (the root
// imports it), so a Runtime is passed as an any: it must be a
// *ccrun.Runtime, and anything else panics.
package runtimehook

import "github.com/ccrun/ccrun/capabilities"

// CapabilityWritten appends a "capability" line to rt's audit log: c was
// written into the project by via (the MCP tool capability_create),
// replacing one of that name when replaced. Writing a capability grants
// nothing — its first run is asked — but what an agent wrote into the
// project is part of what a person reviews afterwards.
var CapabilityWritten func(rt any, c *capabilities.Capability, via string, replaced bool) error
