package kinds

import (
	"os"
	"strings"
	"testing"

	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/guard"
)

var exampleEnv = map[string]string{"OPENAI_API_KEY": "o", "ANTHROPIC_API_KEY": "a", "DEMO_CALLER_KEY": "k1", "DEMO_TEAM_KEY": "k2",
	"DEMO_OIDC_HMAC": "demo-hmac-secret-at-least-32-bytes-long", "MOCK_BASE": "http://127.0.0.1:9999",
	"BEDROCK_CREDENTIALS": `{"access_key_id":"a","secret_access_key":"b","region":"us-east-1"}`}

func load(t *testing.T, data string) *resources.Resources {
	t.Helper()
	res := resources.Load([]byte(data), func(k string) (string, bool) {
		if v, ok := exampleEnv[k]; ok {
			return v, true
		}
		return "x", true
	})
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	return res.Resources
}

// TestExampleGuardrails: with the kinds table every guardrail of
// examples/gw.yaml compiles and none is on the unenforced list; the chains
// hang on the alias, the key and the team they are attached to.
func TestExampleGuardrails(t *testing.T) {
	data, err := os.ReadFile("../../../examples/gw.yaml")
	if err != nil {
		t.Fatal(err)
	}
	opt := snapshot.DefaultOptions()
	opt.Guardrails = Table()
	s, err := snapshot.Compile(load(t, string(data)), opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range s.Unenforced {
		if u.Collection == resources.CollGuardrails || u.Collection == resources.CollGuardrailAttachments {
			t.Errorf("unenforced: %v", u)
		}
	}
	if guard.Of(s.Plans["gpt-4o"].Guard).Empty() {
		t.Error("gpt-4o has no chain")
	}
	if guard.Of(s.CallersByName["demo"].Guard).Empty() {
		t.Error("the demo key has no chain")
	}
	if guard.Of(s.CallersByName["team-a"].TeamGuard).Empty() {
		t.Error("team-a's key has no team chain")
	}
}

// TestCompileErrorFailsLoad: a custom script that does not compile fails
// the snapshot with the entry named; a kind not built stays listed.
func TestCompileErrorFailsLoad(t *testing.T) {
	base := `_format_version: "1"
provider_keys: [{display_name: k, api_key: x, api_base: "http://127.0.0.1:1/v1"}]
api_keys: [{display_name: dev, key_env: K, allowed_models: ["*"]}]
models: [{display_name: gpt, provider: openai, model_name: m, provider_key: k}]
guardrail_attachments: [{guardrail_id: g, scope_type: model, scope_id: gpt}]
guardrails:
`
	opt := snapshot.DefaultOptions()
	opt.Guardrails = Table()
	_, err := snapshot.Compile(load(t, base+"  - {name: g, kind: custom, script: \"export function checkInput( {\"}\n"), opt)
	if err == nil || !strings.Contains(err.Error(), "guardrails[0] (name=g)") {
		t.Fatalf("compile error: %v", err)
	}
	// A kind missing from the table (every kind is built today: one is
	// taken out) is unenforced and still on the chain.
	opt.Guardrails = Table()
	delete(opt.Guardrails.(guard.Table), resources.GuardrailAzureContentSafety)
	s, err := snapshot.Compile(load(t, base+"  - {name: g, kind: azure_content_safety, endpoint: \"https://cs.example.com\", api_key: k}\n"), opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Unenforced) != 1 || !strings.Contains(s.Unenforced[0].Missing, "kind azure_content_safety is not built") {
		t.Fatalf("unenforced: %v", s.Unenforced)
	}
	if guard.Of(s.Plans["gpt"].Guard).Empty() {
		t.Fatal("a kind not built must still be on the chain (it answers per fail_open)")
	}
}
