// The node's pod sandbox ("pause") process: it holds the pod's namespaces and does
// nothing else until the runtime stops it.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	<-signals
}
