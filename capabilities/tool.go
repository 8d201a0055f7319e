package capabilities

import (
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
)

// Class is what kind of effect a call of c has, as the gate's mode reads
// it: a capability runs code, so ClassExec, or ClassNetwork when it may
// reach the network. (The tool an agent is offered for it is the root's
// Tool, built from the manifest and this class.)
func (c *Capability) Class() permission.Class {
	if c.Manifest.NetworkOrDefault() != NetworkNone {
		return permission.ClassNetwork
	}
	return permission.ClassExec
}

// Key returns the capability's permission key, capability:<name>. The
// digest is not part of it: the gate binds a grant to Digest separately
// (permission.Request.Digest).
func (c *Capability) Key() keys.Key {
	return keys.Key{Tool: keys.CapabilityTool, Action: c.Manifest.Name}
}
