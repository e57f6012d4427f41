package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/responses"

	"gw/perf/mock"
)

// nativeFile declares the `apis` rules: which surfaces each key serves in
// the caller's own wire format, and where. The dead api_base of the keys
// with an `apis.<surface>.base` proves the surface's base is used.
const nativeFile = `_format_version: "1"
provider_keys:
  - display_name: oa-split
    provider: openai
    api_key: ${E2E_OPENAI_KEY}
    api_base: http://127.0.0.1:1/v1
    apis:
      responses: {base: "${NATIVE_MOCK}/v1"}
    request:
      forward_client_headers: ["x-mock-*"]
  - display_name: oa-derived
    provider: openai
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${NATIVE_MOCK}/v1
  - display_name: oa-chat-only
    provider: openai
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${NATIVE_MOCK}/v1
    apis: {}
  - display_name: compat
    api_key: ${E2E_OPENAI_KEY}
    api_base: http://127.0.0.1:1/v1
    apis:
      messages: {base: "${NATIVE_MOCK}/anthropic/v1"}
    request:
      forward_client_headers: ["x-mock-*"]
  - display_name: claude-key
    provider: anthropic
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${NATIVE_MOCK}/v1
    request:
      forward_client_headers: ["x-mock-*"]
api_keys:
  - display_name: dev
    key_env: E2E_CALLER_KEY
    allowed_models: ["*"]
models:
  - {display_name: r-split, provider: openai, model_name: gpt-5, provider_key: oa-split, stream_timeout: 500}
  - {display_name: r-derived, provider: openai, model_name: gpt-5, provider_key: oa-derived}
  - {display_name: r-chat, provider: openai, model_name: gpt-5, provider_key: oa-chat-only}
  - {display_name: m-compat, provider: deepseek, model_name: deepseek-chat, provider_key: compat}
  - {display_name: claude, provider: anthropic, model_name: claude-sonnet-4-5, provider_key: claude-key}
`

func startNative(t *testing.T) (*mock.Server, string) {
	t.Helper()
	m := startMock(t, "NATIVE_MOCK", mock.Config{})
	g := startGW(t, writeTemp(t, "native.yaml", nativeFile))
	return m, "http://" + g.addr + "/v1"
}

func lastRequest(m *mock.Server) mock.RecordedRequest {
	r := m.Requests()
	return r[len(r)-1]
}

// TestNativeResponses: a Responses caller on a key that serves Responses
// natively reaches <apis.responses.base>/responses with its body unchanged
// but for the model — stateful fields included — and gets the upstream's
// answer and events with the alias as model.
func TestNativeResponses(t *testing.T) {
	m, base := startNative(t)
	ctx := context.Background()
	client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))
	params := responses.ResponseNewParams{
		Model:              "r-split",
		Instructions:       openai.String("Be brief."),
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello")},
		PreviousResponseID: openai.String("resp_earlier"), // refused when converted; the native upstream keeps state
		Store:              openai.Bool(true),
	}
	resp, err := client.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Model != "r-split" || resp.Status != "completed" || resp.OutputText() == "" || resp.Usage.TotalTokens == 0 {
		t.Fatalf("response: %+v", resp)
	}
	last := lastRequest(m)
	if last.Path != "/v1/responses" || last.Header.Get("Authorization") != "Bearer sk-e2e" {
		t.Fatalf("upstream request: %s %v", last.Path, last.Header)
	}
	for _, want := range []string{`"model":"gpt-5"`, `"previous_response_id":"resp_earlier"`, `"store":true`, `"instructions":"Be brief."`} {
		if !strings.Contains(last.Body, want) {
			t.Fatalf("native body lacks %s: %s", want, last.Body)
		}
	}

	// Streaming: the upstream's events, sequence numbers as sent, alias as model.
	st := client.Responses.NewStreaming(ctx, params)
	var text strings.Builder
	completed := false
	var lastSeq int64 = -1
	for st.Next() {
		ev := st.Current()
		if ev.SequenceNumber != lastSeq+1 {
			t.Fatalf("sequence number %d after %d", ev.SequenceNumber, lastSeq)
		}
		lastSeq = ev.SequenceNumber
		switch ev.Type {
		case "response.created":
			if ev.Response.Model != "r-split" {
				t.Fatalf("created: model %q", ev.Response.Model)
			}
		case "response.output_text.delta":
			text.WriteString(ev.Delta.OfString)
		case "response.completed":
			completed = true
			if ev.Response.Model != "r-split" || ev.Response.Usage.TotalTokens == 0 {
				t.Fatalf("completed: %+v", ev.Response)
			}
		}
	}
	if err := st.Err(); err != nil || !completed || text.Len() == 0 {
		t.Fatalf("stream: err %v completed %v text %q", err, completed, text.String())
	}

	// An upstream error mid-stream: its error and response.failed events are relayed.
	st = client.Responses.NewStreaming(ctx, params, option.WithHeader("x-mock-stream-error-after", "2"))
	sawFailed := false
	for st.Next() {
		if st.Current().Type == "response.failed" {
			sawFailed = true
		}
	}
	if st.Err() == nil && !sawFailed {
		t.Fatal("native stream error ended cleanly")
	}

	// A stall past stream_timeout: gw ends the stream with response.failed
	// continuing the upstream's sequence numbers.
	body := `{"model":"r-split","input":"hi","stream":true}`
	raw := postRaw(t, base+"/responses", body, "x-mock-stall-after", "2", "x-mock-stall-for", "3s")
	events := strings.Split(strings.TrimSpace(raw), "\n\n")
	tail := events[len(events)-1]
	if !strings.HasPrefix(tail, "event: response.failed\n") || !strings.Contains(tail, `"model":"r-split"`) ||
		!strings.Contains(tail, `"code":"server_is_overloaded"`) {
		t.Fatalf("stalled stream ends with %q", tail)
	}
	var prev, failed struct {
		Seq int64 `json:"sequence_number"`
	}
	json.Unmarshal([]byte(dataOf(events[len(events)-2])), &prev)
	json.Unmarshal([]byte(dataOf(tail)), &failed)
	if failed.Seq != prev.Seq+1 {
		t.Fatalf("response.failed sequence_number %d after %d", failed.Seq, prev.Seq)
	}
}

// TestNativeSurfaceRules: without `apis`, provider openai serves Responses
// natively; `apis: {}` makes the key chat-only, so the same caller body is
// converted (and a stateful one refused with 400).
func TestNativeSurfaceRules(t *testing.T) {
	m, base := startNative(t)
	ctx := context.Background()
	client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))
	in := responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello")}

	resp, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "r-derived", Input: in})
	if err != nil || resp.Model != "r-derived" || resp.OutputText() == "" {
		t.Fatalf("derived: %v %+v", err, resp)
	}
	if p := lastRequest(m).Path; p != "/v1/responses" {
		t.Fatalf("derived surface went to %s", p)
	}

	resp, err = client.Responses.New(ctx, responses.ResponseNewParams{Model: "r-chat", Input: in})
	if err != nil || resp.Model != "r-chat" || resp.OutputText() == "" {
		t.Fatalf("chat-only: %v %+v", err, resp)
	}
	if p := lastRequest(m).Path; p != "/v1/chat/completions" {
		t.Fatalf("apis: {} still went to %s", p)
	}
	n := len(m.Requests())
	_, err = client.Responses.New(ctx, responses.ResponseNewParams{Model: "r-chat", Input: in, PreviousResponseID: openai.String("resp_x")})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "previous_response_id") {
		t.Fatalf("stateful request on a converted key: %v", err)
	}
	if len(m.Requests()) != n {
		t.Fatal("a refused request reached the upstream")
	}
}

// TestNativeMessagesCompat: an openai-adapter key with `apis.messages`
// (an Anthropic-compatible endpoint of an OpenAI-style provider) gets
// /v1/messages callers natively at its messages base, credential in both
// x-api-key and Authorization; count_tokens goes there too.
func TestNativeMessagesCompat(t *testing.T) {
	m, base := startNative(t)
	ctx := context.Background()
	ac := anthropic.NewClient(aoption.WithBaseURL(strings.TrimSuffix(base, "/v1")), aoption.WithAPIKey("caller-e2e"), aoption.WithMaxRetries(0))
	mp := anthropic.MessageNewParams{
		Model: "m-compat", MaxTokens: 512,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))},
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
	}
	msg, err := ac.Messages.New(ctx, mp, aoption.WithHeader("anthropic-beta", "interleaved-thinking-2025-05-14"))
	if err != nil {
		t.Fatal(err)
	}
	if string(msg.Model) != "m-compat" || msg.Content[0].Text == "" {
		t.Fatalf("message: %+v", msg)
	}
	last := lastRequest(m)
	if last.Path != "/anthropic/v1/messages" || last.Header.Get("X-Api-Key") != "sk-e2e" ||
		last.Header.Get("Authorization") != "Bearer sk-e2e" || last.Header.Get("Anthropic-Version") != "2023-06-01" ||
		last.Header.Get("Anthropic-Beta") != "interleaved-thinking-2025-05-14" {
		t.Fatalf("upstream request: %s %v", last.Path, last.Header)
	}
	if !strings.Contains(last.Body, `"model":"deepseek-chat"`) || !strings.Contains(last.Body, `"budget_tokens":1024`) {
		t.Fatalf("native body: %s", last.Body)
	}

	st := ac.Messages.NewStreaming(ctx, mp)
	acc := anthropic.Message{}
	for st.Next() {
		if err := acc.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil || string(acc.Model) != "m-compat" || acc.Content[0].Text == "" {
		t.Fatalf("stream: %v %+v", err, acc)
	}

	ct, err := ac.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "m-compat", Messages: mp.Messages})
	if err != nil || ct.InputTokens == 0 {
		t.Fatalf("count_tokens: %v %+v", err, ct)
	}
	if p := lastRequest(m).Path; p != "/anthropic/v1/messages/count_tokens" {
		t.Fatalf("count_tokens went to %s", p)
	}
}

// TestCountTokensNative: count_tokens on an Anthropic key is the upstream's
// count; on a chat-only key it is gw's estimate and nothing goes upstream.
func TestCountTokensNative(t *testing.T) {
	m, base := startNative(t)
	body := `{"model":"claude","messages":[{"role":"user","content":"Hello there"}]}`
	got := postRaw(t, base+"/messages/count_tokens", body)
	last := lastRequest(m)
	if last.Path != "/v1/messages/count_tokens" || !strings.Contains(last.Body, `"model":"claude-sonnet-4-5"`) || last.Header.Get("X-Api-Key") != "sk-e2e" {
		t.Fatalf("upstream count request: %s %v %s", last.Path, last.Header, last.Body)
	}
	if !strings.HasPrefix(got, `{"input_tokens":`) || strings.Contains(got, "model") {
		t.Fatalf("count answer %q; want the upstream's, unchanged", got)
	}
	n := len(m.Requests())
	body = strings.Replace(body, "claude", "r-chat", 1)
	got = postRaw(t, base+"/messages/count_tokens", body)
	if got != `{"input_tokens":`+strconv.Itoa(len(body)/4)+`}` || len(m.Requests()) != n {
		t.Fatalf("local estimate %q (upstream calls %d → %d)", got, n, len(m.Requests()))
	}
}

// postRaw POSTs body with the caller key and returns the answer's body.
func postRaw(t *testing.T, url, body string, hdr ...string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer caller-e2e")
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// dataOf returns the data line of one SSE event.
func dataOf(ev string) string {
	for _, line := range strings.Split(ev, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			return d
		}
	}
	return ""
}
