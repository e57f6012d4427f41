package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
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

// ensembleFile: members on one mock upstream, told apart by provider keys
// whose api_base carries the mock's path knobs: `slow` answers after 3 s
// (past every ensemble's timeout_ms), `broken` always answers 500. Every
// model costs the same, so the final record's cost is a function of its
// summed tokens.
const ensembleFile = `_format_version: "1"
provider_keys:
  - {display_name: pk, api_key: "${E2E_OPENAI_KEY}", api_base: "${E2E_ENS_MOCK}/v1"}
  - {display_name: slow, api_key: "${E2E_OPENAI_KEY}", api_base: "${E2E_ENS_MOCK}/knobs/latency=3s/v1"}
  - {display_name: broken, api_key: "${E2E_OPENAI_KEY}", api_base: "${E2E_ENS_MOCK}/knobs/status=500/v1"}
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_models: ["*"]}
models:
  - {display_name: a, provider: openai, model_name: gpt-4o, provider_key: pk, cost: {input_per_1k: 1, output_per_1k: 2}}
  - {display_name: b, provider: openai, model_name: gpt-4o-mini, provider_key: pk, cost: {input_per_1k: 1, output_per_1k: 2}}
  - {display_name: judge, provider: openai, model_name: judge-model, provider_key: pk, cost: {input_per_1k: 1, output_per_1k: 2}}
  - {display_name: slow, provider: openai, model_name: gpt-4o, provider_key: slow, retries: 0, cost: {input_per_1k: 1, output_per_1k: 2}}
  - {display_name: broken, provider: openai, model_name: gpt-4o, provider_key: broken, retries: 0, cost: {input_per_1k: 1, output_per_1k: 2}}
  - display_name: duo
    ensemble:
      panel: [{model: a, temperature: 0.3, seed: 7}, {model: b}]
      judge: {model: judge}
      timeout_ms: 2000
  - display_name: trio
    ensemble:
      panel: [{model: a}, {model: slow}, {model: broken}]
      judge: {model: judge, synthesis_prompt: "Merge the candidates."}
      min_responses: 1
      timeout_ms: 400
  - display_name: strict
    ensemble:
      panel: [{model: a}, {model: slow}, {model: broken}]
      judge: {model: judge}
      min_responses: 9
      timeout_ms: 400
  - display_name: guarded
    ensemble:
      panel: [{model: a}, {model: b}]
      judge: {model: judge}
guardrails:
  - name: words
    kind: keyword
    hook_point: both
    patterns: [{kind: literal, value: PROJECT-ZEUS}, {kind: literal, value: mock provider}]
guardrail_attachments:
  - {guardrail_id: words, scope_type: model, scope_id: guarded}
observability_exporters:
  - name: archive
    kind: object_store
    provider: s3
    bucket: gw-usage
    prefix: usage
    endpoint: ${E2E_S3}
    region: us-east-1
    auth_mode: static
    access_key_id: ${E2E_S3_KEY}
    secret_access_key: ${E2E_S3_SECRET}
    batch_size: 1
    flush_interval_ms: 100
`

// TestEnsembleE2E: ensemble aliases through the real binary with the
// official SDKs — two members with their sampling overrides, three members
// with one past the timeout and one failing, a streaming judge on chat and
// Messages, a Responses caller, min_responses not reached (502), the
// members header, /v1/models, and the usage records of every request.
func TestEnsembleE2E(t *testing.T) {
	s3 := usagetest.StartS3(t, "gw-usage")
	for k, v := range map[string]string{"E2E_S3": s3.Endpoint, "E2E_S3_KEY": usagetest.S3Key, "E2E_S3_SECRET": usagetest.S3Secret} {
		t.Setenv(k, v)
	}
	m := startMock(t, "E2E_ENS_MOCK", mock.Config{})
	g := startGW(t, writeTemp(t, "ensemble.yaml", ensembleFile))
	base := "http://" + g.addr + "/v1"
	sdk := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))
	ctx := context.Background()

	// The aliases are listed.
	models := map[string]bool{}
	iter := sdk.Models.ListAutoPaging(ctx)
	for iter.Next() {
		models[iter.Current().ID] = true
	}
	if err := iter.Err(); err != nil || !models["duo"] || !models["trio"] || !models["strict"] {
		t.Fatalf("/v1/models: %v %v", models, err)
	}

	// Two members, buffered chat: both answer, the judge's answer is the
	// response, named by the ensemble alias; the members got their
	// overrides and no stream, the judge the synthesis prompt with both
	// answers.
	m.ClearRequests()
	var hdr http.Header
	duo := chatParams("duo")
	duo.Temperature = openai.Float(0.2)
	resp, err := sdk.Chat.Completions.New(ctx, duo, option.WithMiddleware(headerGrab(&hdr)))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Model != "duo" || resp.Choices[0].Message.Content == "" || hdr.Get("x-gw-ensemble-members") != "a,b" {
		t.Fatalf("duo answer: model %q members %q %+v", resp.Model, hdr.Get("x-gw-ensemble-members"), resp)
	}
	duoUsage := resp.Usage.TotalTokens
	reqs := m.Requests()
	if len(reqs) != 3 {
		t.Fatalf("upstream requests: %d; want 2 members + judge", len(reqs))
	}
	var sawA, sawB bool
	for _, r := range reqs[:2] {
		var body map[string]any
		if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
			t.Fatal(err)
		}
		if _, has := body["stream"]; has {
			t.Fatalf("member body carries stream: %s", r.Body)
		}
		switch body["model"] {
		case "gpt-4o":
			sawA = body["temperature"] == 0.3 && body["seed"] == float64(7)
		case "gpt-4o-mini":
			sawB = body["temperature"] == 0.2 // the caller's own value
		}
	}
	judge := reqs[2].Body
	if !sawA || !sawB || !strings.Contains(judge, `"model":"judge-model"`) || !strings.Contains(judge, "You are the judge of a panel") ||
		!strings.Contains(judge, "### Answer 1") || !strings.Contains(judge, "### Answer 2") {
		t.Fatalf("member overrides %v %v; judge body %s", sawA, sawB, judge)
	}

	// Streaming judge on chat: the members stay buffered, the judge's
	// stream reaches the caller, with the members header.
	m.ClearRequests()
	sp := chatParams2("duo")
	sp.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	st := sdk.Chat.Completions.NewStreaming(ctx, sp, option.WithMiddleware(headerGrab(&hdr)))
	acc := openai.ChatCompletionAccumulator{}
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	duoStreamUsage := acc.Usage.TotalTokens
	if acc.Model != "duo" || acc.Choices[0].Message.Content == "" || hdr.Get("x-gw-ensemble-members") != "a,b" || duoStreamUsage == 0 {
		t.Fatalf("streamed duo: model %q members %q", acc.Model, hdr.Get("x-gw-ensemble-members"))
	}
	reqs = m.Requests()
	if len(reqs) != 3 || strings.Contains(reqs[0].Body, `"stream"`) || !strings.Contains(reqs[2].Body, `"stream":true`) {
		t.Fatalf("streamed duo upstream requests: %d, judge %s", len(reqs), reqs[len(reqs)-1].Body)
	}

	// Three members, one past the timeout and one failing, min_responses
	// 1: the judge gets the one answer; the configured synthesis prompt.
	m.ClearRequests()
	start := time.Now()
	resp, err = sdk.Chat.Completions.New(ctx, chatParams("trio"), option.WithMiddleware(headerGrab(&hdr)))
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Fatalf("trio took %v: the slow member was not cut at timeout_ms", took)
	}
	if resp.Model != "trio" || hdr.Get("x-gw-ensemble-members") != "a" {
		t.Fatalf("trio: model %q members %q", resp.Model, hdr.Get("x-gw-ensemble-members"))
	}
	reqs = m.Requests()
	last := reqs[len(reqs)-1].Body
	if !strings.Contains(last, "Merge the candidates.") || !strings.Contains(last, "### Answer 1") || strings.Contains(last, "### Answer 2") {
		t.Fatalf("trio judge body: %s", last)
	}

	// min_responses (9, capped to the panel's 3) not reached: 502 naming
	// each member's failure, in the Anthropic envelope on /v1/messages.
	_, err = sdk.Chat.Completions.New(ctx, chatParams("strict"), option.WithMiddleware(headerGrab(&hdr)))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 502 || apiErr.Code != "ensemble_insufficient_responses" ||
		!strings.Contains(apiErr.Message, "1 of 3 panel members answered, 3 required") ||
		!strings.Contains(apiErr.Message, "slow: upstream timeout") || !strings.Contains(apiErr.Message, "broken: upstream returned 500") ||
		strings.Contains(apiErr.Message, "sk-") {
		t.Fatalf("strict: %v", err)
	}

	// Messages callers: buffered and a streaming judge, converted.
	ac := anthropic.NewClient(aoption.WithBaseURL(strings.TrimSuffix(base, "/v1")), aoption.WithAPIKey("caller-e2e"), aoption.WithMaxRetries(0))
	mp := anthropic.MessageNewParams{Model: "duo", MaxTokens: 128,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Say hello"))}}
	msg, err := ac.Messages.New(ctx, mp)
	if err != nil {
		t.Fatal(err)
	}
	msgUsage := msg.Usage.InputTokens + msg.Usage.OutputTokens
	if string(msg.Model) != "duo" || len(msg.Content) == 0 || msg.Content[0].Text == "" {
		t.Fatalf("messages: %+v", msg)
	}
	ms := ac.Messages.NewStreaming(ctx, mp)
	am := anthropic.Message{}
	for ms.Next() {
		if err := am.Accumulate(ms.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := ms.Err(); err != nil || string(am.Model) != "duo" || len(am.Content) == 0 || am.Content[0].Text == "" {
		t.Fatalf("streamed messages: %v %+v", err, am)
	}
	_, err = ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "strict", MaxTokens: 16, Messages: mp.Messages})
	var aErr *anthropic.Error
	if !errors.As(err, &aErr) || aErr.StatusCode != 502 || !strings.Contains(aErr.Error(), "panel members answered") {
		t.Fatalf("messages strict: %v", err)
	}

	// Responses caller.
	rr, err := sdk.Responses.New(ctx, responses.ResponseNewParams{Model: "duo",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello")}})
	if err != nil {
		t.Fatal(err)
	}
	respUsage := rr.Usage.TotalTokens
	if rr.Model != "duo" || rr.OutputText() == "" {
		t.Fatalf("responses: %+v", rr)
	}

	// Guardrails run once on the caller's input (a block asks no member)
	// and once on the final answer: the members' answers carry the
	// output pattern too, yet they reach the judge (no 502), and the
	// judge's answer is blocked.
	m.ClearRequests()
	zeus := chatParams("guarded")
	zeus.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tell me about PROJECT-ZEUS")}
	_, err = sdk.Chat.Completions.New(ctx, zeus)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 422 || apiErr.Code != "content_filter" || len(m.Requests()) != 0 {
		t.Fatalf("input guardrail: %v, %d upstream requests", err, len(m.Requests()))
	}
	_, err = sdk.Chat.Completions.New(ctx, chatParams("guarded"), option.WithMiddleware(headerGrab(&hdr)))
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 422 || apiErr.Code != "content_filter" || len(m.Requests()) != 3 ||
		hdr.Get("x-gw-ensemble-members") != "a,b" {
		t.Fatalf("output guardrail: %v, %d upstream requests, members %q", err, len(m.Requests()), hdr.Get("x-gw-ensemble-members"))
	}

	// Usage records: one final record per request (model = the ensemble,
	// target = the judge), one zero-token failed_attempt record per failed
	// member; the final record's tokens and cost cover members and judge.
	var recs []map[string]any
	usagetest.Eventually(t, 10*time.Second, "usage records", func() bool {
		recs = recs[:0]
		for _, b := range s3.Objects(t) {
			usagetest.ValidateNDJSON(t, b)
			for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
				var r map[string]any
				if json.Unmarshal(line, &r) == nil {
					recs = append(recs, r)
				}
			}
		}
		return len(recs) >= 16 // 10 final records, 2 failed members each for trio and the two stricts
	})
	byReq := map[string][]map[string]any{}
	for _, r := range recs {
		id := r["request_id"].(string)
		byReq[id] = append(byReq[id], r)
	}
	var sawDuo, sawTrio, sawStrict bool
	for _, rs := range byReq {
		var final map[string]any
		failed := map[string]map[string]any{}
		for _, r := range rs {
			if r["attempt_kind"] == "final" {
				final = r
			} else {
				failed[r["target_model"].(string)] = r
				if r["prompt_tokens"].(float64) != 0 || r["cost_usd"].(float64) != 0 {
					t.Fatalf("failed member record with tokens: %v", r)
				}
			}
		}
		if final == nil {
			t.Fatalf("request without final record: %v", rs)
		}
		p, c, cost := final["prompt_tokens"].(float64), final["completion_tokens"].(float64), final["cost_usd"].(float64)
		switch final["model"] {
		case "duo":
			if final["target_model"] != "judge" || len(failed) != 0 || math.Abs(cost-(p+2*c)/1000) > 1e-9 {
				t.Fatalf("duo final: %v", final)
			}
			// The answer's usage covers the panel: it equals the record's.
			var want int64 = -1
			switch {
			case final["operation"] == "chat.completions" && final["stream"] == false:
				want = duoUsage
			case final["operation"] == "chat.completions":
				want = duoStreamUsage
			case final["operation"] == "messages" && final["stream"] == false:
				want = msgUsage
			case final["operation"] == "responses":
				want = respUsage
			}
			if want >= 0 && final["total_tokens"].(float64) != float64(want) {
				t.Fatalf("duo %v (stream %v): the answer's usage total %d; the record's %v", final["operation"], final["stream"], want, final["total_tokens"])
			}
			sawDuo = true
		case "trio":
			if final["target_model"] != "judge" || final["status_code"].(float64) != 200 || math.Abs(cost-(p+2*c)/1000) > 1e-9 || cost == 0 {
				t.Fatalf("trio final: %v", final)
			}
			if failed["slow"] == nil || failed["slow"]["error_class"] != "timeout" || failed["broken"] == nil || failed["broken"]["status_code"].(float64) != 500 {
				t.Fatalf("trio member records: %v", failed)
			}
			sawTrio = true
		case "guarded":
			hits, _ := final["guardrail_enforced_hits"].([]any)
			if final["status_code"].(float64) != 422 || len(hits) != 1 || len(failed) != 0 {
				t.Fatalf("guarded final: %v", final)
			}
		case "strict":
			if final["status_code"].(float64) != 502 || final["error_class"] != "ensemble_insufficient_responses" || final["target_model"] != nil ||
				failed["slow"] == nil || failed["broken"] == nil || p == 0 {
				t.Fatalf("strict records: final %v failed %v", final, failed)
			}
			sawStrict = true
		}
		ids := map[string]bool{}
		for _, r := range rs {
			if ids[r["event_id"].(string)] {
				t.Fatalf("duplicate event_id in %v", rs)
			}
			ids[r["event_id"].(string)] = true
		}
	}
	if !sawDuo || !sawTrio || !sawStrict {
		t.Fatalf("records: duo %v trio %v strict %v", sawDuo, sawTrio, sawStrict)
	}
}

// headerGrab is an SDK middleware that keeps the response headers.
func headerGrab(h *http.Header) option.Middleware {
	return func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(r)
		if resp != nil {
			*h = resp.Header
		}
		return resp, err
	}
}
