package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// slowModule is a WASI command whose _start holds one br_table of n
// targets: wazero's compile time grows faster than n, so a few ten
// thousand targets take seconds to compile, and the run itself nothing.
func slowModule(n int) []byte {
	uleb := func(n int) []byte {
		var b []byte
		for ; n >= 0x80; n >>= 7 {
			b = append(b, byte(n)|0x80)
		}
		return append(b, byte(n))
	}
	section := func(id byte, content []byte) []byte {
		return append(append([]byte{id}, uleb(len(content))...), content...)
	}
	body := append([]byte{0x00, 0x02, 0x40, 0x41, 0x00, 0x0e}, uleb(n)...) // no locals; block; i32.const 0; br_table
	body = append(append(body, make([]byte, n)...), 0x00, 0x0b, 0x0b)      // every target and the default: the block; end; end
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, section(1, []byte{0x01, 0x60, 0x00, 0x00})...) // type () -> ()
	m = append(m, section(3, []byte{0x01, 0x00})...)             // one function of it
	m = append(m, section(7, append(append([]byte{0x01, 0x06}, "_start"...), 0x00, 0x00))...)
	return append(m, section(10, append([]byte{0x01}, append(uleb(len(body)), body...)...))...)
}

// TestStatusLineCompiling: at a terminal, the first run of a large module
// says what the seconds before it starts are spent on — "compiling
// MODULE" on the status line — and the line is cleared at the end.
func TestStatusLineCompiling(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // a first compilation: nothing in the disk cache
	t.Setenv("CCRUN_WASM_SERVER", "")       // compiled here, not in the warm server
	dir := t.TempDir()
	targets := 40_000 // seconds to compile, even on a fast machine
	if raceEnabled {
		targets = 16_000 // the race detector slows wazero's compiler tenfold
	}
	if err := os.WriteFile(filepath.Join(dir, "slow.wasm"), slowModule(targets), 0o644); err != nil {
		t.Fatal(err)
	}
	screen, code := promptRun(t, dir, nil, "exec", "--approve", "once", "--wasm", filepath.Join(dir, "slow.wasm"))
	if code != 0 {
		t.Fatalf("exit %d; screen:\n%q", code, screen)
	}
	if !strings.Contains(screen, "run_wasm compiling slow.wasm (first run; kept compiled for the next) 1.") {
		t.Errorf("no status line saying what is compiled; the terminal showed %q", screen)
	}
	if !strings.HasSuffix(screen, "\r\x1b[2K") {
		t.Errorf("the status line was not cleared at the end: %q", screen)
	}
}
