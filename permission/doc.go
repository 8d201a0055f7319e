// Package permission decides whether a tool call may run: the keys calls are
// asked under, the patterns grants and rules are written as, the session
// and project allowlists, the policy in front of them, and the gate that
// runs the lookup chain of ../DESIGN.md ("The gate").
package permission
