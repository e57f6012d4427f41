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

// TestVertexBodyRulesUnenforced: the chat body rules run on vertex keys of
// the OpenAI-compatible endpoint only; on Gemini and Claude keys they are
// on the unenforced list.
func TestVertexBodyRulesUnenforced(t *testing.T) {
	src := `_format_version: "1"
provider_keys:
  - {display_name: gem, adapter: vertex, api_key: "${SA}", request: {param_renames: {user: u}}}
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
	if got["display_name=gem request.param_renames"] != missVertexReq || got["display_name=cl response.content_list_to_string"] != missVertexReq {
		t.Fatalf("gemini/claude rules not listed: %v", got)
	}
	if _, ok := got["display_name=llama request.param_renames"]; ok {
		t.Fatalf("openai-compatible rules listed: %v", got)
	}
}
