package rootfs

import (
	"fmt"
	"os"
	"testing"

	esys "github.com/tetratelabs/wazero/experimental/sys"

	"github.com/ccrun/ccrun/runtime/job"
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
