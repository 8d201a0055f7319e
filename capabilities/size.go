package capabilities

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/errdefs"
)

// ErrInvalidSize is the class of ParseSize's errors.
var ErrInvalidSize = errdefs.ErrInvalidArgument.WithMessage("invalid size")

// ParseSize reads a size in bytes: a number, optionally with a fraction,
// followed by an optional unit. Units are binary and case-insensitive, as
// in `docker run --memory`: b; k, kb, kib (1024); m, mb, mib; g, gb, gib;
// t, tb, tib. "64MiB", "1GiB", "512k", "1.5g" and "1048576" are sizes.
// A fraction is rounded down to whole bytes. Negative sizes, and sizes that
// do not fit in an int64, are errors of class ErrInvalidSize.
func ParseSize(s string) (int64, error) {
	bad := func(why string) (int64, error) {
		return 0, fmt.Errorf("size %s: %s (want e.g. 64MiB, 1GiB, 512k or a number of bytes): %w",
			strconv.QuoteToASCII(s), why, ErrInvalidSize)
	}
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, unit := s[:i], strings.ToLower(s[i:])
	if num == "" || num[0] == '.' || num[len(num)-1] == '.' || strings.Count(num, ".") > 1 {
		return bad("no number")
	}
	var shift uint
	switch unit {
	case "", "b":
	case "k", "kb", "kib":
		shift = 10
	case "m", "mb", "mib":
		shift = 20
	case "g", "gb", "gib":
		shift = 30
	case "t", "tb", "tib":
		shift = 40
	default:
		return bad("unknown unit " + strconv.QuoteToASCII(s[i:]))
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return bad("no number")
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), shift)))
	n := new(big.Int).Quo(r.Num(), r.Denom())
	if !n.IsInt64() {
		return bad("too large")
	}
	return n.Int64(), nil
}

// FormatSize writes n in the largest binary unit that divides it exactly:
// 64MiB, 1GiB, 1536KiB, 100 (bytes). ParseSize reads it back.
func FormatSize(n int64) string {
	if n <= 0 {
		return strconv.FormatInt(n, 10)
	}
	for _, u := range []struct {
		shift uint
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// Size is a number of bytes, written in a manifest as a string ParseSize
// reads ("64MiB") or as a plain number of bytes.
type Size int64

// UnmarshalJSON reads "64MiB" or 67108864.
func (s *Size) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil // as encoding/json does for other types
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return err
	}
	switch v := v.(type) {
	case string:
		n, err := ParseSize(v)
		if err != nil {
			return err
		}
		*s = Size(n)
	case json.Number:
		n, err := v.Int64()
		if err != nil || n < 0 {
			return fmt.Errorf("size %s: want a whole, non-negative number of bytes that fits in 63 bits: %w", v, ErrInvalidSize)
		}
		*s = Size(n)
	default:
		return fmt.Errorf("size: want a string like \"64MiB\" or a number of bytes: %w", ErrInvalidSize)
	}
	return nil
}

// MarshalJSON writes the size as FormatSize does.
func (s Size) MarshalJSON() ([]byte, error) { return json.Marshal(FormatSize(int64(s))) }

// Duration is a time.Duration written in a manifest as "30s", "2m", "1h30m".
type Duration time.Duration

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string like \"30s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %s: want e.g. 30s, 2m or 1h30m: %w", strconv.QuoteToASCII(s), err)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as time.Duration.String does.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// validCPUs reports whether f is a usable number of cores.
func validCPUs(f float64) bool { return f > 0 && !math.IsInf(f, 0) && !math.IsNaN(f) && f <= 1024 }
