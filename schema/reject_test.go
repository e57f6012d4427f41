package schema

import (
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"gw/admin/resources"
)

// base is a small valid file the invalid cases start from.
const base = `_format_version: "1"
provider_keys:
  - display_name: main
    api_key: ${MAIN_KEY}
    api_base: https://api.example.com/v1
models:
  - display_name: m
    provider: openai
    model_name: gpt-4o
    provider_key: main
    timeout: 1000
    cost: {input_per_1k: 0.1, output_per_1k: 0.2}
guardrails:
  - name: kw
    kind: keyword
    patterns: [{kind: literal, value: secret}]
cache_policies:
  - name: c
    ttl_seconds: 60
observability_exporters:
  - name: otel
    kind: otlp_http
    endpoint: https://otel.example.com/v1/logs
`

// TestInvalidFilesRejectedByBoth: one file per kind of rule the schema
// encodes; the schema rejects each, and so does the loader.
func TestInvalidFilesRejectedByBoth(t *testing.T) {
	s := compiled(t)
	if r := resources.Load([]byte(base), testEnv); len(r.Errors) > 0 {
		t.Fatalf("base file rejected by the loader: %v", r.Err())
	}
	if err := s.Validate(instance(t, []byte(base))); err != nil {
		t.Fatalf("base file rejected by the schema: %v", err)
	}
	cases := []struct{ name, old, new string }{
		{"format version integer", `_format_version: "1"`, `_format_version: 1`},
		{"format version unsupported", `_format_version: "1"`, `_format_version: "2"`},
		{"unknown collection", "models:", "modles:"},
		{"unknown entry field", "    model_name: gpt-4o", "    model_name: gpt-4o\n    modle_name: x"},
		{"unknown nested field", "output_per_1k: 0.2}", "output_per_1k: 0.2, extra: 1}"},
		{"missing required", "  - display_name: m\n", "  - provider_alias: m\n"},
		{"empty required string", "display_name: m\n", "display_name: \" \"\n"},
		{"string for integer", "timeout: 1000", "timeout: \"1000\""},
		{"integer below minimum", "timeout: 1000", "timeout: -1"},
		{"number out of range", "input_per_1k: 0.1", "input_per_1k: -0.1"},
		{"string for number", "input_per_1k: 0.1", "input_per_1k: cheap"},
		{"bad enum", "kind: literal", "kind: glob"},
		{"integer for string", "model_name: gpt-4o", "model_name: 4"},
		{"sequence for mapping", "cost: {input_per_1k: 0.1, output_per_1k: 0.2}", "cost: [0.1, 0.2]"},
		{"mapping for sequence", "patterns: [{kind: literal, value: secret}]", "patterns: {kind: literal}"},
		{"field of another guardrail kind", "    patterns: [{kind: literal, value: secret}]", "    patterns: [{kind: literal, value: secret}]\n    entities: [EMAIL]"},
		{"rejected common field for the kind", "    kind: keyword\n", "    kind: keyword\n    timeout_ms: 100\n"},
		{"field of another exporter kind", "    endpoint: https://otel.example.com/v1/logs", "    endpoint: https://otel.example.com/v1/logs\n    bucket: b"},
		{"unknown exporter kind", "kind: otlp_http", "kind: kafka"},
		{"exporter batch size out of range", "    kind: otlp_http\n", "    kind: otlp_http\n    batch_size: 0\n"},
		{"boolean as string", "    kind: keyword\n", "    kind: keyword\n    enabled: \"yes\"\n"},
		{"mixed model shapes", "    timeout: 1000\n", "    timeout: 1000\n    routing: {targets: [{model: m}]}\n"},
		{"both exclusive fields", "    api_key: ${MAIN_KEY}\n", "    api_key: ${MAIN_KEY}\n    secret: ${MAIN_KEY}\n"},
		{"semantic cache without block", "    ttl_seconds: 60\n", "    ttl_seconds: 60\n    backend: disk\n"},
		{"ttl below minimum", "ttl_seconds: 60", "ttl_seconds: 0"},
		{"entry not a mapping", "cache_policies:\n  - name: c\n    ttl_seconds: 60", "cache_policies:\n  - c"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(base, tc.old) {
				t.Fatalf("case does not apply: %q not in base", tc.old)
			}
			data := []byte(strings.Replace(base, tc.old, tc.new, 1))
			if err := s.Validate(instance(t, data)); err == nil {
				t.Errorf("the schema accepts it")
			}
			if r := resources.Load(data, testEnv); len(r.Errors) == 0 {
				t.Errorf("the loader accepts it")
			}
		})
	}
}

// TestMutantsSchemaRejectsLoaderRejects mutates every node of the
// repository's richest files (wrong type, unknown field, unlisted value,
// out-of-range number) and checks the agreement rule on each mutant: what
// the schema rejects, the loader rejects too.
func TestMutantsSchemaRejectsLoaderRejects(t *testing.T) {
	s := compiled(t)
	files := repoFiles(t)
	checked, rejected := 0, 0
	for _, name := range []string{"../examples/gw.yaml", "../admin/snapshot/testdata/every_field.yaml"} {
		data, ok := files[name]
		if !ok {
			t.Fatalf("%s not found", name)
		}
		if r := resources.Load(data, testEnv); len(r.Errors) > 0 {
			t.Fatalf("%s: rejected by the loader: %v", name, r.Err())
		}
		n := countNodes(t, data)
		for i := 0; i < n; i++ {
			for _, m := range mutations {
				mut, ok := mutate(t, data, i, m)
				if !ok {
					continue
				}
				checked++
				if s.Validate(instance(t, mut)) == nil {
					continue
				}
				rejected++
				if r := resources.Load(mut, testEnv); len(r.Errors) == 0 {
					t.Errorf("%s node %d, mutation %q: the schema rejects it, the loader accepts it:\n%s", name, i, m, mut)
				}
			}
		}
	}
	t.Logf("%d mutants, %d rejected by the schema (each also by the loader)", checked, rejected)
	if rejected < 100 {
		t.Fatalf("only %d mutants rejected by the schema; the schema is too loose", rejected)
	}
}

var mutations = []string{"unknown-field", "to-int", "to-string", "to-bool", "unlisted-value", "negative", "huge"}

func parseDoc(t *testing.T, data []byte) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return &doc
}

// nodes lists the document's nodes below the top-level mapping in a fixed order.
// Mapping keys are left out: renaming one is the unknown-field mutation.
func nodes(n *yaml.Node, out *[]*yaml.Node) {
	*out = append(*out, n)
	for i, c := range n.Content {
		if n.Kind == yaml.MappingNode && i%2 == 0 {
			continue
		}
		nodes(c, out)
	}
}

func countNodes(t *testing.T, data []byte) int {
	var all []*yaml.Node
	nodes(parseDoc(t, data), &all)
	return len(all)
}

func mutate(t *testing.T, data []byte, i int, m string) ([]byte, bool) {
	doc := parseDoc(t, data)
	var all []*yaml.Node
	nodes(doc, &all)
	n := all[i]
	if i < 3 || n.Value == "1" && n.Style == yaml.DoubleQuotedStyle && i < 4 { // the document, the top mapping and _format_version stay
		return nil, false
	}
	switch {
	case m == "unknown-field" && n.Kind == yaml.MappingNode:
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "zz_unknown"}, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "1"})
	case n.Kind != yaml.ScalarNode:
		return nil, false
	case m == "to-int" && n.Tag != "!!int":
		n.Tag, n.Value, n.Style = "!!int", "7", 0
	case m == "to-string" && n.Tag != "!!str":
		n.Tag, n.Style = "!!str", yaml.DoubleQuotedStyle
	case m == "to-bool" && n.Tag != "!!bool":
		n.Tag, n.Value, n.Style = "!!bool", "true", 0
	case m == "unlisted-value" && n.Tag == "!!str":
		n.Value = "zz-unlisted"
	case m == "negative" && (n.Tag == "!!int" || n.Tag == "!!float"):
		n.Value = "-" + strings.TrimPrefix(n.Value, "-") + "1"
	case m == "huge" && n.Tag == "!!int":
		n.Value = "9000000000000000000"
	case m == "huge" && n.Tag == "!!float":
		n.Value = "1e300"
	default:
		return nil, false
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out, true
}
