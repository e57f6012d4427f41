package main

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// TestSchemaCommand runs `gw schema` in process and checks that it prints
// the committed schema/gw.schema.json byte for byte (make schema rewrites it).
func TestSchemaCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"schema"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var doc map[string]any
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("gw schema printed invalid JSON: %v", err)
	}
	if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Fatalf("$schema = %v", doc["$schema"])
	}
	committed, err := os.ReadFile("../../schema/gw.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, out.Bytes()) {
		t.Fatal("schema/gw.schema.json differs from `gw schema`; run make schema")
	}
	if code := run([]string{"schema", "extra"}, &out, &errb); code != 2 {
		t.Fatalf("gw schema extra: exit %d, want 2", code)
	}
}
