package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ccrun/ccrun/internal/jsonpos"
	"github.com/ccrun/ccrun/runtime/job"
)

// maxInput is the largest --input ccrun reads: the library's limit on a
// call's input (64 MiB).
const maxInput = 64 << 20

// readInput reads --input: a JSON object given inline, @FILE (read from
// FILE, relative to the current directory) or - (read from stdin).
func readInput(arg string, stdin io.Reader) (_ json.RawMessage, file string, err error) {
	var data []byte
	switch {
	case arg == "-":
		if stdin == nil {
			return nil, "", usagef("--input -: no stdin")
		}
		b, err := io.ReadAll(io.LimitReader(stdin, maxInput+1))
		if err != nil {
			return nil, "", usagef("--input -: reading stdin: %w", err)
		}
		data = b
	case strings.HasPrefix(arg, "@"):
		name := arg[1:]
		f, err := os.Open(name)
		if err != nil {
			return nil, "", usagef("--input @FILE: %w", err)
		}
		defer f.Close()
		// the file as opened (links and .. resolved by the open itself):
		// the gate checks it as a path the call reads
		file = openedPath(f)
		b, err := io.ReadAll(io.LimitReader(f, maxInput+1))
		if err != nil {
			return nil, "", usagef("--input %s: %w", arg, err)
		}
		data = b
	default:
		data = []byte(arg)
	}
	if len(data) > maxInput {
		return nil, "", usagef("--input: more than %d bytes (64 MiB), the most a call's input may be", maxInput)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&v); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, "", usagef("--input: not JSON at %s: %v", jsonpos.Position(data, int(se.Offset)-1), se)
		case errors.Is(err, io.EOF):
			return nil, "", usagef("--input: want a JSON object such as {\"x\": 1}, got nothing")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, "", usagef("--input: the JSON ends too early (at %s): want a whole object such as {\"x\": 1}", jsonpos.Position(data, len(data)))
		}
		return nil, "", usagef("--input: want a JSON object: %v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, "", usagef("--input: want a JSON object such as {\"x\": 1} (the capability's parameters by name), got %s", jsonKind(v))
	}
	if dec.More() {
		return nil, "", usagef("--input: want one JSON object, got more after it")
	}
	return json.RawMessage(bytes.TrimSpace(data)), file, nil
}

// absFromHere makes a path the person typed absolute against the current
// directory, where they stand (not the project root).
func absFromHere(path string) (string, error) {
	if path == "" || filepath.IsAbs(path) {
		return path, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", usagef("%s: %w", path, err)
	}
	return abs, nil
}

// absMount makes a mount's host path absolute against the current directory.
func absMount(m job.Mount) (job.Mount, error) {
	h, err := absFromHere(m.Host)
	m.Host = h
	return m, err
}

// jsonKind names the kind of a decoded JSON value, for an error.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "an object"
}

// openedPath is the absolute path of the file f is, as the kernel has it
// (/proc/self/fd), else its name made absolute.
func openedPath(f *os.File) string {
	if real, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd())); err == nil && filepath.IsAbs(real) {
		return real
	}
	abs, _ := filepath.Abs(f.Name())
	return abs
}
