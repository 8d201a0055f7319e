package capabilities

import "bytes"

// HelloWasm returns a minimal WASI (preview 1) module, assembled here byte
// by byte, whose _start writes "hello\n" to stdout with fd_write and
// returns. It is the artifact of a @wasm scaffold, so that the scaffold
// runs as written. Each call returns a fresh copy.
//
// In WAT:
//
//	(module
//	  (import "wasi_snapshot_preview1" "fd_write"
//	    (func $fd_write (param i32 i32 i32 i32) (result i32)))
//	  (memory (export "memory") 1)
//	  (data (i32.const 0) "\08\00\00\00\06\00\00\00hello\n") ;; iovec{buf=8, len=6}, then the text
//	  (func (export "_start")
//	    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 16)))))
func HelloWasm() []byte {
	const (
		i32       = 0x7f
		funcType  = 0x60
		i32Const  = 0x41
		call      = 0x10
		drop      = 0x1a
		end       = 0x0b
		kindFunc  = 0x00
		kindMem   = 0x02
		secType   = 1
		secImport = 2
		secFunc   = 3
		secMem    = 5
		secExport = 7
		secCode   = 10
		secData   = 11
	)
	var b bytes.Buffer
	b.Write([]byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00})
	section(&b, secType, cat(
		[]byte{2},
		[]byte{funcType, 4, i32, i32, i32, i32, 1, i32}, // 0: fd_write
		[]byte{funcType, 0, 0},                          // 1: _start
	))
	section(&b, secImport, cat([]byte{1}, wasmName("wasi_snapshot_preview1"), wasmName("fd_write"), []byte{kindFunc, 0}))
	section(&b, secFunc, []byte{1, 1})
	section(&b, secMem, []byte{1, 0x00, 1}) // one memory, no maximum, one page
	section(&b, secExport, cat([]byte{2}, wasmName("memory"), []byte{kindMem, 0}, wasmName("_start"), []byte{kindFunc, 1}))
	body := []byte{
		0,           // no locals
		i32Const, 1, // fd: stdout
		i32Const, 0, // iovs
		i32Const, 1, // iovs_len
		i32Const, 16, // nwritten
		call, 0,
		drop,
		end,
	}
	section(&b, secCode, cat([]byte{1}, vec(body)))
	data := []byte{8, 0, 0, 0, 6, 0, 0, 0, 'h', 'e', 'l', 'l', 'o', '\n'}
	section(&b, secData, cat([]byte{1, 0x00, i32Const, 0, end}, vec(data)))
	return b.Bytes()
}

// section writes a section: its id, its size, its contents.
func section(b *bytes.Buffer, id byte, contents []byte) {
	b.WriteByte(id)
	b.Write(vec(contents))
}

// vec prefixes p with its length as unsigned LEB128.
func vec(p []byte) []byte { return cat(uleb(uint32(len(p))), p) }

// wasmName is a wasm name: its length, then its UTF-8 bytes.
func wasmName(s string) []byte { return vec([]byte(s)) }

func uleb(v uint32) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			out = append(out, c|0x80)
			continue
		}
		return append(out, c)
	}
}

func cat(ps ...[]byte) []byte {
	var out []byte
	for _, p := range ps {
		out = append(out, p...)
	}
	return out
}
