package respconv_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"gw/sse/respconv"
	"gw/sse/transcode"
)

// sameJSON fails unless got and want decode to equal values.
func sameJSON(tb testing.TB, name string, got []byte, want string) {
	tb.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		tb.Fatalf("%s: invalid JSON output %s: %s", name, got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		tb.Fatalf("%s: invalid want: %s", name, err)
	}
	if !reflect.DeepEqual(g, w) {
		tb.Fatalf("%s:\ngot  %s\nwant %s", name, got, want)
	}
}

// echoDefaults is what a response echoes for a request without settings.
const echoDefaults = `"previous_response_id":null,"store":false,"background":false,"instructions":null,"max_output_tokens":null,"max_tool_calls":null,"metadata":{},"parallel_tool_calls":true,"reasoning":{"effort":null,"summary":null},"temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","user":null`

func TestChatResponseToResponses(t *testing.T) {
	f := func(name, body, want string, wantUsage transcode.Usage) {
		t.Helper()
		out, u, err := respconv.ChatResponseToResponses([]byte("prefix"), []byte(body), respconv.ResponseOptions{Model: []byte("alias")})
		if err != nil {
			t.Fatalf("%s: %s", name, err)
		}
		if string(out[:6]) != "prefix" {
			t.Fatalf("%s: dst not appended to", name)
		}
		sameJSON(t, name, out[6:], want)
		if u != wantUsage {
			t.Fatalf("%s: usage %+v; want %+v", name, u, wantUsage)
		}
	}
	usage := `"usage":{"prompt_tokens":80,"completion_tokens":18,"total_tokens":98,"prompt_tokens_details":{"cached_tokens":64},"completion_tokens_details":{"reasoning_tokens":10}}`
	respUsage := `"usage":{"input_tokens":80,"input_tokens_details":{"cached_tokens":64},"output_tokens":18,"output_tokens_details":{"reasoning_tokens":10},"total_tokens":98}`
	u := transcode.Usage{Prompt: 80, Completion: 18, Total: 98, Cached: 64, Reasoning: 10}
	f("text with usage",
		`{"id":"chatcmpl-9x","object":"chat.completion","created":1755137933,"model":"gpt-4o","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Hello","refusal":null,"annotations":[]}}],`+usage+`}`,
		`{"id":"resp_9x","object":"response","created_at":1755137933,"status":"completed","model":"alias","error":null,"incomplete_details":null,`+respUsage+`,`+echoDefaults+`,
		  "output":[{"id":"msg_9x_0","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello","annotations":[],"logprobs":[]}]}]}`, u)
	f("reasoning, text and two tool calls",
		`{"id":"chatcmpl-1","created":1,"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"Checking.","reasoning_content":"think","tool_calls":[
		  {"id":"call_a","type":"function","function":{"name":"w","arguments":"{\"c\":\"Oslo\"}"}},{"id":"call_b","type":"function","function":{"name":"t","arguments":""}}]}}]}`,
		`{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"alias","error":null,"incomplete_details":null,"usage":null,`+echoDefaults+`,"output":[
		  {"id":"rs_1_0","type":"reasoning","summary":[{"type":"summary_text","text":"think"}]},
		  {"id":"msg_1_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Checking.","annotations":[],"logprobs":[]}]},
		  {"id":"fc_1_2","type":"function_call","status":"completed","call_id":"call_a","name":"w","arguments":"{\"c\":\"Oslo\"}"},
		  {"id":"fc_1_3","type":"function_call","status":"completed","call_id":"call_b","name":"t","arguments":"{}"}]}`, transcode.Usage{})
	f("length: incomplete",
		`{"id":"chatcmpl-2","created":2,"choices":[{"index":0,"finish_reason":"length","message":{"role":"assistant","content":"ab"}}]}`,
		`{"id":"resp_2","object":"response","created_at":2,"status":"incomplete","model":"alias","error":null,"incomplete_details":{"reason":"max_output_tokens"},"usage":null,`+echoDefaults+`,
		  "output":[{"id":"msg_2_0","type":"message","status":"incomplete","role":"assistant","content":[{"type":"output_text","text":"ab","annotations":[],"logprobs":[]}]}]}`, transcode.Usage{})
	f("content_filter with a refusal, empty content",
		`{"id":"chatcmpl-3","created":3,"choices":[{"index":0,"finish_reason":"content_filter","message":{"role":"assistant","content":"","refusal":"no"}}]}`,
		`{"id":"resp_3","object":"response","created_at":3,"status":"incomplete","model":"alias","error":null,"incomplete_details":{"reason":"content_filter"},"usage":null,`+echoDefaults+`,
		  "output":[{"id":"msg_3_0","type":"message","status":"incomplete","role":"assistant","content":[{"type":"refusal","refusal":"no"}]}]}`, transcode.Usage{})
}

func TestChatResponseToResponsesLegacyAndEcho(t *testing.T) {
	out, _, err := respconv.ChatResponseToResponses(nil, []byte(`{"created":4,"choices":[{"message":{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{}"}}}]}`),
		respconv.ResponseOptions{Model: []byte(`"a"`), Request: []byte(`{"model":"x","input":"hi","tools":[{"type":"function","name":"f"}],"temperature":0.2,"instructions":"be brief","store":false}`)})
	if err != nil {
		t.Fatal(err)
	}
	m := obj(t, string(out))
	item := m["output"].([]any)[0]
	if str(get(item, "type")) != "function_call" || str(get(item, "name")) != "f" || len(str(get(item, "call_id"))) < 6 {
		t.Fatalf("item %v", item)
	}
	if str(m["model"]) != "a" || str(m["instructions"]) != "be brief" || get(m, "temperature").(json.Number).String() != "0.2" || len(m["tools"].([]any)) != 1 {
		t.Fatalf("echo %v", m)
	}
}

func TestChatResponseToResponsesErrors(t *testing.T) {
	f := func(body string, want error) {
		t.Helper()
		out, _, err := respconv.ChatResponseToResponses([]byte("x"), []byte(body), respconv.ResponseOptions{})
		if !errors.Is(err, want) || string(out) != "x" {
			t.Fatalf("%s: %q, %v; want %v", body, out, err, want)
		}
	}
	f(`{"error":{"message":"m","type":"server_error"}}`, respconv.ErrUpstreamFailed)
	f(`not json`, respconv.ErrInvalid)
	f(`{"id":"x"}`, respconv.ErrInvalid)
	f(`{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"arguments":"{}"}}]}}]}`, respconv.ErrInvalid)
}

func TestResponsesResponseToChat(t *testing.T) {
	f := func(name, body, want string, wantUsage transcode.Usage) {
		t.Helper()
		out, u, err := respconv.ResponsesResponseToChat(nil, []byte(body), respconv.ResponseOptions{Model: []byte("alias")})
		if err != nil {
			t.Fatalf("%s: %s", name, err)
		}
		sameJSON(t, name, out, want)
		if u != wantUsage {
			t.Fatalf("%s: usage %+v; want %+v", name, u, wantUsage)
		}
	}
	f("reasoning, text in two parts, a call, usage",
		`{"id":"resp_abc","object":"response","created_at":17,"status":"completed","model":"gpt-5","error":null,"output":[
		  {"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"s1"},{"type":"summary_text","text":"s2"}],"encrypted_content":"xx"},
		  {"id":"msg_1","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Hel","annotations":[]},{"type":"output_text","text":"lo\n"}]},
		  {"id":"ws_1","type":"web_search_call","status":"completed"},
		  {"id":"fc_1","type":"function_call","call_id":"call_1","name":"f","arguments":"{\"a\":1}","status":"completed"}],
		 "usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":3},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":17}}`,
		`{"id":"chatcmpl-abc","object":"chat.completion","created":17,"model":"alias","choices":[{"index":0,"logprobs":null,"finish_reason":"tool_calls",
		  "message":{"role":"assistant","content":"Hello\n","refusal":null,"reasoning_content":"s1\n\ns2","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}}],
		 "usage":{"prompt_tokens":10,"completion_tokens":7,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":3},"completion_tokens_details":{"reasoning_tokens":2}}}`,
		transcode.Usage{Prompt: 10, Completion: 7, Total: 17, Cached: 3, Reasoning: 2})
	f("incomplete, refusal, no text",
		`{"id":"resp_2","created_at":2,"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"message","content":[{"type":"refusal","refusal":"no"}]}]}`,
		`{"id":"chatcmpl-2","object":"chat.completion","created":2,"model":"alias","choices":[{"index":0,"logprobs":null,"finish_reason":"length","message":{"role":"assistant","content":null,"refusal":"no"}}]}`,
		transcode.Usage{})
	f("reasoning_text content when there is no summary",
		`{"id":"resp_3","created_at":3,"status":"completed","output":[{"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"raw"}]},{"type":"message","content":[{"type":"output_text","text":"x"}]}]}`,
		`{"id":"chatcmpl-3","object":"chat.completion","created":3,"model":"alias","choices":[{"index":0,"logprobs":null,"finish_reason":"stop","message":{"role":"assistant","content":"x","refusal":null,"reasoning_content":"raw"}}]}`,
		transcode.Usage{})

	for _, c := range []struct {
		body string
		want error
	}{
		{`{"status":"failed","error":{"code":"server_error","message":"m"},"output":[]}`, respconv.ErrUpstreamFailed},
		{`{"error":{"code":"x","message":"m"}}`, respconv.ErrUpstreamFailed},
		{`[]`, respconv.ErrInvalid},
		{`{"status":"completed"}`, respconv.ErrInvalid},
	} {
		if out, _, err := respconv.ResponsesResponseToChat([]byte("x"), []byte(c.body), respconv.ResponseOptions{}); !errors.Is(err, c.want) || string(out) != "x" {
			t.Fatalf("%s: %q %v; want %v", c.body, out, err, c.want)
		}
	}
}
