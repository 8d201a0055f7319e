package rootfs

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	esys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm/internal/asm"
)

// writeLoopFiles is how many files BenchmarkWriteLoop writes per loop.
const writeLoopFiles = 10_000

// BenchmarkWriteLoop is the file system's share of the @wasm write path,
// without wazero or a guest: writeLoopFiles small files (100 directories
// of 100) through a writable mount, as wazero's path_open, fd_write and
// fd_close call it: "create" makes them in an empty mount (O_CREAT,
// O_TRUNC); "overwrite" rewrites their first bytes (O_WRONLY only: a
// truncation frees blocks, which costs the file system more than the
// path costs ccrun). On a tmpfs the figure is the path's own cost:
//
//	TMPDIR=/dev/shm go test -run '^$' -bench WriteLoop -benchtime 20x ./runtime/wasm/internal/rootfs/
func BenchmarkWriteLoop(b *testing.B) {
	for _, tc := range []struct {
		name  string
		fresh bool // a new, empty mount for each loop
		flag  esys.Oflag
	}{
		{"create", true, esys.O_WRONLY | esys.O_CREAT | esys.O_TRUNC},
		{"overwrite", false, esys.O_WRONLY},
	} {
		b.Run(tc.name, func(b *testing.B) {
			dir := b.TempDir()
			loop := func(dir string, flag esys.Oflag) {
				r, err := os.OpenRoot(dir)
				if err != nil {
					b.Fatal(err)
				}
				defer r.Close()
				fs, err := New(r, job.Mount{Host: dir, Guest: "/w", Writable: true}, NewRun())
				if err != nil {
					b.Fatal(err)
				}
				if c, ok := fs.(interface{ Close() error }); ok {
					defer c.Close()
				}
				data := []byte("data\n")
				for i := range writeLoopFiles {
					d := fmt.Sprint("d", i/100)
					if i%100 == 0 {
						if e := fs.Mkdir(d, 0o755); e != 0 && e != esys.EEXIST {
							b.Fatal(e)
						}
					}
					f, e := fs.OpenFile(fmt.Sprint(d, "/f", i%100), flag, 0o644)
					if e != 0 {
						b.Fatal(e)
					}
					if _, e := f.Write(data); e != 0 {
						b.Fatal(e)
					}
					if e := f.Close(); e != 0 {
						b.Fatal(e)
					}
				}
			}
			if !tc.fresh {
				loop(dir, esys.O_WRONLY|esys.O_CREAT)
			}
			for b.Loop() {
				d := dir
				if tc.fresh {
					b.StopTimer()
					d = b.TempDir()
					b.StartTimer()
				}
				loop(d, tc.flag)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/writeLoopFiles/1000, "µs/file")
		})
	}
}

// fdWriteCalls is how many fd_write calls BenchmarkFdWrite's guest makes.
const fdWriteCalls = 100_000

// fdWriteGuest is a module whose _start calls fd_write of one byte to
// standard output fdWriteCalls times.
func fdWriteGuest() []byte {
	types := asm.Vec(
		[]byte{0x60, 4, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7f}, // (i32 i32 i32 i32) -> i32
		[]byte{0x60, 0, 0},
	)
	imports := asm.Vec(asm.Cat(asm.Str("wasi_snapshot_preview1"), asm.Str("fd_write"), []byte{0x00}, asm.Uleb(0)))
	body := asm.Cat(
		[]byte{0x01, 0x01, 0x7f}, // one local i32
		[]byte{0x03, 0x40},       // loop
		asm.OpI32Const(1), asm.OpI32Const(0), asm.OpI32Const(1), asm.OpI32Const(8), asm.OpCall(0), []byte{0x1a},
		[]byte{0x20, 0}, asm.OpI32Const(1), []byte{0x6a, 0x22, 0}, asm.OpI32Const(fdWriteCalls), []byte{0x49, 0x0d, 0},
		asm.OpEnd(), asm.OpEnd(),
	)
	// The iovec at 0 points at the byte at 16.
	data := asm.Cat([]byte{0}, asm.OpI32Const(0), asm.OpEnd(), asm.Str("\x10\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00x"))
	return asm.Cat(asm.Header,
		asm.Section(1, types),
		asm.Section(2, imports),
		asm.Section(3, asm.Vec(asm.Uleb(1))),
		asm.Section(5, asm.Vec([]byte{0, 1})),
		asm.Section(7, asm.Vec(asm.Cat(asm.Str("_start"), []byte{0x00}, asm.Uleb(1)), asm.Cat(asm.Str("memory"), []byte{0x02}, asm.Uleb(0)))),
		asm.Section(10, asm.Vec(asm.Cat(asm.Uleb(uint64(len(body))), body))),
		asm.Section(11, asm.Vec(data)),
	)
}

// BenchmarkFdWrite is the cost of this package's WASI host module on the
// call a guest makes most, fd_write to standard output, against wazero's
// own: "wazero" instantiates wasi_snapshot_preview1 as wazero makes it,
// "ccrun" through Instantiate, with a Run (every call that takes a
// descriptor goes through numbered, which finds no renumbering). Both run
// in one benchmark, side by side:
//
//	go test -run '^$' -bench FdWrite -benchtime 20x ./runtime/wasm/internal/rootfs/
func BenchmarkFdWrite(b *testing.B) {
	ctx := context.Background()
	bin := fdWriteGuest()
	for _, tc := range []struct {
		name string
		host func(context.Context, wazero.Runtime) (api.Closer, error)
		ctx  func() context.Context
	}{
		{"wazero", wasi_snapshot_preview1.Instantiate, func() context.Context { return ctx }},
		{"ccrun", Instantiate, func() context.Context { return WithRun(ctx, NewRun()) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			rt := wazero.NewRuntime(ctx)
			defer rt.Close(ctx)
			if _, err := tc.host(ctx, rt); err != nil {
				b.Fatal(err)
			}
			mod, err := rt.CompileModule(ctx, bin)
			if err != nil {
				b.Fatal(err)
			}
			cfg := wazero.NewModuleConfig().WithStdout(io.Discard).WithName("")
			for b.Loop() {
				m, err := rt.InstantiateModule(tc.ctx(), mod, cfg)
				if err != nil {
					b.Fatal(err)
				}
				_ = m.Close(ctx)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/fdWriteCalls, "ns/call")
		})
	}
}
