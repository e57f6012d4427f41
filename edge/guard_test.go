package edge

import (
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters/upstream"
	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/guard/kinds"
	"gw/edge/usage"
)

// TestGuardUsageOutcome: the final usage record carries the guardrail
// outcome (applied, enforced and monitor hits, bypass, fail-closed), and
// an input mask reaches the upstream.
func TestGuardUsageOutcome(t *testing.T) {
	base := startMock(t)
	src := `_format_version: "1"
provider_keys:
  - {display_name: good, api_key: "k", api_base: "` + base + `/v1"}
api_keys:
  - {display_name: caller, key_env: CALLER, allowed_models: ["*"], team_id: t1}
models:
  - {display_name: m, provider: openai, model_name: m-up, provider_key: good}
  - {display_name: closed, provider: openai, model_name: m-up, provider_key: good}
  - {display_name: open, provider: openai, model_name: m-up, provider_key: good}
guardrails:
  - {name: mon, kind: keyword, enforcement_mode: monitor, hook_point: input, patterns: [{kind: literal, value: zebra}]}
  - {name: mail, kind: pii, hook_point: input}
  - {name: remote, kind: azure_content_safety, endpoint: "https://cs.example.com", api_key: x}
  - {name: remote-open, kind: azure_content_safety, endpoint: "https://cs.example.com", api_key: x, fail_open: true, hook_point: input}
guardrail_attachments:
  - {guardrail_id: mon, scope_type: model, scope_id: m}
  - {guardrail_id: mail, scope_type: team, scope_id: t1}
  - {guardrail_id: remote, scope_type: model, scope_id: closed}
  - {guardrail_id: remote-open, scope_type: model, scope_id: open}
`
	r := resources.Load([]byte(src), func(k string) (string, bool) { return "caller-key", true })
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	opt := snapshot.DefaultOptions()
	opt.Pool = upstream.NewPool(upstream.Options{})
	// azure_content_safety stands for a kind this build lacks: attached, it
	// must answer per its fail-open settings.
	table := kinds.Table()
	delete(table, resources.GuardrailAzureContentSafety)
	opt.Guardrails = table
	s, err := snapshot.Compile(r.Resources, opt)
	if err != nil {
		t.Fatal(err)
	}
	h := &snapshot.Holder{}
	h.Store(s)
	sink := &collectSink{}
	us := NewUsageStream()
	us.SetSinks([]usage.SinkSpec{sink.spec()})
	defer us.Close(time.Second)
	p := &Proxy{Holder: h, Usage: us}
	do := func(model, text string) *fasthttp.RequestCtx {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI("/v1/chat/completions")
		ctx.Request.Header.Set("Authorization", "Bearer caller-key")
		ctx.Request.SetBody([]byte(`{"model":"` + model + `","messages":[{"role":"user","content":"` + text + `"}]}`))
		p.Handle(&ctx)
		return &ctx
	}
	if ctx := do("m", "a zebra wrote to jo@example.com"); ctx.Response.StatusCode() != 200 {
		t.Fatalf("status %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	if ctx := do("closed", "hi"); ctx.Response.StatusCode() != 422 || !strings.Contains(string(ctx.Response.Body()), `"guardrail_unavailable"`) {
		t.Fatalf("closed: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	if ctx := do("open", "hi"); ctx.Response.StatusCode() != 200 {
		t.Fatalf("open: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	evs := sink.wait(t, 3)
	f := evs[0]
	if strings.Join(f.AppliedGuardrails, ",") != "mon,mail" || len(f.GuardrailMonitorHits) != 1 || f.GuardrailMonitorHits[0].Action != "would_block" ||
		len(f.GuardrailEnforcedHits) != 1 || f.GuardrailEnforcedHits[0].Guardrail != "mail" || f.GuardrailEnforcedHits[0].Action != "mask" {
		t.Fatalf("outcome: %+v", f)
	}
	if c := evs[1]; !c.GuardrailBlockedFailClosed || c.StatusCode != 422 || c.ErrorClass != "guardrail_unavailable" {
		t.Fatalf("closed: %+v", c)
	}
	if o := evs[2]; o.GuardrailBypassedReason != "kind_not_built" || o.StatusCode != 200 {
		t.Fatalf("open: %+v", o)
	}
}
