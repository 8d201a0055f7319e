// Package ctr holds what the two container engines of ccrun's @docker
// environment (runtime/docker on the Docker Engine, runtime/kube on
// Kubernetes) share, so that neither imports the other: the Spec both take
// (each engine's Spec is this type, with its own methods) and its
// PullPolicy, the classed Error they return, the cleanup stack of a
// half-built sandbox, the owner of what they create (a process named by
// its pid and start time), the static helper program Holder, and the
// Cluster the Kubernetes engine reports (for the CLI too, whose front
// links no engine).
package ctr

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// ProcStart is the start time of process pid in clock ticks since boot
// (field 22 of /proc/PID/stat), or "" when it is not running or /proc
// cannot tell. With the pid it names a process: a reused pid has another.
func ProcStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command (field 2) is in parentheses and may hold spaces: count
	// the fields after its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 { // field 3 is f[0], field 22 is f[19]
		return ""
	}
	return f[19]
}

// Alive reports whether the process pid, started at start (ProcStart; ""
// when unknown), still runs on this host.
func Alive(pid int, start string) bool {
	if pid <= 0 {
		return false
	}
	now := ProcStart(pid)
	return now != "" && (start == "" || now == start)
}

// Owner names a process by its pid and its start time (ProcStart), so that
// a reused pid does not pass for the owner.
type Owner struct {
	PID   int
	Start string
}

// Self is this process.
func Self() Owner {
	pid := os.Getpid()
	return Owner{PID: pid, Start: ProcStart(pid)}
}

// Alive reports whether o still runs on this host.
func (o Owner) Alive() bool { return Alive(o.PID, o.Start) }
