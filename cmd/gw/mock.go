package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"gw/perf/mock"
)

// mockCmd runs the mock upstream provider (see perf/mock/README.md).
func mockCmd(args []string, stderr io.Writer) int {
	if err := mock.Main(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "gw mock:", err)
		return 1
	}
	return 0
}
