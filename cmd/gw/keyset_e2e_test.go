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
  - display_name: panel
    ensemble:
      panel: [{model: claude}, {model: claude}]
      judge: {model: claude}
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

// TestKeyset501: an alias this build cannot serve answers 501 with the same
// error.type on every surface: invalid_request_error (it was api_error on
// Messages).
func TestKeyset501(t *testing.T) {
	startMock(t, "KEYSET_MOCK", mock.Config{})
	g := startGW(t, writeTemp(t, "keyset.yaml", keysetFile))
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"panel","messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/messages", `{"model":"panel","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/responses", `{"model":"panel","input":"hi"}`},
	} {
		req, _ := http.NewRequest("POST", "http://"+g.addr+c.path, strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer caller-e2e")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error struct{ Type, Code string }
		}
		err = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 501 || e.Error.Type != "invalid_request_error" {
			t.Fatalf("%s: %d %+v (%v)", c.path, resp.StatusCode, e, err)
		}
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
