//go:build !race

package edge

import (
	"testing"

	"github.com/valyala/fasthttp"

	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/guard/kinds"
)

// TestInputPolicyAllocs: the input policy stage with a keyword + pii chain
// attached allocates nothing when nothing matches, and nothing at all when
// no guardrail is attached.
func TestInputPolicyAllocs(t *testing.T) {
	src := `_format_version: "1"
provider_keys: [{display_name: k, api_key: x, api_base: "http://127.0.0.1:1/v1"}]
api_keys: [{display_name: dev, key_env: K, allowed_models: ["*"], team_id: t1}]
models:
  - {display_name: gpt, provider: openai, model_name: m, provider_key: k}
  - {display_name: bare, provider: openai, model_name: m, provider_key: k}
guardrails:
  - {name: kw, kind: keyword, patterns: [{kind: literal, value: zebra}, {kind: regex, value: 'secret-\d+'}]}
  - {name: mail, kind: pii}
guardrail_attachments:
  - {guardrail_id: kw, scope_type: model, scope_id: gpt}
  - {guardrail_id: mail, scope_type: api_key, scope_id: dev}
`
	r := resources.Load([]byte(src), func(string) (string, bool) { return "v", true })
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	opt := snapshot.DefaultOptions()
	opt.Guardrails = kinds.Table()
	s, err := snapshot.Compile(r.Resources, opt)
	if err != nil {
		t.Fatal(err)
	}
	body := benchBody // a realistic chat body (edge_timing_test.go)
	var ctx fasthttp.RequestCtx
	p := &Proxy{}
	c := &call{surf: surfChat, snap: s, caller: s.CallersByName["dev"], body: body}
	for _, alias := range []string{"gpt", "bare"} {
		c.plan = s.Plans[alias]
		run := func() {
			if !p.inputPolicy(&ctx, c) {
				t.Fatalf("blocked: %s", ctx.Response.Body())
			}
			c.g.reset()
		}
		run() // warm the buffers
		if n := testing.AllocsPerRun(200, run); n != 0 {
			t.Fatalf("%s: inputPolicy allocates %.1f; want 0", alias, n)
		}
	}
	// Without any attachment the stage is three nil checks.
	c.caller = &snapshot.Caller{Key: c.caller.Key}
	c.plan = s.Plans["bare"]
	if p.inputPolicy(&ctx, c); c.g.on {
		t.Fatal("a request with nothing attached ran the engine")
	}
}
