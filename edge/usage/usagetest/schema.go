// Package usagetest holds test helpers shared by the usage pipeline's
// tests and the end-to-end tests: validation of encoded records against
// docs/usage-event.schema.json.
package usagetest

import (
	"bytes"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var (
	once   sync.Once
	schema *jsonschema.Schema
	err    error
)

// SchemaPath is the path of docs/usage-event.schema.json in this checkout.
func SchemaPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "docs", "usage-event.schema.json")
}

// Schema compiles the usage-event schema once.
func Schema(tb testing.TB) *jsonschema.Schema {
	tb.Helper()
	once.Do(func() {
		c := jsonschema.NewCompiler()
		schema, err = c.Compile(SchemaPath())
	})
	if err != nil {
		tb.Fatalf("cannot compile %s: %v", SchemaPath(), err)
	}
	return schema
}

// ValidateNDJSON validates every line of data (one record per line) and
// returns the number of records.
func ValidateNDJSON(tb testing.TB, data []byte) int {
	tb.Helper()
	s := Schema(tb)
	n := 0
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		ValidateOne(tb, s, line)
		n++
	}
	return n
}

// ValidateOne validates one encoded record.
func ValidateOne(tb testing.TB, s *jsonschema.Schema, rec []byte) {
	tb.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(rec))
	if err != nil {
		tb.Fatalf("record is not JSON: %v\n%s", err, rec)
	}
	if err := s.Validate(inst); err != nil {
		tb.Fatalf("record does not match the schema: %v\n%s", err, rec)
	}
}
