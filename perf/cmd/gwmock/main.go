// Command gwmock runs the gw mock provider (package gw/perf/mock) on its own.
//
//	go run ./perf/cmd/gwmock -addr 127.0.0.1:8090 -chunk-delay 20ms
//	go run ./perf/cmd/gwmock -h
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"gw/perf/mock"
)

func main() {
	err := mock.Main(os.Args[1:])
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	default:
		fmt.Fprintln(os.Stderr, "gwmock:", err)
		os.Exit(1)
	}
}
