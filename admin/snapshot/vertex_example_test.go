package snapshot

import (
	"os"
	"testing"

	"gw/admin/resources"
)

// examples/gw.yaml has a vertex key whose credential `make run` exports as
// VERTEX_SA: the test service account (a key generated for tests only).
func init() {
	b, err := os.ReadFile("../../perf/mock/testdata/vertex_service_account.json")
	if err != nil {
		panic(err)
	}
	exampleEnv["VERTEX_SA"] = string(b)
}

// TestVertexBodyRulesUnenforced: the body rules run on every vertex key
// but content_list_to_string on Gemini keys (parts have no string form),
// the one item listed.
func TestVertexBodyRulesUnenforced(t *testing.T) {
	src := `_format_version: "1"
provider_keys:
  - {display_name: gem, adapter: vertex, api_key: "${SA}", request: {param_renames: {user: u}}, response: {content_list_to_string: true}}
  - {display_name: cl, adapter: vertex, provider: anthropic, api_key: "${SA}", response: {content_list_to_string: true}}
  - {display_name: llama, adapter: vertex, provider: meta, api_key: "${SA}", request: {param_renames: {user: u}}}
`
	r := resources.Load([]byte(src), func(k string) (string, bool) { return exampleEnv["VERTEX_SA"], k == "SA" })
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	s, err := Compile(r.Resources, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, u := range s.Unenforced {
		if u.Collection == resources.CollProviderKeys {
			got[u.Entry+" "+u.Field] = u.Missing
		}
	}
	want := map[string]string{"display_name=gem response.content_list_to_string": geminiFlatten}
	if len(got) != len(want) || got["display_name=gem response.content_list_to_string"] != geminiFlatten {
		t.Fatalf("got %v; want %v", got, want)
	}
}
