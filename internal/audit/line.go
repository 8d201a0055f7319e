package audit

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// line is r as encoding/json marshals it, byte for byte (TestLine holds
// it to json.Marshal), without reflection: the first json.Marshal of a
// Record costs a new ccrun process 0.1-0.3 ms, and most runs write two
// records and nothing else in JSON. A Time whose year json.Marshal
// refuses (before 0, after 9999) is written as the year 0 or 9999, which
// a reader still parses, rather than losing the record.
func (r *Record) line() []byte {
	b := make([]byte, 0, 256)
	t := r.Time
	if y := t.Year(); y < 0 || y > 9999 {
		t = t.AddDate(max(0, min(9999, y))-y, 0, 0)
	}
	b = append(b, `{"time":"`...)
	b = t.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","kind":`...)
	b = appendString(b, r.Kind)
	b = field(b, "call", r.Call)
	b = append(b, `,"tool":`...)
	b = appendString(b, r.Tool)
	b = field(b, "key", r.Key)
	b = field(b, "environment", r.Environment)
	b = field(b, "decision", r.Decision)
	b = field(b, "layer", r.Layer)
	b = field(b, "reason", r.Reason)
	b = field(b, "grant", r.Grant)
	if r.Unconfined {
		b = append(b, `,"unconfined":true`...)
	}
	b = list(b, "diagnostics", r.Diagnostics)
	b = field(b, "display", r.Display)
	b = list(b, "args", r.Args)
	b = list(b, "env", r.Env)
	b = field(b, "dir", r.Dir)
	b = field(b, "stdin", r.Stdin)
	b = list(b, "loosens", r.Loosens)
	b = field(b, "outcome", r.Outcome)
	b = field(b, "end_reason", r.EndReason)
	if r.ExitCode != nil {
		b = append(b, `,"exit_code":`...)
		b = strconv.AppendInt(b, int64(*r.ExitCode), 10)
	}
	if r.DurationMS != nil {
		b = append(b, `,"duration_ms":`...)
		b = strconv.AppendInt(b, *r.DurationMS, 10)
	}
	b = field(b, "error", r.Error)
	b = field(b, "detail", r.Detail)
	return append(b, '}')
}

// field appends ,"name":s unless s is empty (omitempty).
func field(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	b = append(append(append(b, `,"`...), name...), `":`...)
	return appendString(b, s)
}

// list appends ,"name":[…] unless l is empty (omitempty).
func list(b []byte, name string, l []string) []byte {
	if len(l) == 0 {
		return b
	}
	b = append(append(append(b, `,"`...), name...), `":[`...)
	for i, s := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

const hex = "0123456789abcdef"

// appendString appends s quoted as encoding/json does by default: <, >
// and & escaped for HTML, invalid UTF-8 as U+FFFD, U+2028 and U+2029
// escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(b, s[start:]...), '"')
}
