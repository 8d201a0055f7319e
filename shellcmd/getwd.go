package shellcmd

import (
	"os"
	"syscall"
)

// getwd is os.Getwd with one system call in the common case: os.Getwd
// stats both "." and $PWD to tell whether $PWD names the working
// directory, and returns it if so; when the kernel's name for the working
// directory is $PWD itself, it does, and that is the answer. Otherwise it
// is os.Getwd's.
func getwd() (string, error) {
	if wd, err := syscall.Getwd(); err == nil && wd != "" && wd == os.Getenv("PWD") {
		return wd, nil
	}
	return os.Getwd()
}
