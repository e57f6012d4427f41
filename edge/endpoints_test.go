package edge

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/limiter"
	"gw/sse"
)

// TestReadEndpoint: the read stage's 400s for each endpoint's body shapes,
// and what passes.
func TestReadEndpoint(t *testing.T) {
	f := func(surf *surface, sp *endpointSpec, body, wantCode string) {
		t.Helper()
		var ctx fasthttp.RequestCtx
		ctx.Request.SetBody([]byte(body))
		c := &call{surf: surf}
		ok := readEndpoint(&ctx, c, sp)
		if wantCode == "" {
			if !ok {
				t.Errorf("%s: refused: %s", body, ctx.Response.Body())
			}
			return
		}
		if ok || ctx.Response.StatusCode() != 400 || !strings.Contains(string(ctx.Response.Body()), `"code":"`+wantCode+`"`) {
			t.Errorf("%s: %v %d %s; want 400 %s", body, ok, ctx.Response.StatusCode(), ctx.Response.Body(), wantCode)
		}
	}
	e, sE := surfEmbeddings, &specEmbeddings
	f(e, sE, `{"model":"m","input":"hi"}`, "")
	f(e, sE, `{"model":"m","input":["a","b"],"encoding_format":"base64","dimensions":256}`, "")
	f(e, sE, `{"model":"m","input":[1,2,3]}`, "")
	f(e, sE, `{"model":"m","input":[[1,2],[3]]}`, "")
	f(e, sE, `{"model":"m\u0031","input":"x","stream":false}`, "")
	f(e, sE, `{"input":"hi"}`, "missing_required_parameter")
	f(e, sE, `{"model":7,"input":"hi"}`, "invalid_type")
	f(e, sE, `{"model":"m"}`, "missing_required_parameter")
	f(e, sE, `{"model":"m","input":""}`, "invalid_type")
	f(e, sE, `{"model":"m","input":[]}`, "invalid_type")
	f(e, sE, `{"model":"m","input":["a",1]}`, "invalid_type")
	f(e, sE, `{"model":"m","input":[[]]}`, "invalid_type")
	f(e, sE, `{"model":"m","input":[1.5]}`, "invalid_type")
	f(e, sE, `{"model":"m","input":"a","encoding_format":"int8"}`, "invalid_value")
	f(e, sE, `{"model":"m","input":"a","dimensions":0}`, "invalid_value")
	f(e, sE, `{"model":"m","input":"a","stream":true}`, "invalid_value")
	f(e, sE, `{"model":"m","input":"a"`, "invalid_json")
	f(e, sE, `["m"]`, "invalid_json")
	f(surfCompletions, &specCompletions, `{"model":"m","prompt":"hi","stream":true,"stream_options":{"include_usage":true}}`, "")
	f(surfCompletions, &specCompletions, `{"model":"m","prompt":{"a":1}}`, "invalid_type")
	f(surfCompletions, &specCompletions, `{"model":"m","prompt":"x","stream":"yes"}`, "invalid_type")
	r, sR := surfRerank, &specRerank
	f(r, sR, `{"model":"m","query":"q","documents":["a",{"text":"b"}],"top_n":1,"return_documents":true}`, "")
	f(r, sR, `{"model":"m","documents":["a"]}`, "missing_required_parameter")
	f(r, sR, `{"model":"m","query":"q"}`, "missing_required_parameter")
	f(r, sR, `{"model":"m","query":"q","documents":[1]}`, "invalid_type")
	f(r, sR, `{"model":"m","query":"q","documents":["a"],"top_n":-1}`, "invalid_value")
	f(r, sR, `{"model":"m","query":"q","documents":["a"],"return_documents":1}`, "invalid_type")

	i, sI := surfImages, &specImages
	f(i, sI, `{"model":"m","prompt":"a cat","n":2,"stream":true,"partial_images":2}`, "")
	f(i, sI, `{"model":"m","prompt":""}`, "invalid_type")
	f(i, sI, `{"model":"m","prompt":"x","n":0}`, "invalid_value")
	f(i, sI, `{"model":"m","prompt":"x","partial_images":-1}`, "invalid_value")

	sp, sS := surfSpeech, &specSpeech
	f(sp, sS, `{"model":"m","input":"say","voice":"alloy","response_format":"wav","speed":1.2}`, "")
	f(sp, sS, `{"model":"m","input":"say","voice":{"id":"v1"},"stream_format":"sse"}`, "")
	f(sp, sS, `{"model":"m","input":"say"}`, "missing_required_parameter")
	f(sp, sS, `{"model":"m","input":"","voice":"alloy"}`, "invalid_type")
	f(sp, sS, `{"model":"m","input":"x","voice":"alloy","stream_format":"mp3"}`, "invalid_value")

	f(surfVideos, &specVideos, `{"model":"m","prompt":"a cat","seconds":"8","size":"720x1280"}`, "")
	f(surfVideos, &specVideos, `{"model":"m","prompt":3}`, "invalid_type")

	var ctx fasthttp.RequestCtx
	ctx.Request.SetBody([]byte(`{"model":"a\"b","prompt":"x","stream":true,"stream_options":{"include_usage":true}}`))
	c := &call{surf: surfCompletions}
	if !readEndpoint(&ctx, c, &specCompletions) || string(c.cr.Model) != `a"b` || !c.cr.Stream || !c.cr.IncludeUsage {
		t.Fatalf("read: %q %v %v", c.cr.Model, c.cr.Stream, c.cr.IncludeUsage)
	}
}

// TestEndpointPlanChecks: through the handler, an endpoint on a model
// that cannot serve it answers before any upstream call: 400 for the
// wrong kind of model, 501 for a provider without the capability, 405 for
// a GET.
func TestEndpointPlanChecks(t *testing.T) {
	src := `_format_version: "1"
provider_keys:
  - {display_name: oa, provider: openai, api_key: x, api_base: "http://127.0.0.1:1/v1"}
  - {display_name: an, provider: anthropic, api_key: x, api_base: "http://127.0.0.1:1/v1"}
api_keys:
  - {display_name: caller, key_env: CALLER, allowed_models: ["*"]}
models:
  - {display_name: gpt, provider: openai, model_name: m, provider_key: oa}
  - {display_name: emb, provider: openai, model_name: e, provider_key: oa, embedding: {dimensions: 4}}
  - {display_name: emb-an, provider: anthropic, model_name: e, provider_key: an, embedding: {dimensions: 4}}
  - {display_name: claude, provider: anthropic, model_name: c, provider_key: an}
`
	p := endpointsProxy(t, "http://127.0.0.1:1")
	p.Holder.Store(compileFile(t, src, map[string]string{"CALLER": "caller-key"}))
	f := func(method, path, body string, status int, code string) {
		t.Helper()
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod(method)
		ctx.Request.SetRequestURI(path)
		ctx.Request.Header.Set("Authorization", "Bearer caller-key")
		ctx.Request.SetBody([]byte(body))
		if !p.Handle(&ctx) {
			t.Fatalf("%s not handled", path)
		}
		if ctx.Response.StatusCode() != status || !strings.Contains(string(ctx.Response.Body()), `"code":"`+code+`"`) {
			t.Errorf("%s %s: %d %s; want %d %s", path, body, ctx.Response.StatusCode(), ctx.Response.Body(), status, code)
		}
	}
	f("POST", pathEmbeddings, `{"model":"gpt","input":"x"}`, 400, "model_not_embedding")
	f("POST", pathEmbeddings, `{"model":"emb-an","input":"x"}`, 501, "not_implemented")
	f("POST", pathEmbeddings, `{"model":"nope","input":"x"}`, 404, "model_not_found")
	f("POST", pathCompletions, `{"model":"emb","prompt":"x"}`, 400, "model_is_embedding")
	f("POST", pathCompletions, `{"model":"claude","prompt":"x"}`, 501, "not_implemented")
	f("POST", pathRerank, `{"model":"gpt","query":"q","documents":["d"]}`, 501, "not_implemented")
	f("GET", pathEmbeddings, ``, 405, "method_not_allowed")
}

// TestCompletionsEvent: the alias in every chunk, the forced usage chunk
// recorded and dropped, text and finish reasons as content, [DONE] as the
// end, an error chunk as a failure.
func TestCompletionsEvent(t *testing.T) {
	p := endpointsProxy(t, "http://127.0.0.1:1")
	c := &call{plan: p.Holder.Load().Plans["gpt"]}
	c.in.ForceUsage = true
	s := relayPool.Get().(*relayState)
	f := func(data string, wantFlags evFlags, wantOut string) {
		t.Helper()
		got := completionsEvent(s, c, sse.Event{Data: []byte(data)})
		if got != wantFlags || string(s.out) != wantOut {
			t.Errorf("%s: flags %b out %q; want %b %q", data, got, s.out, wantFlags, wantOut)
		}
	}
	f(`{"id":"c","object":"text_completion","model":"m","choices":[{"text":"Hi","index":0,"finish_reason":null}],"usage":null}`, evContent,
		"data: {\"id\":\"c\",\"object\":\"text_completion\",\"model\":\"gpt\",\"choices\":[{\"text\":\"Hi\",\"index\":0,\"finish_reason\":null}]}\n\n")
	f(`{"model":"m","choices":[{"text":"","index":0,"finish_reason":null}]}`, 0, "data: {\"model\":\"gpt\",\"choices\":[{\"text\":\"\",\"index\":0,\"finish_reason\":null}]}\n\n")
	f(`{"model":"m","choices":[{"text":"","index":0,"finish_reason":"stop"}]}`, evContent, "data: {\"model\":\"gpt\",\"choices\":[{\"text\":\"\",\"index\":0,\"finish_reason\":\"stop\"}]}\n\n")
	f(`{"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`, 0, "")
	if !c.haveUsage || c.usage.Total != 5 {
		t.Fatalf("usage %+v", c.usage)
	}
	f(`[DONE]`, evEnd, "data: [DONE]\n\n")
	f(`{"error":{"message":"boom"}}`, evEnd|evFailed, "data: {\"error\":{\"message\":\"boom\"}}\n\n")
	c.in.ForceUsage = false
	f(`{"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`, 0,
		"data: {\"model\":\"gpt\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}\n\n")
}

// TestImagesEvent: image events relayed unchanged; partial and completed
// images are content, completed ends the stream with its usage.
func TestImagesEvent(t *testing.T) {
	c := &call{}
	s := relayPool.Get().(*relayState)
	f := func(name, data string, want evFlags) {
		t.Helper()
		if got := imagesEvent(s, c, sse.Event{Name: []byte(name), Data: []byte(data)}); got != want {
			t.Errorf("%s: flags %b; want %b", name, got, want)
		}
		if wantOut := "event: " + name + "\ndata: " + data + "\n\n"; name != "" && string(s.out) != wantOut {
			t.Errorf("%s: out %q", name, s.out)
		}
	}
	f("image_generation.partial_image", `{"type":"image_generation.partial_image","b64_json":"AA=="}`, evContent)
	f("", `{"type":"image_generation.partial_image","b64_json":"AA=="}`, evContent)
	f("image_generation.completed", `{"type":"image_generation.completed","b64_json":"AA==","usage":{"input_tokens":5,"output_tokens":7,"total_tokens":12}}`, evContent|evEnd)
	if c.usage.Prompt != 5 || c.usage.Completion != 7 || c.usage.Total != 12 {
		t.Fatalf("usage %+v", c.usage)
	}
	f("error", `{"type":"error","error":{"message":"x"}}`, evEnd|evFailed)
	f("keepalive", `{}`, 0)
}

// TestSpeechEvent: audio deltas are content; done ends with its usage.
func TestSpeechEvent(t *testing.T) {
	c := &call{}
	s := relayPool.Get().(*relayState)
	if f := speechEvent(s, c, sse.Event{Data: []byte(`{"type":"speech.audio.delta","audio":"AAA="}`)}); f != evContent {
		t.Fatalf("delta: %b", f)
	}
	if f := speechEvent(s, c, sse.Event{Data: []byte(`{"type":"speech.audio.done","usage":{"input_tokens":3,"output_tokens":4,"total_tokens":7}}`)}); f != evContent|evEnd || c.usage.Total != 7 {
		t.Fatalf("done: %b %+v", f, c.usage)
	}
	if f := speechEvent(s, c, sse.Event{Data: []byte(`{"error":{"message":"x"}}`)}); f != evEnd|evFailed {
		t.Fatalf("error: %b", f)
	}
}

// TestEmbeddingsTokenReservation: an embeddings request reserves its
// prompt estimate only (no completion budget), so a small tpm lets it
// through where a chat body of the same size reserves the default output
// budget and is refused.
func TestEmbeddingsTokenReservation(t *testing.T) {
	src := `_format_version: "1"
provider_keys:
  - {display_name: oa, provider: openai, api_key: x, api_base: "${BASE}/v1"}
api_keys:
  - {display_name: caller, key_env: CALLER, allowed_models: ["*"], rate_limit: {tpm: 1000}}
models:
  - {display_name: gpt, provider: openai, model_name: m, provider_key: oa}
  - {display_name: emb, provider: openai, model_name: e, provider_key: oa, embedding: {dimensions: 4}}
`
	p := endpointsProxy(t, "http://127.0.0.1:1")
	p.Holder.Store(compileFile(t, src, map[string]string{"CALLER": "caller-key", "BASE": fixedUpstream(t)}))
	p.Limiter = limiter.New(limiter.Config{})
	defer p.Limiter.Close()
	f := func(path, body string, want int) {
		t.Helper()
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI(path)
		ctx.Request.Header.Set("Authorization", "Bearer caller-key")
		ctx.Request.SetBody([]byte(body))
		p.Handle(&ctx)
		if ctx.Response.StatusCode() != want {
			t.Fatalf("%s: %d %s; want %d", path, ctx.Response.StatusCode(), ctx.Response.Body(), want)
		}
	}
	f(pathEmbeddings, `{"model":"emb","input":"hello"}`, 200)
	f(pathChat, `{"model":"gpt","messages":[{"role":"user","content":"hello"}]}`, 429)
}
