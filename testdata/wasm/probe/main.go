//go:build wasip1

// Command probe is the guest the executor's tests run: each argument names
// one behaviour (a well-behaved one or a hostile one).
//
//	probe args             print each argument on its own line
//	probe env              print the environment, one VAR=value a line
//	probe exit N           exit with status N
//	probe spin N           burn CPU for N rounds, then print a checksum
//	probe forever          loop forever without calling the host
//	probe sleep            sleep for an hour (blocked in poll_oneoff)
//	probe cat              copy stdin to stdout
//	probe flood            write to stdout forever
//	probe bomb             allocate memory until the runtime gives up
//	probe clock            print the wall clock in Unix nanoseconds
//	probe rand             print 16 random bytes in hex
//	probe ls DIR           list DIR
//	probe open N FILE      open FILE N times, keeping each open; print how
//	                       many opened and the first error
//	probe hold DIR ID      write DIR/started-ID, wait until DIR/go-ID exists,
//	                       write DIR/ended-ID; exit 3 when another run's
//	                       started-X without its ended-X is there, at the
//	                       start or the end (two writers at once)
//	probe write N DIR      write N small files under DIR, 100 to a
//	                       directory (DIR/d0/f0...), making the directories
//	                       that are missing; print how many
package main

import (
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

var sink [][]byte

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe COMMAND")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "args":
		for _, a := range os.Args {
			fmt.Println(a)
		}
	case "env":
		for _, e := range os.Environ() {
			fmt.Println(e)
		}
	case "exit":
		n, _ := strconv.Atoi(os.Args[2])
		os.Exit(n)
	case "spin":
		n, _ := strconv.Atoi(os.Args[2])
		fmt.Println(spin(n))
	case "forever":
		for i := uint64(0); ; i++ {
			if spin(1) == 42 && i == 0 {
				fmt.Println("never")
			}
		}
	case "sleep":
		time.Sleep(time.Hour)
		fmt.Println("woke")
	case "cat":
		if _, err := io.Copy(os.Stdout, os.Stdin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "flood":
		line := []byte(strings.Repeat("x", 1023) + "\n")
		for {
			os.Stdout.Write(line)
		}
	case "bomb":
		for {
			b := make([]byte, 16<<20)
			for i := range b {
				b[i] = 1
			}
			sink = append(sink, b)
		}
	case "clock":
		fmt.Println(time.Now().UnixNano())
	case "rand":
		var b [16]byte
		rand.Read(b[:])
		fmt.Printf("%x\n", b)
	case "open":
		n, _ := strconv.Atoi(os.Args[2])
		var files []*os.File
		var err error
		for len(files) < n {
			var f *os.File
			if f, err = os.Open(os.Args[3]); err != nil {
				break
			}
			files = append(files, f)
		}
		fmt.Println(len(files), err)
	case "hold":
		dir, id := os.Args[2], os.Args[3]
		overlap := func() {
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				x, ok := strings.CutPrefix(e.Name(), "started-")
				if !ok || x == id {
					continue
				}
				if _, err := os.Stat(dir + "/ended-" + x); err != nil {
					fmt.Println("overlap", x)
					os.Exit(3)
				}
			}
		}
		overlap()
		if err := os.WriteFile(dir+"/started-"+id, nil, 0o644); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		for {
			if _, err := os.Stat(dir + "/go-" + id); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		overlap()
		if err := os.WriteFile(dir+"/ended-"+id, nil, 0o644); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("held", id)
	case "write":
		n, _ := strconv.Atoi(os.Args[2])
		for i := range n {
			d := fmt.Sprintf("%s/d%d", os.Args[3], i/100)
			if i%100 == 0 {
				if err := os.Mkdir(d, 0o755); err != nil && !os.IsExist(err) {
					fmt.Println("error:", err)
					os.Exit(1)
				}
			}
			if err := os.WriteFile(fmt.Sprintf("%s/f%d", d, i%100), []byte("data\n"), 0o644); err != nil {
				fmt.Println("error:", err)
				os.Exit(1)
			}
		}
		fmt.Println(n)
	case "ls":
		ents, err := os.ReadDir(os.Args[2])
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		for _, e := range ents {
			fmt.Println(e.Name())
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown command", os.Args[1])
		os.Exit(2)
	}
}

// spin does n rounds of integer work the compiler cannot remove.
func spin(n int) uint64 {
	x := uint64(88172645463325252)
	for i := 0; i < n; i++ {
		for j := 0; j < 1000; j++ {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
	}
	return x
}
