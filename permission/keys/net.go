package keys

import "strconv"

// NetTool is the tool of a connection's key: net:HOST:PORT, what the
// egress proxy of an approved @shell command asks under when the command
// connects to a host no "network" list allows (a rule or a grant of
// net:registry.npmjs.org covers every port of it; net:*.golang.org every
// name under golang.org).
const NetTool = "net"

// NetKey is the key of a connection to host (normalized: lowercase, no
// trailing dot; an IP literal in its canonical form) on port.
func NetKey(host string, port uint16) Key {
	return Key{Tool: NetTool, Action: host, Detail: strconv.Itoa(int(port))}
}
