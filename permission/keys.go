package permission

import "github.com/ccrun/ccrun/permission/keys"

// The keys and patterns are package keys's, repeated here so that most
// callers need only this package. See keys.Key and keys.Pattern.
type (
	// Key names what a call asks permission for: tool:action[:detail].
	Key = keys.Key
	// Pattern is what a grant or rule is written as: a key, possibly with
	// wildcards.
	Pattern = keys.Pattern
)

// ErrInvalidKey is the class of every error from ParseKey and ParsePattern.
var ErrInvalidKey = keys.ErrInvalidKey

// ParseKey reads a key as Key.String writes it (keys.ParseKey).
func ParseKey(s string) (Key, error) { return keys.ParseKey(s) }

// MustParseKey is ParseKey for keys written in code; it panics on error.
func MustParseKey(s string) Key { return keys.MustParseKey(s) }

// ParsePattern reads a pattern (keys.ParsePattern).
func ParsePattern(s string) (Pattern, error) { return keys.ParsePattern(s) }

// MustParsePattern is ParsePattern for patterns written in code.
func MustParsePattern(s string) Pattern { return keys.MustParsePattern(s) }

// PatternOf returns the pattern that matches k exactly (keys.PatternOf).
func PatternOf(k Key) Pattern { return keys.PatternOf(k) }

// CheckPattern reports an exact run_command pattern that no parsed command
// is keyed as (keys.CheckPattern).
func CheckPattern(p Pattern) error { return keys.CheckPattern(p) }
