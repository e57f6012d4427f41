package main

import (
	"fmt"
	"io"
)

func mockCmd(args []string, stderr io.Writer) int {
	fmt.Fprintln(stderr, "gw mock: the mock upstream is not part of this build yet")
	return 2
}
