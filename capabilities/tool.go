package capabilities

import (
	"encoding/json"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
)

// Tool is what an agent is offered: a tool's name, what it does, the JSON
// Schema of its input, where it runs and what kind of effect it has. It is
// plain data; the root package wires it to an executor and the gate.
type Tool struct {
	Name        string
	Description string
	Environment ceiling.Environment
	Parameters  json.RawMessage // never empty: {"type":"object"} by default
	Class       permission.Class
}

// Tool returns c as a tool. A capability runs code, so its class is
// ClassExec, or ClassNetwork when it may reach the network.
func (c *Capability) Tool() Tool {
	class := permission.ClassExec
	if c.Manifest.NetworkOrDefault() != NetworkNone {
		class = permission.ClassNetwork
	}
	return Tool{
		Name:        c.Manifest.Name,
		Description: c.Manifest.Description,
		Environment: c.Manifest.Environment,
		Parameters:  append(json.RawMessage(nil), c.Manifest.ParametersOrDefault()...),
		Class:       class,
	}
}

// Key returns the capability's permission key, capability:<name>. The
// digest is not part of it: the gate binds a grant to Digest separately
// (permission.Request.Digest).
func (c *Capability) Key() keys.Key {
	return keys.Key{Tool: keys.CapabilityTool, Action: c.Manifest.Name}
}
