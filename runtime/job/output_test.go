package job

import (
	"bytes"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
)

func TestOutputCapsAndStreams(t *testing.T) {
	t.Parallel()
	var seen bytes.Buffer
	var fired atomic.Int32
	o := NewOutput(5, &seen, func() { fired.Add(1) })
	for _, s := range []string{"abc", "defgh", "ijk"} {
		if n, err := o.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v: the cap must not short-write", s, n, err)
		}
	}
	if got := string(o.Bytes()); got != "abcde" {
		t.Errorf("kept %q, want %q", got, "abcde")
	}
	if seen.String() != "abcde" {
		t.Errorf("streamed %q, want only what was kept", seen.String())
	}
	if !o.Exceeded() || fired.Load() != 1 {
		t.Errorf("exceeded %v, overflow called %d times; want true, 1", o.Exceeded(), fired.Load())
	}
}

func TestCaptureOverflowOnceAcrossStreams(t *testing.T) {
	t.Parallel()
	var fired atomic.Int32
	c := NewCapture(4, Streams{}, func() { fired.Add(1) })
	var wg sync.WaitGroup
	for _, w := range []*Output{c.Stdout, c.Stderr} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				w.Write([]byte("xx"))
			}
		}()
	}
	wg.Wait()
	if fired.Load() != 1 {
		t.Errorf("overflow called %d times, want once", fired.Load())
	}
	r := c.Result(OutputCap, KilledExitCode, "")
	if len(r.Stdout) != 4 || len(r.Stderr) != 4 || !r.Truncated || r.Duration <= 0 {
		t.Errorf("result %+v", r)
	}
}

func TestParseMount(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Mount{
		"a:/b":    {Host: "a", Guest: "/b"},
		"a:/b:ro": {Host: "a", Guest: "/b"},
		"a:/b:rw": {Host: "a", Guest: "/b", Writable: true},
	} {
		got, err := ParseMount(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseMount(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if back, _ := ParseMount(got.String()); !reflect.DeepEqual(back, got) {
			t.Errorf("%q does not round-trip: %q", in, got.String())
		}
	}
	for _, bad := range []string{"", "a", ":b", "a:", "a:b:rx", "a:b:ro:x"} {
		if _, err := ParseMount(bad); err == nil {
			t.Errorf("ParseMount(%q) succeeded", bad)
		}
	}
}
