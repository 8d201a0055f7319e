//go:build wasip1

// Command hello is the smallest Go guest: it prints a greeting. It is the
// module the speed figures are measured with.
package main

import "os"

func main() {
	os.Stdout.WriteString("hello, world\n")
}
