package main

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	"gw/perf/mock"
)

// endpointsFile: embedding models (one on a key that always answers 503,
// grouped with a healthy one for failover; one on an Anthropic key, which
// has no embeddings: 501; one with an input guardrail), a chat model for
// /v1/completions, and rerank models on a Jina-style key and on a
// first-party OpenAI key (no /rerank: 501).
const endpointsFile = `_format_version: "1"
provider_keys:
  - display_name: oa
    provider: openai
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${EP_MOCK}/v1
    request: {forward_client_headers: ["x-mock-*"]}
  - display_name: oa-down
    provider: openai
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${EP_MOCK}/knobs/status=503/v1
  - display_name: jina
    provider: jina
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${EP_MOCK}/v1
  - display_name: claude-key
    provider: anthropic
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${EP_MOCK}/v1
api_keys:
  - display_name: dev
    key_env: E2E_CALLER_KEY
    allowed_models: ["*"]
models:
  - {display_name: emb, provider: openai, model_name: text-embedding-3-small, provider_key: oa, embedding: {dimensions: 1536}, cost: {input_per_1k: 0.00002, output_per_1k: 0}}
  - {display_name: emb-down, provider: openai, model_name: text-embedding-3-small, provider_key: oa-down, embedding: {dimensions: 1536}}
  - display_name: emb-group
    routing:
      strategy: failover
      targets: [{model: emb-down, priority: 1}, {model: emb}]
  - {display_name: emb-claude, provider: anthropic, model_name: claude-embed, provider_key: claude-key, embedding: {dimensions: 8}}
  - {display_name: emb-guard, provider: openai, model_name: text-embedding-3-small, provider_key: oa, embedding: {dimensions: 1536}}
  - {display_name: gpt, provider: openai, model_name: gpt-3.5-turbo-instruct, provider_key: oa}
  - {display_name: rr, provider: jina, model_name: jina-reranker-v2-base-multilingual, provider_key: jina}
  - {display_name: rr-openai, provider: openai, model_name: some-reranker, provider_key: oa}
  - {display_name: sora, provider: openai, model_name: sora-2, provider_key: oa, cost: {input_per_1k: 0, output_per_1k: 100}}
  - {display_name: sora-group, routing: {targets: [{model: sora}]}}
guardrails:
  - name: in-words
    kind: keyword
    hook_point: input
    patterns: [{kind: literal, value: forbidden-word}]
guardrail_attachments:
  - {guardrail_id: in-words, scope_type: model, scope_id: emb-guard}
`

func startEndpoints(t *testing.T) (*mock.Server, string, openai.Client) {
	t.Helper()
	m := startMock(t, "EP_MOCK", mock.Config{})
	g := startGW(t, writeTemp(t, "endpoints.yaml", endpointsFile))
	t.Cleanup(func() {
		if log := g.stderr.String(); strings.Contains(log, "DATA RACE") || strings.Contains(log, "panic:") {
			t.Errorf("gw reported a race or a panic:\n%s", log)
		}
	})
	base := "http://" + g.addr + "/v1"
	return m, base, openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))
}

func sameVector(t *testing.T, got []float64, input string, dims int) {
	t.Helper()
	want := mock.Embedding([]byte(input), dims)
	if len(got) != dims {
		t.Fatalf("vector of %q: %d dimensions; want %d", input, len(got), dims)
	}
	for i := range want {
		if float32(got[i]) != want[i] {
			t.Fatalf("vector of %q differs at %d: %v; want %v", input, i, got[i], want[i])
		}
	}
}

// TestEndpointsEmbeddings: every input shape through the SDK, the alias
// echoed, the upstream model and the caller's fields relayed, base64
// relayed undecoded, failover within a group, 400 on a chat model, 501 on a
// provider without embeddings, a guardrail block on the input.
func TestEndpointsEmbeddings(t *testing.T) {
	m, base, client := startEndpoints(t)
	ctx := context.Background()

	resp, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "emb",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hello world")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Model != "emb" || len(resp.Data) != 1 || resp.Usage.PromptTokens == 0 || resp.Usage.TotalTokens == 0 {
		t.Fatalf("answer: %+v", resp)
	}
	sameVector(t, resp.Data[0].Embedding, "hello world", 1536)
	last := lastRequest(m)
	if last.Path != "/v1/embeddings" || last.Header.Get("Authorization") != "Bearer sk-e2e" || !strings.Contains(last.Body, `"model":"text-embedding-3-small"`) {
		t.Fatalf("upstream request: %s %v %s", last.Path, last.Header, last.Body)
	}

	resp, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "emb", Dimensions: openai.Int(8),
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}}})
	if err != nil || len(resp.Data) != 2 {
		t.Fatalf("array: %v %+v", err, resp)
	}
	sameVector(t, resp.Data[0].Embedding, "a", 8)
	sameVector(t, resp.Data[1].Embedding, "b", 8)
	if !strings.Contains(lastRequest(m).Body, `"dimensions":8`) {
		t.Fatalf("dimensions not relayed: %s", lastRequest(m).Body)
	}
	resp, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "emb", Dimensions: openai.Int(4),
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokenArrays: [][]int64{{1, 2, 3}, {4}}}})
	if err != nil || len(resp.Data) != 2 {
		t.Fatalf("token arrays: %v %+v", err, resp)
	}
	sameVector(t, resp.Data[0].Embedding, "[1,2,3]", 4)

	// base64: relayed as the upstream wrote it (little-endian float32).
	raw := postRaw(t, base+"/embeddings", `{"model":"emb","input":"hello world","encoding_format":"base64","dimensions":16}`)
	var b64 struct {
		Model string `json:"model"`
		Data  []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(raw), &b64); err != nil || b64.Model != "emb" || len(b64.Data) != 1 {
		t.Fatalf("base64 answer: %v %s", err, raw)
	}
	bs, err := base64.StdEncoding.DecodeString(b64.Data[0].Embedding)
	if err != nil || len(bs) != 16*4 {
		t.Fatalf("base64 vector: %v %d bytes", err, len(bs))
	}
	for i, w := range mock.Embedding([]byte("hello world"), 16) {
		if math.Float32frombits(binary.LittleEndian.Uint32(bs[4*i:])) != w {
			t.Fatalf("base64 vector differs at %d", i)
		}
	}

	// Failover: the preferred target answers 503, the next one serves.
	n := len(m.Requests())
	resp, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "emb-group",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("failover")}})
	if err != nil || resp.Model != "emb-group" {
		t.Fatalf("group: %v %+v", err, resp)
	}
	sameVector(t, resp.Data[0].Embedding, "failover", 1536)
	reqs := m.Requests()[n:]
	if len(reqs) != 2 || reqs[0].Path != "/knobs/status=503/v1/embeddings" || reqs[1].Path != "/v1/embeddings" {
		t.Fatalf("group attempts: %+v", reqs)
	}

	// Capability and kind errors, before any upstream call.
	n = len(m.Requests())
	in := openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}
	_, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "emb-claude", Input: in})
	apiErr(t, err, http.StatusNotImplemented, "not_implemented")
	_, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "gpt", Input: in})
	apiErr(t, err, http.StatusBadRequest, "model_not_embedding")
	_, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "emb-guard",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"fine", "a forbidden-word here"}}})
	apiErr(t, err, http.StatusUnprocessableEntity, "content_filter")
	_, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "emb", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{}}})
	apiErr(t, err, http.StatusBadRequest, "invalid_type")
	if got := len(m.Requests()); got != n {
		t.Fatalf("%d upstream calls for refused requests", got-n)
	}
	// Token IDs cannot be judged: the keyword guardrail (fail_open false) refuses them.
	_, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "emb-guard",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokens: []int64{1, 2}}})
	apiErr(t, err, http.StatusUnprocessableEntity, "guardrail_unavailable")
	// A clean input passes the guardrail.
	if _, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "emb-guard", Input: in}); err != nil {
		t.Fatal(err)
	}
}

// TestEndpointsCompletions: legacy completions buffered and streamed, the
// alias echoed in every chunk, usage asked upstream and its chunk dropped
// when the caller did not ask for it.
func TestEndpointsCompletions(t *testing.T) {
	m, base, client := startEndpoints(t)
	ctx := context.Background()
	params := openai.CompletionNewParams{Model: "gpt", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Say hi")}}
	c, err := client.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "gpt" || len(c.Choices) != 1 || c.Choices[0].Text == "" || c.Usage.TotalTokens == 0 {
		t.Fatalf("completion: %+v", c)
	}
	if last := lastRequest(m); last.Path != "/v1/completions" || !strings.Contains(last.Body, `"model":"gpt-3.5-turbo-instruct"`) {
		t.Fatalf("upstream request: %s %s", last.Path, last.Body)
	}

	st := client.Completions.NewStreaming(ctx, params)
	var text strings.Builder
	chunks := 0
	for st.Next() {
		ch := st.Current()
		chunks++
		if ch.Model != "gpt" {
			t.Fatalf("chunk model %q", ch.Model)
		}
		if len(ch.Choices) == 0 {
			t.Fatalf("usage chunk relayed though the caller did not ask for it: %+v", ch)
		}
		text.WriteString(ch.Choices[0].Text)
	}
	if err := st.Err(); err != nil || text.String() != c.Choices[0].Text {
		t.Fatalf("stream: %v %q; want %q", err, text.String(), c.Choices[0].Text)
	}
	if !strings.Contains(lastRequest(m).Body, `"include_usage":true`) {
		t.Fatalf("usage not asked upstream: %s", lastRequest(m).Body)
	}

	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	st = client.Completions.NewStreaming(ctx, params)
	var usage int64
	for st.Next() {
		if u := st.Current().Usage; u.TotalTokens > 0 {
			usage = u.TotalTokens
		}
	}
	if st.Err() != nil || usage == 0 {
		t.Fatalf("stream with usage: %v usage %d", st.Err(), usage)
	}

	// An upstream error mid-stream reaches the caller in-band.
	out := postRaw(t, base+"/completions", `{"model":"gpt","prompt":"x","stream":true}`, "x-mock-stream-error-after", "2")
	if !strings.Contains(out, `"error"`) || strings.Contains(out, "[DONE]") {
		t.Fatalf("mid-stream error: %s", out)
	}
	// An embedding model does not complete.
	_, err = client.Completions.New(ctx, openai.CompletionNewParams{Model: "emb", Prompt: params.Prompt})
	apiErr(t, err, http.StatusBadRequest, "model_is_embedding")
}

// TestEndpointsRerank: the Cohere/Jina shape through gw (the SDK has no
// rerank), top_n and return_documents relayed; 501 on a first-party OpenAI
// key.
func TestEndpointsRerank(t *testing.T) {
	m, base, _ := startEndpoints(t)
	body := `{"model":"rr","query":"fast cars","documents":["red apples","sports cars are fast",{"text":"bananas"}],"top_n":2,"return_documents":true}`
	req, _ := http.NewRequest("POST", base+"/rerank", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer caller-e2e")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var rr struct {
		Model   string `json:"model"`
		Results []struct {
			Index    int     `json:"index"`
			Score    float64 `json:"relevance_score"`
			Document struct {
				Text string `json:"text"`
			} `json:"document"`
		} `json:"results"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(raw, &rr) != nil || rr.Model != "rr" || len(rr.Results) != 2 ||
		rr.Results[0].Score < rr.Results[1].Score || rr.Results[0].Document.Text == "" {
		t.Fatalf("rerank: %d %s", resp.StatusCode, raw)
	}
	if last := lastRequest(m); last.Path != "/v1/rerank" || !strings.Contains(last.Body, `"top_n":2`) || !strings.Contains(last.Body, `"model":"jina-reranker-v2-base-multilingual"`) {
		t.Fatalf("upstream request: %s %s", last.Path, last.Body)
	}
	out := postRaw(t, base+"/rerank", `{"model":"rr-openai","query":"q","documents":["d"]}`)
	if !strings.Contains(out, `"code":"not_implemented"`) {
		t.Fatalf("rerank on openai: %s", out)
	}
	out = postRaw(t, base+"/rerank", `{"model":"rr","query":"q","documents":[]}`)
	if !strings.Contains(out, `"code":"invalid_type"`) {
		t.Fatalf("empty documents: %s", out)
	}
}

// TestEndpointsImages: image generation buffered (b64_json and url) and
// streamed (partial images, then completed with usage) through the SDK;
// the prompt passes the input guardrails.
func TestEndpointsImages(t *testing.T) {
	m, base, client := startEndpoints(t)
	ctx := context.Background()
	params := openai.ImageGenerateParams{Model: "gpt", Prompt: "a red square", N: openai.Int(2)}
	res, err := client.Images.Generate(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 2 || res.Data[0].B64JSON != mock.MockPNG || res.Data[0].RevisedPrompt != "a red square" || res.Usage.TotalTokens == 0 {
		t.Fatalf("images: %+v", res)
	}
	if last := lastRequest(m); last.Path != "/v1/images/generations" || !strings.Contains(last.Body, `"model":"gpt-3.5-turbo-instruct"`) {
		t.Fatalf("upstream request: %s %s", last.Path, last.Body)
	}
	res, err = client.Images.Generate(ctx, openai.ImageGenerateParams{Model: "gpt", Prompt: "x", ResponseFormat: openai.ImageGenerateParamsResponseFormatURL})
	if err != nil || len(res.Data) != 1 || !strings.HasPrefix(res.Data[0].URL, "https://") {
		t.Fatalf("url: %v %+v", err, res)
	}

	params.PartialImages = openai.Int(2)
	st := client.Images.GenerateStreaming(ctx, params)
	var types []string
	var usage int64
	for st.Next() {
		ev := st.Current()
		types = append(types, ev.Type)
		if ev.B64JSON != mock.MockPNG {
			t.Fatalf("event %s: image %q", ev.Type, ev.B64JSON)
		}
		usage = max(usage, ev.Usage.TotalTokens)
	}
	if err := st.Err(); err != nil || strings.Join(types, ",") != "image_generation.partial_image,image_generation.partial_image,image_generation.completed" || usage == 0 {
		t.Fatalf("stream: %v %v usage %d", err, types, usage)
	}

	_, err = client.Images.Generate(ctx, openai.ImageGenerateParams{Model: "emb", Prompt: "x"})
	apiErr(t, err, http.StatusBadRequest, "model_is_embedding")
	out := postRaw(t, base+"/images/generations", `{"model":"gpt","prompt":""}`)
	if !strings.Contains(out, `"code":"invalid_type"`) {
		t.Fatalf("empty prompt: %s", out)
	}
}

// TestEndpointsSpeech: speech audio through the SDK byte for byte with the
// upstream's content type; relayed as it arrives (the first bytes reach
// the caller while the upstream still stalls); the SSE form with usage.
func TestEndpointsSpeech(t *testing.T) {
	m, base, client := startEndpoints(t)
	ctx := context.Background()
	res, err := client.Audio.Speech.New(ctx, openai.AudioSpeechNewParams{Model: "gpt", Input: "Hello there", Voice: openai.AudioSpeechNewParamsVoiceAlloy,
		ResponseFormat: openai.AudioSpeechNewParamsResponseFormatWAV})
	if err != nil {
		t.Fatal(err)
	}
	audio, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.Header.Get("Content-Type") != "audio/wav" || string(audio) != string(mock.SpeechAudio(mock.DefaultChunks, mock.DefaultChunkSize)) {
		t.Fatalf("speech: %v %s %d bytes", err, res.Header.Get("Content-Type"), len(audio))
	}
	if last := lastRequest(m); last.Path != "/v1/audio/speech" || !strings.Contains(last.Body, `"voice":"alloy"`) {
		t.Fatalf("upstream request: %s %s", last.Path, last.Body)
	}

	// Not buffered whole: the upstream sends one chunk, then stalls 2s.
	req, _ := http.NewRequest("POST", base+"/audio/speech", strings.NewReader(`{"model":"gpt","input":"hi","voice":"alloy"}`))
	req.Header.Set("Authorization", "Bearer caller-e2e")
	req.Header.Set("x-mock-stall-after", "1")
	req.Header.Set("x-mock-stall-for", "2s")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	rest, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || 1+len(rest) != len(audio) {
		t.Fatalf("stalled speech: %v %d bytes", err, 1+len(rest))
	}
	if waited := time.Since(t1); waited < time.Second {
		t.Fatalf("the first byte came only %v before the end: the audio was buffered", waited)
	}

	out := postRaw(t, base+"/audio/speech", `{"model":"gpt","input":"hi","voice":"alloy","stream_format":"sse"}`)
	if n := strings.Count(out, `"type":"speech.audio.delta"`); n != mock.DefaultChunks || !strings.Contains(out, `"type":"speech.audio.done"`) {
		t.Fatalf("sse speech: %d deltas: %.300s", n, out)
	}
	out = postRaw(t, base+"/audio/speech", `{"model":"gpt","input":"hi"}`)
	if !strings.Contains(out, `"code":"missing_required_parameter"`) {
		t.Fatalf("no voice: %s", out)
	}
	out = postRaw(t, base+"/audio/speech", `{"model":"emb-claude","input":"hi","voice":"alloy"}`)
	if !strings.Contains(out, `"code":"model_is_embedding"`) {
		t.Fatalf("speech on an embedding model: %s", out)
	}
}

// videoJSON sends a raw request to gw and decodes its JSON answer.
func videoJSON(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer caller-e2e")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

// TestEndpointsVideos: a video task from create to download through gw:
// the id binds the task to its model (polls reach the same upstream),
// polls until completed, the content streamed, list and delete; groups
// refused with 400; a forged id is 404.
func TestEndpointsVideos(t *testing.T) {
	m, base, _ := startEndpoints(t)
	st, v := videoJSON(t, "POST", base+"/videos", `{"model":"sora","prompt":"a cat on a skateboard","seconds":"8"}`)
	id, _ := v["id"].(string)
	if st != 200 || v["model"] != "sora" || v["status"] != "queued" || !strings.HasPrefix(id, "video_mock") || !strings.Contains(id, ".") {
		t.Fatalf("create: %d %v", st, v)
	}
	if last := lastRequest(m); last.Path != "/v1/videos" || !strings.Contains(last.Body, `"model":"sora-2"`) {
		t.Fatalf("upstream create: %s %s", last.Path, last.Body)
	}
	var status string
	for i := 0; i < mock.VideoPollsToComplete; i++ {
		st, v = videoJSON(t, "GET", base+"/videos/"+id, "")
		status, _ = v["status"].(string)
		if st != 200 || v["id"] != id || v["model"] != "sora" {
			t.Fatalf("poll %d: %d %v", i, st, v)
		}
	}
	if status != "completed" {
		t.Fatalf("status after %d polls: %s", mock.VideoPollsToComplete, status)
	}
	upstreamID := id[:strings.LastIndex(id, ".")]
	if last := lastRequest(m); last.Path != "/v1/videos/"+upstreamID || last.Method != "GET" {
		t.Fatalf("poll reached %s %s", last.Method, last.Path)
	}

	req, _ := http.NewRequest("GET", base+"/videos/"+id+"/content", nil)
	req.Header.Set("Authorization", "Bearer caller-e2e")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	content, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "video/mp4" || string(content) != string(mock.VideoContent(mock.DefaultChunks, mock.DefaultChunkSize)) {
		t.Fatalf("content: %d %s %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(content))
	}

	st, v = videoJSON(t, "GET", base+"/videos?model=sora&limit=5", "")
	data, _ := v["data"].([]any)
	if st != 200 || len(data) != 1 || data[0].(map[string]any)["id"] != id {
		t.Fatalf("list: %d %v", st, v)
	}
	if st, v = videoJSON(t, "GET", base+"/videos", ""); st != 400 {
		t.Fatalf("list without model: %d %v", st, v)
	}
	if st, v = videoJSON(t, "GET", base+"/videos/"+upstreamID+".00000000-0000-5000-8000-000000000000", ""); st != 404 {
		t.Fatalf("forged id: %d %v", st, v)
	}
	if st, v = videoJSON(t, "POST", base+"/videos", `{"model":"sora-group","prompt":"x"}`); st != 400 || v["error"].(map[string]any)["type"] != "invalid_request_error" {
		t.Fatalf("group: %d %v", st, v)
	}
	if st, v = videoJSON(t, "DELETE", base+"/videos/"+id, ""); st != 200 || v["deleted"] != true || v["id"] != id {
		t.Fatalf("delete: %d %v", st, v)
	}
	if st, _ = videoJSON(t, "GET", base+"/videos/"+id, ""); st != 404 {
		t.Fatalf("poll after delete: %d", st)
	}
}
