package resources

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDescribeSchema checks the produced schema against facts of the
// loader: a variant per guardrail and exporter kind, the unknown-kind
// variant, bounds, defaults, enums and closed mappings.
func TestDescribeSchema(t *testing.T) {
	s := DescribeSchema()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	props := s["properties"].(map[string]any)
	for _, c := range Collections {
		if props[c] == nil {
			t.Fatalf("collection %s missing", c)
		}
	}
	item := func(c string) map[string]any { return props[c].(map[string]any)["items"].(map[string]any) }
	consts := func(c, field string) map[string]bool {
		out := map[string]bool{}
		for _, v := range leaves(item(c)) {
			if p, ok := v["properties"].(map[string]any)[field].(map[string]any); ok {
				if k, ok := p["const"].(string); ok {
					out[k] = true
				}
				if _, ok := p["not"]; ok {
					out["<other>"] = true
				}
			}
		}
		return out
	}
	g := consts(CollGuardrails, "kind")
	for _, k := range GuardrailKinds() {
		if !g[k] {
			t.Errorf("guardrails: no variant for kind %s", k)
		}
	}
	if !g["<other>"] {
		t.Error("guardrails: no variant for an unknown kind (which loads)")
	}
	x := consts(CollObservabilityExporters, "kind")
	for _, k := range ExporterKinds {
		if !x[k] {
			t.Errorf("observability_exporters: no variant for kind %s", k)
		}
	}
	js := string(b)
	for _, want := range []string{
		`"ttl_seconds":{"minimum":1,"type":"integer"}`,
		`"verify":{"default":true,"type":"boolean"}`,
		`"stream_done_marker":{"anyOf":[{"enum":["required","optional","none"]}`,
		`"additionalProperties":false`,
	} {
		if !strings.Contains(js, want) {
			t.Errorf("schema lacks %s", want)
		}
	}
}
