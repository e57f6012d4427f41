package fuzz

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"gw/edge/mcp"
)

var mcpToolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// FuzzMCPOpenAPI: converting any document to tools never panics; every
// tool it yields has a valid, unique MCP name without gw's "__" separator
// and an inputSchema that is a JSON object schema.
func FuzzMCPOpenAPI(f *testing.F) {
	for _, s := range []string{
		`{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/a/{id}":{"get":{"operationId":"a","parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"integer"}}]}}}}`,
		"openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /p:\n    post:\n      requestBody:\n        content:\n          application/json:\n            schema: {$ref: '#/components/schemas/N'}\ncomponents:\n  schemas:\n    N: {type: object, properties: {next: {$ref: '#/components/schemas/N'}}}\n",
		`{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/x":{"get":{"operationId":"a b"},"put":{"operationId":"a_b"}}}}`,
		`{"openapi":"3.0.0","paths":{"/x":{"get":{"parameters":[{"$ref":"#/components/parameters/p"}]}}},"components":{"parameters":{"p":{"$ref":"#/components/parameters/p"}}}}`,
		`{"swagger":"2.0"}`, ``, `[`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		spec, err := mcp.ParseOpenAPI(doc)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, tl := range spec.Tools {
			name := tl.Tool.Name
			if !mcpToolNameRE.MatchString(name) || seen[name] || strings.Contains(name, "__") {
				t.Fatalf("tool name %q (seen before: %v)", name, seen[name])
			}
			seen[name] = true
			raw, ok := tl.Tool.InputSchema.(json.RawMessage)
			if !ok {
				t.Fatalf("%s: inputSchema is %T", name, tl.Tool.InputSchema)
			}
			var schema map[string]any
			if err := json.Unmarshal(raw, &schema); err != nil || schema["type"] != "object" {
				t.Fatalf("%s: inputSchema %s: %v", name, raw, err)
			}
		}
	})
}
