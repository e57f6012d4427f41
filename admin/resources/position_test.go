package resources

import (
	"strings"
	"testing"
)

// TestErrorPositions: every error carries the line and column of the node
// it is about, and an unknown field names its nearest valid spelling.
func TestErrorPositions(t *testing.T) {
	const base = `_format_version: "1"
provider_keys:
  - display_name: oa
    api_key: sk-literal-test-key
    api_base: http://127.0.0.1:9/v1
`
	cases := []struct {
		name, file string
		want       string // Error.At("gw.yaml") of one of the errors
	}{
		{"misspelt field", base + `api_keys:
  - display_name: dev
    key_env: K
    alowed_models: ["*"]
`, "gw.yaml:9:5: api_keys[0] (display_name=dev): alowed_models: unknown field; did you mean `allowed_models`?"},
		{"swapped letters", base + `models:
  - display_name: g
    provider: openai
    model_nmae: gpt-4o
    provider_key: oa
`, "gw.yaml:9:5: models[0] (display_name=g): model_nmae: unknown field; did you mean `model_name`?"},
		{"nothing close", base + `models:
  - display_name: g
    model_name: m
    provider_key: oa
    colour: red
`, "gw.yaml:10:5: models[0] (display_name=g): colour: unknown field"},
		{"nested value", base + `models:
  - display_name: g
    routing:
      targets:
        - model: nope
`, "gw.yaml:10:11: models[0] (display_name=g): routing.targets[0].model: "},
		{"bad enum value", base + `api_keys:
  - display_name: dev
    key_env: K
    allowed_models: ["*"]
    rate_limit: {rpm: -1}
`, "gw.yaml:10:"},
		{"collection misspelt", base + `modles: []
`, "gw.yaml:6:1: modles: unknown collection; did you mean `models`?"},
		{"yaml syntax", base + "models: [\n", "gw.yaml:6: invalid YAML"},
		{"missing required field: the entry", base + `models:
  - display_name: g
    provider_key: oa
`, "gw.yaml:7:5: models[0] (display_name=g): "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Load([]byte(c.file), func(string) (string, bool) { return "", false })
			var got []string
			for _, e := range res.Errors {
				at := e.At("gw.yaml")
				if strings.HasPrefix(at, c.want) {
					return
				}
				got = append(got, at)
			}
			t.Fatalf("no error starts with\n  %s\ngot:\n  %s", c.want, strings.Join(got, "\n  "))
		})
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"allowed_models", "model_name", "kind", "id", "display_name"}
	for name, want := range map[string]string{
		"alowed_models": "allowed_models", "Allowed_Models": "allowed_models", "model_nmae": "model_name",
		"kidn": "kind", "id": "", "xyz": "", "displayname": "display_name", "colour": "",
	} {
		if got := suggest(name, known); got != want {
			t.Errorf("suggest(%q) = %q; want %q", name, got, want)
		}
	}
}
