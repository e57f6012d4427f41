package edge

import (
	"sync"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/admin/snapshot"
)

// ensembleProxy serves `panel` (three members and a judge, all on the
// mock) next to the direct model `gpt` they are made of.
func ensembleProxy(tb testing.TB, mockBase string) *Proxy {
	tb.Helper()
	env := map[string]string{"K": "sk-upstream", "CALLER": "caller-key", "BASE": mockBase}
	src := `_format_version: "1"
provider_keys:
  - {display_name: oa, api_key: "${K}", api_base: "${BASE}/v1"}
api_keys:
  - {display_name: caller, key_env: CALLER, allowed_models: ["*"]}
models:
  - {display_name: gpt, provider: openai, model_name: gpt-4o, provider_key: oa}
  - {display_name: mini, provider: openai, model_name: gpt-4o-mini, provider_key: oa}
  - display_name: panel
    ensemble:
      panel: [{model: gpt, temperature: 0.2}, {model: mini, seed: 3}, {model: gpt}]
      judge: {model: gpt}
      timeout_ms: 10000
`
	h := &snapshot.Holder{}
	h.Store(compileFile(tb, src, env))
	return &Proxy{Holder: h}
}

func newChatCtx(body []byte) *fasthttp.RequestCtx {
	ctx := new(fasthttp.RequestCtx)
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/chat/completions")
	ctx.Request.Header.Set("Authorization", "Bearer caller-key")
	ctx.Request.SetBody(body)
	return ctx
}

var ensembleBody = []byte(`{"model":"panel","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Say hello to the benchmark."}],"temperature":0.7}`)

// BenchmarkEnsembleHandler: one buffered request to a three-member
// ensemble through the whole handler (members concurrently, then the
// judge; four upstream round trips over loopback to the mock). Compare
// with BenchmarkEnsembleBaseline, the same four calls made as direct
// requests in the same shape: the difference is the ensemble's own
// overhead (member bodies, private contexts, goroutines, collection, the
// judge body, the records).
func BenchmarkEnsembleHandler(b *testing.B) {
	p := ensembleProxy(b, startMock(b))
	ctx := newChatCtx(ensembleBody)
	if !p.Handle(ctx) || ctx.Response.StatusCode() != 200 {
		b.Fatalf("warm-up: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	b.ReportAllocs()
	for b.Loop() {
		ctx.Response.Reset()
		p.Handle(ctx)
		if ctx.Response.StatusCode() != 200 {
			b.Fatalf("status %d", ctx.Response.StatusCode())
		}
	}
}

// BenchmarkEnsembleBaseline: three concurrent direct requests, then a
// fourth — the upstream work of one ensemble request without the
// ensemble.
func BenchmarkEnsembleBaseline(b *testing.B) {
	p := ensembleProxy(b, startMock(b))
	direct := []byte(`{"model":"gpt","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Say hello to the benchmark."}],"temperature":0.7}`)
	ctxs := [4]*fasthttp.RequestCtx{newChatCtx(direct), newChatCtx(direct), newChatCtx(direct), newChatCtx(direct)}
	run := func(ctx *fasthttp.RequestCtx) {
		ctx.Response.Reset()
		p.Handle(ctx)
		if ctx.Response.StatusCode() != 200 {
			b.Errorf("status %d", ctx.Response.StatusCode())
		}
	}
	run(ctxs[3])
	b.ReportAllocs()
	var wg sync.WaitGroup
	for b.Loop() {
		for i := range 3 {
			wg.Add(1)
			go func() { defer wg.Done(); run(ctxs[i]) }()
		}
		wg.Wait()
		run(ctxs[3])
	}
}

// BenchmarkEnsembleBodies: the ensemble's own body work per request with
// three members: their bodies, reading their answers, the judge's body.
func BenchmarkEnsembleBodies(b *testing.B) {
	ems := []snapshot.EnsembleMember{{Temperature: []byte("0.2")}, {Seed: []byte("3")}, {}}
	answer := []byte(`{"id":"c","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Hello, benchmark! Here is a short answer with a few words in it."},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":14,"total_tokens":34}}`)
	ms := make([]member, len(ems))
	var judge []byte
	var jtmp [2][]byte
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	for b.Loop() {
		for i := range ms {
			ms[i].body = memberBody(ms[i].body[:0], &ms[i].scratch, benchBody, &ems[i])
			ms[i].text, ms[i].ok = answerText(ms[i].text[:0], answer)
		}
		var err error
		if judge, err = judgeBody(judge[:0], &jtmp, benchBody, "", ms); err != nil {
			b.Fatal(err)
		}
	}
}
