// Package permission decides whether a tool call may run: the keys calls are
// asked under and the patterns grants and rules are written as (package
// keys), the requests, the settings layers and the policy, and the gate
// that runs the lookup chain of ../DESIGN.md ("The gate") over the session
// and project allowlists (package allowlist). The names of keys and
// allowlist are repeated here, so that most callers need only this
// package.
package permission
