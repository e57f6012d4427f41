package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/responses"

	"gw/perf/mock"
)

// keysetFile gives an anthropic-family key every body rule: the rules act
// on the Messages body gw sends upstream, converted or native.
const keysetFile = `_format_version: "1"
provider_keys:
  - display_name: claude-rules
    adapter: anthropic
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${KEYSET_MOCK}/v1
    request:
      param_renames: {top_p: top_p_renamed}
      param_constraints: {temperature_max: 0.5}
      default_body_fields: {top_k: 7, metadata: {user_id: "gw-e2e"}}
    response:
      content_list_to_string: true
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_models: ["*"]}
models:
  - {display_name: claude, provider: anthropic, model_name: claude-sonnet-4-5, provider_key: claude-rules}
`

// TestKeysetAnthropicBodyRules: a chat caller at temperature 1.5 on a key
// with temperature_max 0.5 reaches the Anthropic upstream at 0.5 (it used
// to arrive at 1, the conversion's own bound), with the renames, default
// fields and flattened content lists applied; a native Messages caller
// gets the same rules.
func TestKeysetAnthropicBodyRules(t *testing.T) {
	m := startMock(t, "KEYSET_MOCK", mock.Config{})
	g := startGW(t, writeTemp(t, "keyset.yaml", keysetFile))
	base := "http://" + g.addr + "/v1"
	ctx := context.Background()

	check := func(name string, want, notWant []string) {
		t.Helper()
		last := lastRequest(m)
		if last.Path != "/v1/messages" {
			t.Fatalf("%s: upstream path %s", name, last.Path)
		}
		for _, w := range want {
			if !strings.Contains(last.Body, w) {
				t.Fatalf("%s: upstream body lacks %s: %s", name, w, last.Body)
			}
		}
		for _, w := range notWant {
			if strings.Contains(last.Body, w) {
				t.Fatalf("%s: upstream body has %s: %s", name, w, last.Body)
			}
		}
	}
	want := []string{`"temperature":0.5`, `"top_p_renamed":0.9`, `"top_k":7`, `"metadata":{"user_id":"gw-e2e"}`, `"content":"Say hello"`}
	notWant := []string{`"top_p":`}

	oc := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{
		Model:       "claude",
		Temperature: openai.Float(1.5),
		TopP:        openai.Float(0.9),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(
			[]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart("Say "), openai.TextContentPart("hello")})},
	}
	resp, err := oc.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Model != "claude" || len(resp.Choices) != 1 || resp.Choices[0].Message.Content == "" {
		t.Fatalf("chat answer: %+v", resp)
	}
	check("chat", want, notWant)

	st := oc.Chat.Completions.NewStreaming(ctx, params)
	var text strings.Builder
	for st.Next() {
		if c := st.Current(); len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
		}
	}
	if err := st.Err(); err != nil || text.Len() == 0 {
		t.Fatalf("chat stream: err %v text %q", err, text.String())
	}
	check("chat stream", want, notWant)

	ac := anthropic.NewClient(aoption.WithBaseURL("http://"+g.addr), aoption.WithAPIKey("caller-e2e"), aoption.WithMaxRetries(0))
	msg, err := ac.Messages.New(ctx, anthropic.MessageNewParams{
		Model:       "claude",
		MaxTokens:   64,
		Temperature: anthropic.Float(0.9),
		TopP:        anthropic.Float(0.9),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(
			anthropic.NewTextBlock("Say "), anthropic.NewTextBlock("hello"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if msg.Model != "claude" || len(msg.Content) == 0 {
		t.Fatalf("messages answer: %+v", msg)
	}
	check("native messages", want, notWant)
}

// TestUpstreamCAFile: upstream.tls.ca_cert must name a readable PEM file;
// a wrong path or a file without a certificate stops startup instead of
// trusting nothing.
func TestUpstreamCAFile(t *testing.T) {
	if pem, err := upstreamCA(""); pem != nil || err != nil {
		t.Fatalf("unset: %q, %v", pem, err)
	}
	if _, err := upstreamCA(t.TempDir() + "/missing.pem"); err == nil || !strings.Contains(err.Error(), "upstream.tls.ca_cert") {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := upstreamCA(writeTemp(t, "empty.pem", "not a certificate")); err == nil {
		t.Fatal("a file without a certificate was accepted")
	}
}

// reasoningUpstream answers chat calls the way some OpenAI-compatible
// backends do, with the reasoning in a member of their own (`thinking`).
func reasoningUpstream(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, d := range []string{
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"up","choices":[{"index":0,"delta":{"role":"assistant","thinking":"Because "},"finish_reason":null}]}`,
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"up","choices":[{"index":0,"delta":{"thinking":"sky."},"finish_reason":null}]}`,
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"up","choices":[{"index":0,"delta":{"content":"Blue."},"finish_reason":"stop"}]}`,
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"up","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`,
				`[DONE]`,
			} {
				io.WriteString(w, "data: "+d+"\n\n")
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"Blue.","thinking":"Because sky."},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestKeysetReasoningField: response.reasoning_field moves an
// OpenAI-compatible upstream's reasoning to reasoning_content, where chat
// callers read it and where the converters find it for Messages and
// Responses callers, buffered and streamed.
func TestKeysetReasoningField(t *testing.T) {
	t.Setenv("REASONING_UP", reasoningUpstream(t))
	g := startGW(t, writeTemp(t, "reasoning.yaml", `_format_version: "1"
provider_keys:
  - display_name: compat
    provider: vllm
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${REASONING_UP}/v1
    response: {reasoning_field: "choices[].message.thinking"}
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_models: ["*"]}
models:
  - {display_name: r1, provider: vllm, model_name: r1, provider_key: compat}
`))
	ctx := context.Background()
	oc := openai.NewClient(option.WithBaseURL("http://"+g.addr+"/v1"), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{Model: "r1", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Why?")}}
	resp, err := oc.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	raw := resp.Choices[0].Message.RawJSON()
	if !strings.Contains(raw, `"reasoning_content":"Because sky."`) || strings.Contains(raw, `"thinking"`) {
		t.Fatalf("buffered chat message: %s", raw)
	}
	st := oc.Chat.Completions.NewStreaming(ctx, params)
	var reasoning strings.Builder
	for st.Next() {
		if c := st.Current(); len(c.Choices) > 0 {
			var d struct {
				ReasoningContent string `json:"reasoning_content"`
			}
			_ = json.Unmarshal([]byte(c.Choices[0].Delta.RawJSON()), &d)
			reasoning.WriteString(d.ReasoningContent)
		}
	}
	if err := st.Err(); err != nil || reasoning.String() != "Because sky." {
		t.Fatalf("streamed reasoning %q (%v)", reasoning.String(), err)
	}

	ac := anthropic.NewClient(aoption.WithBaseURL("http://"+g.addr), aoption.WithAPIKey("caller-e2e"), aoption.WithMaxRetries(0))
	msg, err := ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "r1", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Why?"))}})
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 2 || msg.Content[0].Type != "thinking" || msg.Content[0].Thinking != "Because sky." {
		t.Fatalf("messages answer: %+v", msg.Content)
	}
}

// thinkingUpstream is an Anthropic upstream that thinks before it calls a
// tool (signed and redacted thinking) and records the bodies it receives.
func thinkingUpstream(t *testing.T, bodies chan<- string) string {
	t.Helper()
	const msg = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[
		{"type":"thinking","thinking":"Need the weather.","signature":"sig-abc"},
		{"type":"redacted_thinking","data":"opaque=="},
		{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}}],
		"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		bodies <- string(body)
		if !strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, msg)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`{"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Need the weather."}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig-abc"}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":\"Oslo\"}"}}`,
			`{"type":"content_block_stop","index":1}`,
			`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}}`,
			`{"type":"message_stop"}`,
		} {
			var typ struct{ Type string }
			_ = json.Unmarshal([]byte(ev), &typ)
			io.WriteString(w, "event: "+typ.Type+"\ndata: "+ev+"\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestKeysetThinkingAcrossTurns: a chat caller (openai-go) on an Anthropic
// upstream gets the thinking signature and redacted thinking of a tool-use
// turn, buffered and streamed, and the upstream receives them back,
// unchanged and first in the assistant turn, when the caller continues the
// conversation with the tool result; a Responses caller the same through
// encrypted_content.
func TestKeysetThinkingAcrossTurns(t *testing.T) {
	bodies := make(chan string, 16)
	t.Setenv("THINK_UP", thinkingUpstream(t, bodies))
	g := startGW(t, writeTemp(t, "thinking.yaml", `_format_version: "1"
provider_keys:
  - {display_name: claude, adapter: anthropic, api_key: "${E2E_OPENAI_KEY}", api_base: "${THINK_UP}/v1"}
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_models: ["*"]}
models:
  - {display_name: claude, provider: anthropic, model_name: claude-x, provider_key: claude}
`))
	ctx := context.Background()
	oc := openai.NewClient(option.WithBaseURL("http://"+g.addr+"/v1"), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))
	user := openai.UserMessage("Weather in Oslo?")
	resp, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "claude", Messages: []openai.ChatCompletionMessageParamUnion{user}})
	if err != nil {
		t.Fatal(err)
	}
	<-bodies
	raw := resp.Choices[0].Message.RawJSON()
	for _, want := range []string{`"signature":"sig-abc"`, `"data":"opaque=="`, `"reasoning_content":"Need the weather."`} {
		if !strings.Contains(raw, want) {
			t.Fatalf("chat answer lacks %s: %s", want, raw)
		}
	}
	// Continue with the tool result: the assistant message goes back as
	// the caller got it (the SDK keeps unknown members in RawJSON).
	var assistant map[string]any
	_ = json.Unmarshal([]byte(raw), &assistant)
	next, _ := json.Marshal(map[string]any{"model": "claude", "messages": []any{
		map[string]any{"role": "user", "content": "Weather in Oslo?"}, assistant,
		map[string]any{"role": "tool", "tool_call_id": "toolu_1", "content": "sunny"},
	}})
	post := func(path, body string) {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+g.addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer caller-e2e")
		req.Header.Set("Content-Type", "application/json")
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		if r.StatusCode != 200 {
			t.Fatalf("%s: %d", path, r.StatusCode)
		}
	}
	post("/v1/chat/completions", string(next))
	wantTurn := `{"role":"assistant","content":[{"type":"thinking","thinking":"Need the weather.","signature":"sig-abc"},{"type":"redacted_thinking","data":"opaque=="},{"type":"tool_use"`
	if up := <-bodies; !strings.Contains(up, wantTurn) {
		t.Fatalf("upstream did not get the thinking back first in the turn: %s", up)
	}

	// Streamed: the signature arrives in delta.thinking_blocks.
	st := oc.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "claude", Messages: []openai.ChatCompletionMessageParamUnion{user}})
	var sig string
	for st.Next() {
		if c := st.Current(); len(c.Choices) > 0 {
			var d struct {
				ThinkingBlocks []struct{ Signature string } `json:"thinking_blocks"`
			}
			_ = json.Unmarshal([]byte(c.Choices[0].Delta.RawJSON()), &d)
			for _, b := range d.ThinkingBlocks {
				sig += b.Signature
			}
		}
	}
	<-bodies
	if err := st.Err(); err != nil || sig != "sig-abc" {
		t.Fatalf("streamed signature %q (%v)", sig, err)
	}

	// Responses: reasoning items with encrypted_content, sent back as input.
	rc := openai.NewClient(option.WithBaseURL("http://"+g.addr+"/v1"), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))
	r1, err := rc.Responses.New(ctx, responses.ResponseNewParams{Model: "claude",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in Oslo?")}})
	if err != nil {
		t.Fatal(err)
	}
	<-bodies
	var items []any
	for _, it := range r1.Output {
		var m map[string]any
		_ = json.Unmarshal([]byte(it.RawJSON()), &m)
		items = append(items, m)
	}
	if !strings.Contains(r1.RawJSON(), `"encrypted_content":"thinking:sig-abc"`) {
		t.Fatalf("responses output: %s", r1.RawJSON())
	}
	input := append([]any{map[string]any{"role": "user", "content": "Weather in Oslo?"}}, items...)
	input = append(input, map[string]any{"type": "function_call_output", "call_id": "toolu_1", "output": "sunny"})
	body, _ := json.Marshal(map[string]any{"model": "claude", "input": input, "store": false})
	post("/v1/responses", string(body))
	if up := <-bodies; !strings.Contains(up, wantTurn) {
		t.Fatalf("upstream did not get the thinking back from the Responses caller: %s", up)
	}
}
