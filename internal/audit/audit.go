// Package audit appends one JSON line per gate decision and per execution to
// a project's .ccrun/audit.jsonl.
//
// Each record is written with a single write(2) on a file opened O_APPEND, so
// lines from concurrent processes do not interleave. A *Log is safe for
// concurrent use.
package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Record is one line of the audit log. Fields that do not apply are left out.
type Record struct {
	Time        time.Time `json:"time"`
	Kind        string    `json:"kind"` // "decision" or "execution"
	Call        string    `json:"call,omitempty"`
	Tool        string    `json:"tool"`
	Key         string    `json:"key,omitempty"`
	Environment string    `json:"environment,omitempty"`
	Decision    string    `json:"decision,omitempty"` // allow, ask, deny
	Layer       string    `json:"layer,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	Grant       string    `json:"grant,omitempty"`
	Diagnostics []string  `json:"diagnostics,omitempty"`
	// For executions.
	Outcome    string `json:"outcome,omitempty"` // success, error, cancelled
	EndReason  string `json:"end_reason,omitempty"`
	ExitCode   *int   `json:"exit_code,omitempty"`
	DurationMS *int64 `json:"duration_ms,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Log appends records to one file.
type Log struct {
	mu   sync.Mutex
	path string
	f    *os.File
}

// Open opens (creating it and its directory, mode 0600/0700) the log at path.
// The file is opened lazily on the first Write, so a run that decides
// nothing leaves no trace on disk.
func Open(path string) *Log { return &Log{path: path} }

// Path is the log's file.
func (l *Log) Path() string { return l.path }

// Write appends r as one line. A nil *Log discards r.
func (l *Log) Write(r Record) error {
	if l == nil {
		return nil
	}
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("audit %s: %w", l.path, err)
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		l.f = f
	}
	if _, err := l.f.Write(line); err != nil {
		return fmt.Errorf("audit %s: %w", l.path, err)
	}
	return nil
}

// Close closes the file, if it was opened.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
