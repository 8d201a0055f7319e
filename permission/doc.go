// Package permission decides whether a tool call may run: the requests,
// the settings layers and the policy, and the gate that runs the lookup
// chain (Gate lists its steps; the README's "The gate" says it for users)
// over the session and project allowlists. Keys and the patterns grants
// and rules are written as live in package keys, the allowlists in package
// allowlist, the ceiling in package ceiling and shell analysis in package
// shellcmd; this package names them from there and repeats none of them.
package permission
