package audit

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestLine: a record's line is what json.Marshal writes, byte for byte,
// for every field set or empty and strings of every kind of byte.
func TestLine(t *testing.T) {
	code, neg, dur := 0, -9, int64(1234567)
	strs := []string{"", "a", "run_command:\"git status && git push\"", "<script>&amp;</script>", "tab\there\nnl\rcr",
		"\x00\x01\x07\b\f\x1f\x7f", "back\\slash", "caf\u00e9 \u2028 \u2029 \U0001f600", "bad \xff\xfe utf8 \xc3", "\xe2\x80",
		"g\u0456t", "\ufffd", "\u007f\u0080\u009f"}
	times := []time.Time{{}, time.Date(2026, 12, 2, 4, 15, 9, 542123000, time.UTC),
		time.Date(1999, 1, 1, 0, 0, 0, 0, time.FixedZone("x", -3*3600-1800)), time.Date(2026, 1, 2, 3, 4, 5, 1, time.Local)}
	var recs []Record
	for i, s := range strs {
		recs = append(recs, Record{Time: times[i%len(times)], Kind: s, Call: s, Tool: s, Key: s, Environment: s, Decision: s,
			Layer: s, Reason: s, Grant: s, Unconfined: i%2 == 1, Diagnostics: []string{s, s + "x"}, Display: s, Args: []string{s}, Env: []string{"A=" + s},
			Dir: s, Stdin: s, Loosens: []string{s, "network: " + s}, Outcome: s, EndReason: s, ExitCode: &code, DurationMS: &dur, Error: s, Detail: s})
	}
	// Every field set: a field added to Record and not to line fails below.
	full := reflect.ValueOf(recs[1])
	for i := range full.NumField() {
		if full.Field(i).IsZero() {
			t.Fatalf("the full record leaves %s unset", full.Type().Field(i).Name)
		}
	}
	recs = append(recs, Record{}, Record{Kind: "decision", ExitCode: &neg}, Record{Diagnostics: []string{}, Args: []string{""}})
	for _, r := range recs {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.line(); string(got) != string(want) {
			t.Errorf("line:\n got %s\nwant %s", got, want)
		}
	}
	// A year json.Marshal refuses is clamped, and the line still parses.
	r := Record{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Kind: "decision"}
	var back Record
	if err := json.Unmarshal(r.line(), &back); err != nil || back.Time.Year() != 9999 {
		t.Errorf("year 10000: %v, %v", back.Time, err)
	}
}

// FuzzLine holds appendString to json.Marshal on any bytes.
func FuzzLine(f *testing.F) {
	f.Add("<a&b>\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); string(got) != string(want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}
