package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/responses"

	"gw/edge/usage/usagetest"
	"gw/perf/mock"
)

// The semantic router and the semantic guardrail against the mock, whose
// embeddings are deterministic per text (mock.Embedding): the same text
// scores 1 against itself, and the test computes every other cosine from
// the mock's own vectors, so thresholds can sit just below or just above
// a known score.

const semDims = 1536

// cosine is the similarity gw computes (unit vectors: the dot product).
func cosine(a, b string) float64 {
	x, y := mock.Embedding([]byte(a), semDims), mock.Embedding([]byte(b), semDims)
	var s float64
	for i := range x {
		s += float64(x[i]) * float64(y[i])
	}
	return s
}

// edgePair finds a request text whose cosine with example is clearly
// positive, so thresholds can be set around it.
func edgePair(example string) (string, float64) {
	for i := 0; ; i++ {
		q := "edge probe " + strconv.Itoa(i)
		if s := cosine(q, example); s > 0.04 {
			return q, s
		}
	}
}

const semExampleEdge = "what is the warranty period"

func semFile(edgeLow, edgeHigh float64, answer string) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }
	return `_format_version: "1"
provider_keys:
  - {display_name: oa, provider: openai, api_key: "${E2E_OPENAI_KEY}", api_base: "${SEM_MOCK}/v1"}
  - {display_name: oa-slow, provider: openai, api_key: "${E2E_OPENAI_KEY}", api_base: "${SEM_MOCK}/knobs/latency=400ms/v1"}
  - {display_name: oa-down, provider: openai, api_key: "${E2E_OPENAI_KEY}", api_base: "${SEM_MOCK}/knobs/status=503/v1"}
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_models: ["*"]}
models:
  - {display_name: emb, provider: openai, model_name: text-embedding-3-small, provider_key: oa, embedding: {dimensions: 1536}}
  - {display_name: emb-slow, provider: openai, model_name: text-embedding-3-small, provider_key: oa-slow, embedding: {dimensions: 1536}}
  - {display_name: emb-down, provider: openai, model_name: text-embedding-3-small, provider_key: oa-down, embedding: {dimensions: 1536}}
  - {display_name: billing-model, provider: openai, model_name: gpt-billing, provider_key: oa}
  - {display_name: tech-model, provider: openai, model_name: gpt-tech, provider_key: oa}
  - {display_name: general-model, provider: openai, model_name: gpt-general, provider_key: oa}
  - {display_name: backup-model, provider: openai, model_name: gpt-backup, provider_key: oa}
  - display_name: router
    semantic:
      embedding_model: emb
      default: general-model
      match: {threshold: 0.5}
      routes:
        - {name: billing, target: billing-model, examples: ["refund my invoice", "billing question"]}
        - {name: tech, target: tech-model, examples: ["my laptop will not boot"], description: hardware trouble}
  - display_name: edge-low
    semantic:
      embedding_model: emb
      default: general-model
      match: {threshold: 0.9}
      routes: [{name: warranty, target: tech-model, examples: ["` + semExampleEdge + `"], threshold: ` + f(edgeLow) + `}]
  - display_name: edge-high
    semantic:
      embedding_model: emb
      default: general-model
      match: {threshold: ` + f(edgeHigh) + `}
      routes: [{name: warranty, target: tech-model, examples: ["` + semExampleEdge + `"]}]
  - display_name: slow-default
    semantic:
      embedding_model: emb-slow
      embedding_timeout_ms: 100
      default: general-model
      match: {threshold: 0.5}
      routes: [{name: billing, target: billing-model, examples: ["billing question"]}]
  - display_name: slow-fail
    semantic:
      embedding_model: emb-slow
      embedding_timeout_ms: 100
      on_embedding_failure: fail
      default: general-model
      match: {threshold: 0.5}
      routes: [{name: billing, target: billing-model, examples: ["billing question"]}]
  - display_name: slow-target
    semantic:
      embedding_model: emb-slow
      embedding_timeout_ms: 100
      on_embedding_failure: {target: backup-model}
      default: general-model
      match: {threshold: 0.5}
      routes: [{name: billing, target: billing-model, examples: ["billing question"]}]
  - {display_name: g-deny, provider: openai, model_name: gpt-g, provider_key: oa}
  - {display_name: g-allow, provider: openai, model_name: gpt-g, provider_key: oa}
  - {display_name: g-open, provider: openai, model_name: gpt-g, provider_key: oa}
  - {display_name: g-closed, provider: openai, model_name: gpt-g, provider_key: oa}
  - {display_name: g-out, provider: openai, model_name: gpt-g, provider_key: oa}
guardrails:
  - {name: deny-weapons, kind: semantic, hook_point: input, embedding_model: emb, deny_examples: ["how do I build a weapon"], deny_threshold: 0.9}
  - {name: only-billing, kind: semantic, hook_point: input, embedding_model: emb, allow_examples: ["billing question", "refund my invoice"], allow_threshold: 0.9}
  - {name: slow-open, kind: semantic, hook_point: input, embedding_model: emb-slow, timeout_ms: 100, fail_open: true, deny_examples: ["how do I build a weapon"], deny_threshold: 0.9}
  - {name: slow-closed, kind: semantic, hook_point: input, embedding_model: emb-slow, timeout_ms: 100, deny_examples: ["how do I build a weapon"], deny_threshold: 0.9}
  - {name: deny-answer, kind: semantic, hook_point: output, embedding_model: emb, deny_examples: [` + strconv.Quote(answer) + `], deny_threshold: 0.99}
guardrail_attachments:
  - {guardrail_id: deny-weapons, scope_type: model, scope_id: g-deny}
  - {guardrail_id: deny-weapons, scope_type: model, scope_id: router}
  - {guardrail_id: only-billing, scope_type: model, scope_id: g-allow}
  - {guardrail_id: slow-open, scope_type: model, scope_id: g-open}
  - {guardrail_id: slow-closed, scope_type: model, scope_id: g-closed}
  - {guardrail_id: deny-answer, scope_type: model, scope_id: g-out}
`
}

type semEnv struct {
	m      *mock.Server
	g      *proc
	file   string
	base   string
	oa     openai.Client
	edge   string // the edge probe text
	answer string // the mock's default chat answer text
}

// mockAnswer asks the mock directly for its default chat answer's text.
func mockAnswer(t *testing.T) string {
	t.Helper()
	resp, err := http.Post(os.Getenv("SEM_MOCK")+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"x","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) == 0 || out.Choices[0].Message.Content == "" {
		t.Fatalf("mock answer: %v %+v", err, out)
	}
	return out.Choices[0].Message.Content
}

func startSemantic(t *testing.T) *semEnv {
	t.Helper()
	m := startMock(t, "SEM_MOCK", mock.Config{})
	q, s := edgePair(semExampleEdge)
	e := &semEnv{m: m, edge: q, answer: mockAnswer(t)}
	e.file = writeTemp(t, "semantic.yaml", semFile(s-0.002, s+0.002, e.answer))
	e.g = startGW(t, e.file)
	t.Cleanup(func() {
		if log := e.g.stderr.String(); strings.Contains(log, "DATA RACE") || strings.Contains(log, "panic:") {
			t.Errorf("gw reported a race or a panic:\n%s", log)
		}
	})
	e.base = "http://" + e.g.addr + "/v1"
	e.oa = openai.NewClient(option.WithBaseURL(e.base), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))
	return e
}

// embeddingCalls returns the mock's embeddings requests since n requests.
func embeddingCalls(m *mock.Server, n int) []mock.RecordedRequest {
	var out []mock.RecordedRequest
	for _, r := range m.Requests()[n:] {
		if strings.HasSuffix(r.Path, "/embeddings") {
			out = append(out, r)
		}
	}
	return out
}

// upstreamModel is the model of the last model call (chat, Responses or
// Messages) the mock received.
func upstreamModel(t *testing.T, m *mock.Server) string {
	t.Helper()
	reqs := m.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if p := reqs[i].Path; strings.HasSuffix(p, "/chat/completions") || strings.HasSuffix(p, "/responses") || strings.HasSuffix(p, "/messages") {
			var b struct {
				Model string `json:"model"`
			}
			_ = json.Unmarshal([]byte(reqs[i].Body), &b)
			return b.Model
		}
	}
	t.Fatal("no chat call reached the mock")
	return ""
}

// chatRoute sends a buffered chat request and returns the route header
// and the upstream model that answered.
func (e *semEnv) chatRoute(t *testing.T, model, text string) (string, string, error) {
	t.Helper()
	var hr *http.Response
	resp, err := e.oa.Chat.Completions.New(context.Background(), userChat(model, text), option.WithResponseInto(&hr))
	if err != nil {
		return "", "", err
	}
	if resp.Model != model {
		t.Fatalf("answer model %q; want the router alias %q", resp.Model, model)
	}
	return hr.Header.Get("x-gw-route"), upstreamModel(t, e.m), nil
}

func TestSemanticRouter(t *testing.T) {
	e := startSemantic(t)
	for _, c := range []struct {
		model, text, route, upstream string
	}{
		{"router", "refund my invoice", "billing", "gpt-billing"},
		{"router", "billing question", "billing", "gpt-billing"},
		{"router", "my laptop will not boot", "tech", "gpt-tech"},
		{"router", "tell me a joke about cats", "default", "gpt-general"},
		// Threshold edges: the route's score is known from the mock's vectors.
		{"edge-low", e.edge, "warranty", "gpt-tech"},
		{"edge-high", e.edge, "default", "gpt-general"},
		// Embedding failures (the embedding model answers after 400 ms,
		// embedding_timeout_ms is 100).
		{"slow-default", "billing question", "default", "gpt-general"},
		{"slow-target", "billing question", "on_embedding_failure", "gpt-backup"},
	} {
		route, up, err := e.chatRoute(t, c.model, c.text)
		if err != nil {
			t.Fatalf("%s %q: %v", c.model, c.text, err)
		}
		if route != c.route || up != c.upstream {
			t.Errorf("%s %q: route %q upstream %q; want %q %q", c.model, c.text, route, up, c.route, c.upstream)
		}
	}
	_, _, err := e.chatRoute(t, "slow-fail", "billing question")
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Code != "embedding_failed" {
		t.Fatalf("on_embedding_failure fail: %v", err)
	}

	// The latest user message decides, in text parts too.
	var hr *http.Response
	_, err = e.oa.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "router",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("my laptop will not boot"), openai.AssistantMessage("ok"),
			openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart("billing question")})}},
		option.WithResponseInto(&hr))
	if err != nil || hr.Header.Get("x-gw-route") != "billing" || upstreamModel(t, e.m) != "gpt-billing" {
		t.Fatalf("latest user message: %v %q", err, hr.Header.Get("x-gw-route"))
	}

	// One embedding call per request for the route, with the latest user
	// message only (plus one for the semantic guardrail attached to the
	// router: its input hook embeds the user messages itself).
	n := len(e.m.Requests())
	if _, _, err := e.chatRoute(t, "router", "refund my invoice"); err != nil {
		t.Fatal(err)
	}
	calls := embeddingCalls(e.m, n)
	if len(calls) != 2 || calls[0].Body != calls[1].Body || !strings.Contains(calls[1].Body, `"input":["refund my invoice"]`) {
		t.Fatalf("embedding calls per request: %+v", calls)
	}

	// Streaming chat.
	st := e.oa.Chat.Completions.NewStreaming(context.Background(), userChat("router", "my laptop will not boot"), option.WithResponseInto(&hr))
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if st.Err() != nil || acc.Choices[0].Message.Content == "" || hr.Header.Get("x-gw-route") != "tech" || upstreamModel(t, e.m) != "gpt-tech" {
		t.Fatalf("stream: %v %q %q", st.Err(), hr.Header.Get("x-gw-route"), upstreamModel(t, e.m))
	}

	// Responses callers, buffered and streamed.
	r, err := e.oa.Responses.New(context.Background(), responses.ResponseNewParams{Model: "router",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("refund my invoice")}}, option.WithResponseInto(&hr))
	if err != nil || r.OutputText() == "" || hr.Header.Get("x-gw-route") != "billing" || upstreamModel(t, e.m) != "gpt-billing" {
		t.Fatalf("responses: %v %q %q %q", err, hr.Header.Get("x-gw-route"), r.OutputText(), upstreamModel(t, e.m))
	}
	rs := e.oa.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{Model: "router",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("my laptop will not boot")}}, option.WithResponseInto(&hr))
	events := 0
	for rs.Next() {
		events++
	}
	if rs.Err() != nil || events == 0 || hr.Header.Get("x-gw-route") != "tech" || upstreamModel(t, e.m) != "gpt-tech" {
		t.Fatalf("responses stream: %v %d %q", rs.Err(), events, hr.Header.Get("x-gw-route"))
	}

	// Messages callers.
	ac := anthropic.NewClient(aoption.WithBaseURL("http://"+e.g.addr), aoption.WithAPIKey("caller-e2e"), aoption.WithMaxRetries(0))
	var ahr *http.Response
	msg, err := ac.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "router", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("billing question"))}}, aoption.WithResponseInto(&ahr))
	if err != nil || len(msg.Content) == 0 || ahr.Header.Get("x-gw-route") != "billing" || upstreamModel(t, e.m) != "gpt-billing" {
		t.Fatalf("messages: %v %q", err, ahr.Header.Get("x-gw-route"))
	}
	ms := ac.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "router", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("my laptop will not boot"))}}, aoption.WithResponseInto(&ahr))
	var am anthropic.Message
	for ms.Next() {
		if err := am.Accumulate(ms.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if ms.Err() != nil || len(am.Content) == 0 || ahr.Header.Get("x-gw-route") != "tech" || upstreamModel(t, e.m) != "gpt-tech" {
		t.Fatalf("messages stream: %v %q", ms.Err(), ahr.Header.Get("x-gw-route"))
	}

	// An input guardrail on the router runs before the route is picked.
	if _, _, err := e.chatRoute(t, "router", "how do I build a weapon"); !errors.As(err, &apiErr) || apiErr.StatusCode != 422 {
		t.Fatalf("guardrail on the router: %v", err)
	}

	// The router is listed in /v1/models.
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	req, _ := http.NewRequest("GET", e.base+"/models", nil)
	req.Header.Set("Authorization", "Bearer caller-e2e")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_ = json.Unmarshal(b, &list)
	found := false
	for _, d := range list.Data {
		found = found || d.ID == "router"
	}
	if !found {
		t.Fatalf("router not in /v1/models: %s", b)
	}
}

// TestSemanticReload: a reload embeds only the examples it has not seen;
// a config whose examples cannot be embedded is rejected (degraded) and
// the previous snapshot keeps routing.
func TestSemanticReload(t *testing.T) {
	e := startSemantic(t)
	// Startup embedded each distinct example once per embedding model.
	first := embeddingCalls(e.m, 0)
	if len(first) == 0 {
		t.Fatal("no embedding calls at startup")
	}
	n := len(e.m.Requests())
	next := strings.Replace(mustRead(t, e.file), `"my laptop will not boot"]`, `"my laptop will not boot", "the screen stays black"]`, 1)
	if err := os.WriteFile(e.file, []byte(next), 0o600); err != nil {
		t.Fatal(err)
	}
	e.g.cmd.Process.Signal(syscall.SIGHUP)
	waitStatus(t, e.g.addr, func(s configStatus) bool { return s.ApplySeq == 2 })
	calls := embeddingCalls(e.m, n)
	if len(calls) != 1 || !strings.Contains(calls[0].Body, `"input":["the screen stays black"]`) {
		bodies := []string{}
		for _, c := range calls {
			bodies = append(bodies, c.Body)
		}
		t.Fatalf("reload embedded %d requests; want one with the new example only: %v", len(calls), bodies)
	}
	if route, up, err := e.chatRoute(t, "router", "the screen stays black"); err != nil || route != "tech" || up != "gpt-tech" {
		t.Fatalf("new example: %v %q %q", err, route, up)
	}

	// The router's embedding model now fails: rejected, old snapshot serves.
	bad := strings.Replace(next, "    semantic:\n      embedding_model: emb\n      default: general-model\n      match: {threshold: 0.5}",
		"    semantic:\n      embedding_model: emb-down\n      default: general-model\n      match: {threshold: 0.5}", 1)
	if bad == next {
		t.Fatal("BUG: test edit did not apply")
	}
	if err := os.WriteFile(e.file, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	e.g.cmd.Process.Signal(syscall.SIGHUP)
	st := waitStatus(t, e.g.addr, func(s configStatus) bool { return s.State == "degraded" })
	if len(st.Rejected) == 0 || !strings.Contains(st.Rejected[0].Error, "display_name=router") || !strings.Contains(st.Rejected[0].Error, "503") {
		t.Fatalf("degraded status: %+v", st)
	}
	if route, up, err := e.chatRoute(t, "router", "refund my invoice"); err != nil || route != "billing" || up != "gpt-billing" {
		t.Fatalf("old snapshot after a failed reload: %v %q %q", err, route, up)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSemanticGuardrail: deny and allow examples on the input, a deny
// example on the output, and the fail-open / fail-closed rules when the
// embedding call times out.
func TestSemanticGuardrail(t *testing.T) {
	e := startSemantic(t)
	ctx := context.Background()
	var apiErr *openai.Error
	blocked := func(model, text string) error {
		_, err := e.oa.Chat.Completions.New(ctx, userChat(model, text))
		return err
	}
	if err := blocked("g-deny", "tell me about the weather"); err != nil {
		t.Fatalf("deny guardrail, unrelated text: %v", err)
	}
	n := len(e.m.Requests())
	if err := blocked("g-deny", "how do I build a weapon"); !errors.As(err, &apiErr) || apiErr.StatusCode != 422 || apiErr.Code != "content_filter" {
		t.Fatalf("deny example: %v", err)
	}
	for _, r := range e.m.Requests()[n:] {
		if strings.HasSuffix(r.Path, "/chat/completions") {
			t.Fatal("a blocked request reached the upstream")
		}
	}
	if err := blocked("g-allow", "refund my invoice"); err != nil {
		t.Fatalf("allow example: %v", err)
	}
	if err := blocked("g-allow", "write me a poem"); !errors.As(err, &apiErr) || apiErr.StatusCode != 422 {
		t.Fatalf("below allow threshold: %v", err)
	}
	// One batch request per hook: the screened user messages together.
	n = len(e.m.Requests())
	_, err := e.oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "g-allow", Messages: []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("be brief"), openai.UserMessage("billing question"), openai.AssistantMessage("yes?"), openai.UserMessage("refund my invoice")}})
	calls := embeddingCalls(e.m, n)
	if err != nil || len(calls) != 1 || !strings.Contains(calls[0].Body, `"input":["billing question","refund my invoice"]`) {
		t.Fatalf("batch: %v %+v", err, calls)
	}
	// The embedding model answers after 400 ms; timeout_ms is 100.
	if err := blocked("g-open", "how do I build a weapon"); err != nil {
		t.Fatalf("fail_open: %v", err)
	}
	if err := blocked("g-closed", "hello"); !errors.As(err, &apiErr) || apiErr.StatusCode != 422 || apiErr.Code != "guardrail_unavailable" {
		t.Fatalf("fail closed: %v", err)
	}
	// Output: the mock's answer is a deny example, buffered and streamed.
	if err := blocked("g-out", "hello"); !errors.As(err, &apiErr) || apiErr.StatusCode != 422 {
		t.Fatalf("output deny: %v", err)
	}
	st := e.oa.Chat.Completions.NewStreaming(ctx, userChat("g-out", "hello"))
	content := ""
	for st.Next() {
		for _, ch := range st.Current().Choices {
			content += ch.Delta.Content
		}
	}
	if content != "" || st.Err() == nil {
		t.Fatalf("output deny on a stream: released %q, err %v", content, st.Err())
	}
}

// TestSemanticUsage: the usage record of a routed request names the
// router as its model and the route's target as target_model; a request
// failed by on_embedding_failure: fail is recorded as embedding_failed.
func TestSemanticUsage(t *testing.T) {
	rcv := usagetest.StartOTLP(t)
	m := startMock(t, "SEM_MOCK", mock.Config{})
	q, s := edgePair(semExampleEdge)
	file := semFile(s-0.002, s+0.002, mockAnswer(t)) + `observability_exporters:
  - {name: otel, kind: otlp_http, endpoint: "` + rcv.URL + `", batch_size: 1, flush_interval_ms: 100}
`
	g := startGW(t, writeTemp(t, "semantic-usage.yaml", file))
	e := &semEnv{m: m, g: g, edge: q, oa: openai.NewClient(option.WithBaseURL("http://"+g.addr+"/v1"), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))}
	if route, _, err := e.chatRoute(t, "router", "my laptop will not boot"); err != nil || route != "tech" {
		t.Fatalf("route: %v %q", err, route)
	}
	if _, _, err := e.chatRoute(t, "slow-fail", "billing question"); err == nil {
		t.Fatal("slow-fail answered")
	}
	usagetest.Eventually(t, 10*time.Second, "two spans", func() bool { return len(rcv.Spans()) >= 2 })
	spans := rcv.Spans()
	got := map[string]bool{}
	for _, sp := range spans {
		got[usagetest.Attr(sp, "gen_ai.request.model").(string)] = true
		switch usagetest.Attr(sp, "gen_ai.request.model") {
		case "router":
			if usagetest.Attr(sp, "gw.usage.target_model") != "tech-model" || usagetest.Attr(sp, "gen_ai.response.model") != "gpt-tech" {
				t.Errorf("routed record: target %v upstream %v", usagetest.Attr(sp, "gw.usage.target_model"), usagetest.Attr(sp, "gen_ai.response.model"))
			}
		case "slow-fail":
			if usagetest.Attr(sp, "error.type") != "embedding_failed" || usagetest.Attr(sp, "http.response.status_code") != int64(503) || usagetest.Attr(sp, "gw.usage.target_model") != nil {
				t.Errorf("failed record: %v %v %v", usagetest.Attr(sp, "error.type"), usagetest.Attr(sp, "http.response.status_code"), usagetest.Attr(sp, "gw.usage.target_model"))
			}
		}
	}
	if !got["router"] || !got["slow-fail"] {
		t.Fatalf("records for %v", got)
	}
}
