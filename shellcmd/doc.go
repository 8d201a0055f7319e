// Package shellcmd is ccrun's static analysis of shell commands: the one
// guarded parser (Parse), the model of the commands a text runs
// (Segments, looking through wrappers and nested shell text), read-only
// classification (ReadOnly), destructive-form warnings (Warnings) and the
// dangerous-path scan (Dangerous), and the table of environment
// variables that change what programs run (RunsPrograms).
//
// It knows nothing of keys, rules or the gate: package permission builds
// those on it. A static classifier over shell text can never be complete;
// every answer here is enforced again where the command runs (the
// interpreter's handlers, Landlock). Everything in it is safe for
// concurrent use.
package shellcmd
