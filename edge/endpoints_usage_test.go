package edge

import (
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"gw/admin/snapshot"
	"gw/edge/usage"
)

// TestEndpointUsageRecords: an embeddings call records its tokens and
// cost; a video task records its creation, then exactly one record when
// a poll first sees it completed (cost from its seconds); polls and the
// download record nothing of their own.
func TestEndpointUsageRecords(t *testing.T) {
	base := startMock(t)
	src := `_format_version: "1"
provider_keys:
  - {display_name: oa, api_key: "${K}", api_base: "${BASE}/v1"}
api_keys:
  - {display_name: caller, key_env: CALLER, allowed_models: ["*"]}
models:
  - {display_name: emb, provider: openai, model_name: text-embedding-3-small, provider_key: oa, embedding: {dimensions: 8}, cost: {input_per_1k: 1, output_per_1k: 0}}
  - {display_name: sora, provider: openai, model_name: sora-2, provider_key: oa, cost: {input_per_1k: 0, output_per_1k: 100}}
`
	h := &snapshot.Holder{}
	h.Store(compileFile(t, src, map[string]string{"K": "sk", "CALLER": "caller-key", "BASE": base}))
	sink := &collectSink{}
	us := NewUsageStream()
	us.SetSinks([]usage.SinkSpec{sink.spec()})
	defer us.Close(usageGrace)
	p := &Proxy{Holder: h, Usage: us}
	do := func(method, path, body string) *fasthttp.RequestCtx {
		t.Helper()
		ctx := &fasthttp.RequestCtx{}
		ctx.Request.Header.SetMethod(method)
		ctx.Request.SetRequestURI(path)
		ctx.Request.Header.Set("Authorization", "Bearer caller-key")
		ctx.Request.SetBody([]byte(body))
		p.Handle(ctx)
		if ctx.Response.StatusCode() != 200 {
			t.Fatalf("%s %s: %d %s", method, path, ctx.Response.StatusCode(), ctx.Response.Body())
		}
		if ctx.Response.IsBodyStream() { // the download: fasthttp writes and closes it
			var w strings.Builder
			ctx.Response.BodyWriteTo(&w)
			ctx.Response.Reset()
		}
		return ctx
	}
	do("POST", pathEmbeddings, `{"model":"emb","input":"hello embeddings"}`)
	e := sink.wait(t, 1)[0]
	if e.Operation != "embeddings" || e.InboundProtocol != "embeddings" || e.PromptTokens == 0 || e.TotalTokens != e.PromptTokens || e.CostUSD <= 0 || e.Model != "emb" {
		t.Fatalf("embeddings record: %+v", e)
	}

	ctx := do("POST", pathVideos, `{"model":"sora","prompt":"a cat","seconds":"8"}`)
	id := string(ctx.Response.Body())
	id = id[strings.Index(id, `"id":"`)+6:]
	id = id[:strings.IndexByte(id, '"')]
	for range 4 { // completed on the third poll
		do("GET", pathVideos+"/"+id, "")
	}
	do("GET", pathVideos+"/"+id+"/content", "")
	evs := sink.wait(t, 3)
	time.Sleep(50 * time.Millisecond)
	sink.mu.Lock()
	evs = append([]UsageEvent(nil), sink.evs...)
	sink.mu.Unlock()
	if len(evs) != 3 {
		t.Fatalf("%d records; want embeddings, videos.create, videos.completed: %+v", len(evs), evs)
	}
	if evs[1].Operation != "videos.create" || evs[1].StatusCode != 200 {
		t.Fatalf("create record: %+v", evs[1])
	}
	if c := evs[2]; c.Operation != "videos.completed" || c.Model != "sora" || c.ProviderKey != "oa" || c.CostUSD < 0.79 || c.CostUSD > 0.81 {
		t.Fatalf("completed record: %+v", c)
	}
}
