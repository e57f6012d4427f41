package mcp

import (
	"encoding/json"
	"strings"
	"testing"
)

const petstore31 = `
openapi: 3.1.0
info: {title: Pets, version: "1"}
servers: [{url: "https://{region}.pets.example/v1", variables: {region: {default: eu}}}]
paths:
  /pets/{id}:
    parameters:
      - {name: id, in: path, required: true, schema: {type: integer}}
    get:
      operationId: getPet
      summary: Reads a pet
      description: By its id.
      parameters:
        - {name: fields, in: query, schema: {type: array, items: {type: string}}}
        - {name: X-Trace, in: header, schema: {type: [string, "null"]}}
    delete:
      responses: {"204": {description: gone}}
  /pets:
    post:
      operationId: create pet!
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Pet"}
    put:
      requestBody:
        required: true
        content:
          multipart/form-data:
            schema: {type: object}
components:
  schemas:
    Pet:
      type: object
      required: [name]
      properties:
        name: {type: string}
        parent: {$ref: "#/components/schemas/Pet"}
`

const petstore30 = `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{"operationId":"a","parameters":[{"name":"q","in":"query","schema":{"type":"string","nullable":true}},{"name":"q","in":"header","schema":{"type":"string"}}]}}}}`

func TestParseOpenAPI(t *testing.T) {
	s, err := ParseOpenAPI([]byte(petstore31))
	if err != nil {
		t.Fatal(err)
	}
	if s.Title != "Pets" || len(s.Servers) != 1 || s.Servers[0] != "https://eu.pets.example/v1" {
		t.Errorf("title %q servers %v", s.Title, s.Servers)
	}
	var names []string
	for _, tl := range s.Tools {
		names = append(names, tl.Tool.Name)
	}
	// The multipart-only PUT is not a tool; paths sorted, methods in fixed order.
	if got := strings.Join(names, ","); got != "create_pet,getPet,delete_pets_id" {
		t.Fatalf("tools %s", got)
	}
	get := s.Tool("getPet")
	if get.Tool.Description != "Reads a pet\n\nBy its id." || get.Method != "GET" || get.Path != "/pets/{id}" {
		t.Errorf("getPet: %+v", get)
	}
	schema := get.Tool.InputSchema.(json.RawMessage)
	for _, want := range []string{`"id":{"type":"integer"}`, `"required":["id"]`, `"X-Trace":{"type":["string","null"]}`, `"fields":{"items":{"type":"string"},"type":"array"}`} {
		if !strings.Contains(string(schema), want) {
			t.Errorf("getPet schema %s lacks %s", schema, want)
		}
	}
	create := s.Tool("create_pet")
	schema = create.Tool.InputSchema.(json.RawMessage)
	// The recursive Pet is one $defs entry referring to itself.
	for _, want := range []string{`"body":{"$ref":"#/$defs/Pet"}`, `"parent":{"$ref":"#/$defs/Pet"}`, `"required":["body"]`} {
		if !strings.Contains(string(schema), want) {
			t.Errorf("create_pet schema %s lacks %s", schema, want)
		}
	}
	if create.BodyArg != "body" || create.BodyType != "application/json" || !create.BodyRequired {
		t.Errorf("create_pet body: %+v", create)
	}

	s, err = ParseOpenAPI([]byte(petstore30))
	if err != nil {
		t.Fatal(err)
	}
	a := s.Tool("a")
	schema = a.Tool.InputSchema.(json.RawMessage)
	if !strings.Contains(string(schema), `"q":{"type":["string","null"]}`) || !strings.Contains(string(schema), `"q_header":{"type":"string"}`) {
		t.Errorf("3.0 nullable / name clash: %s", schema)
	}
}

func TestParseOpenAPIErrors(t *testing.T) {
	for name, doc := range map[string]string{
		"not yaml":       "{",
		"swagger":        `{"swagger":"2.0","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{}}}}`,
		"no paths":       `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{}}`,
		"dangling ref":   `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{"parameters":[{"$ref":"#/components/parameters/nope"}]}}}}`,
		"external ref":   `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{"parameters":[{"$ref":"other.yaml#/p"}]}}}}`,
		"only multipart": `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/a":{"post":{"requestBody":{"required":true,"content":{"text/plain":{}}}}}}}`,
	} {
		if _, err := ParseOpenAPI([]byte(doc)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestRequestURL(t *testing.T) {
	s, err := ParseOpenAPI([]byte(petstore31))
	if err != nil {
		t.Fatal(err)
	}
	get := s.Tool("getPet")
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"id": json.Number("7")}, "https://x/v1/pets/7"},
		{map[string]any{"id": "a/b", "fields": []any{"name", "age"}}, "https://x/v1/pets/a%2Fb?fields=name&fields=age"},
		{map[string]any{"id": ".."}, "https://x/v1/pets/%2E%2E"},
	} {
		got, err := get.requestURL("https://x/v1/", tc.args)
		if err != nil || got != tc.want {
			t.Errorf("%v: %q, %v; want %q", tc.args, got, err, tc.want)
		}
	}
	if _, err := get.requestURL("https://x", map[string]any{}); err == nil {
		t.Error("missing path parameter: no error")
	}
}

func TestResolveBase(t *testing.T) {
	spec := &OpenAPISpec{Servers: []string{"/api"}}
	for _, tc := range []struct{ url, specURL, want string }{
		{"https://set/", "", "https://set/"},
		{"", "http://h:1/docs/openapi.json", "http://h:1/api"},
		{"", "", ""},
	} {
		got, err := resolveBase(tc.url, tc.specURL, spec)
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("%+v: %q, %v", tc, got, err)
		}
	}
}

func TestSanitizeToolName(t *testing.T) {
	for in, want := range map[string]string{"getPet": "getPet", "create pet!": "create_pet", "get_/pets/{id}": "get_pets_id", "__x__": "x", "a.b-c": "a.b-c", "": ""} {
		if got := sanitizeToolName(in); got != want {
			t.Errorf("%q: %q; want %q", in, got, want)
		}
	}
}
