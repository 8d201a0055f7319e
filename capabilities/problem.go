package capabilities

// A problem is one value of a document that its schema refuses, as the
// schema validator (internal/inputschema) says it.
type problem struct {
	ptr     string // JSON pointer of the value (for a missing member, the member's)
	keyword string // the keyword that refused it ("required", "false", "pattern"…)
	msg     string
	got     string // "pattern", "minLength": the string
}
