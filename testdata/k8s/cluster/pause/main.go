// Command pause is the test cluster's pod sandbox program (its "pause"
// image, FROM scratch): it waits for a signal and exits, reaping nothing.
// Built static (CGO_ENABLED=0) so the image needs no library.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	<-c
}
