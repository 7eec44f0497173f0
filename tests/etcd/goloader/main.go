// Command goloader follows a ring file with the Go binding's WatchFile and
// prints one line per change it sees, for the etcd harness (tests/etcd):
//
//	revision R fingerprint 0x0123456789abcdef
//	error MESSAGE
//
// It ends when its standard input reaches end of file (the harness closes
// it), on SIGTERM or SIGINT, or after -for, whichever comes first.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"chring"
)

func main() {
	path := flag.String("file", "", "the ring file to follow")
	interval := flag.Duration("interval", 20*time.Millisecond, "how often to look at the file")
	lifetime := flag.Duration("for", 10*time.Minute, "exit after this long at most")
	flag.Parse()
	if *path == "" {
		fmt.Fprintln(os.Stderr, "usage: goloader -file PATH [-interval D] [-for D]")
		os.Exit(2)
	}
	ring, err := chring.New(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "goloader:", err)
		os.Exit(1)
	}
	out := bufio.NewWriter(os.Stdout)
	stop := chring.WatchFile(ring, *path, *interval, func(ev chring.WatchEvent) {
		if ev.Err != nil {
			fmt.Fprintf(out, "error %s\n", strings.ReplaceAll(ev.Err.Error(), "\n", " "))
		} else {
			fmt.Fprintf(out, "revision %d fingerprint 0x%016x\n", ev.Info.Revision, ev.Info.Fingerprint)
		}
		out.Flush()
	})

	done := make(chan struct{}, 3)
	go func() { io.Copy(io.Discard, os.Stdin); done <- struct{}{} }()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-signals; done <- struct{}{} }()
	go func() { time.Sleep(*lifetime); done <- struct{}{} }()
	<-done
	stop()
	ring.Close()
}
