// Package allowlist keeps the grants a person made: the project allowlist
// (the "allowlist" object of ccrun.json, AlwaysThisProject grants, with
// the ceiling checked inside Add and the project's trust carried along)
// and the session allowlists (AlwaysThisSession grants, in memory or in
// private files that the ccrun processes of one agent share), with their
// files, locking and pruning.
//
// The gate (package permission) looks grants up here; this package knows
// keys and patterns (permission/keys) and the ceiling, and nothing of the
// policy. Package permission repeats its names, so that most callers need
// only that package. Every type here is safe for concurrent use.
package allowlist
