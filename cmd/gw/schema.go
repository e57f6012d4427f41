package main

import (
	"fmt"
	"io"

	"gw/schema"
)

// schemaCmd prints the JSON Schema of the resource file, produced from the
// loader (package schema); schema/gw.schema.json is its committed copy.
func schemaCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: gw schema (prints the resource file's JSON Schema)")
		return 2
	}
	b, err := schema.Generate()
	if err != nil {
		fmt.Fprintln(stderr, "gw schema: cannot produce the schema:", err)
		return 1
	}
	if _, err := stdout.Write(b); err != nil {
		fmt.Fprintln(stderr, "gw schema: cannot write:", err)
		return 1
	}
	return 0
}
