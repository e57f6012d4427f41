package respconv_test

// Output parsed by the official Go SDK (openai-go, already a module
// dependency for the e2e tests): every member its types mark required must be
// present and of the right type.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/packages/respjson"
	"github.com/openai/openai-go/packages/ssestream"
	"github.com/openai/openai-go/responses"

	"gw/sse/respconv"
)

// requirePresent checks the `json:",required"` members of the SDK struct v:
// present, and null or of the declared type.
func requirePresent(tb testing.TB, what string, v any) {
	tb.Helper()
	rv := reflect.ValueOf(v)
	meta := rv.FieldByName("JSON")
	if !meta.IsValid() {
		return
	}
	rt := rv.Type()
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		tag := f.Tag.Get("json")
		if !strings.Contains(tag, ",required") {
			continue
		}
		m := meta.FieldByName(f.Name)
		if !m.IsValid() {
			continue
		}
		field := m.Interface().(respjson.Field)
		if field.Raw() == respjson.Omitted {
			tb.Fatalf("%s: required member %q is missing", what, strings.Split(tag, ",")[0])
		}
		if field.Raw() != respjson.Null && !field.Valid() {
			tb.Fatalf("%s: member %q = %s does not parse", what, strings.Split(tag, ",")[0], field.Raw())
		}
	}
}

func sseResponse(body []byte) *http.Response {
	return &http.Response{
		StatusCode: 200,
		Header:     http.Header{"Content-Type": []string{"text/event-stream"}},
		Body:       io.NopCloser(bytes.NewReader(body)),
	}
}

func checkResponseSDK(tb testing.TB, r responses.Response) {
	tb.Helper()
	requirePresent(tb, "response", r)
	for _, item := range r.Output {
		switch it := item.AsAny().(type) {
		case responses.ResponseOutputMessage:
			requirePresent(tb, "message item", it)
			for _, c := range it.Content {
				requirePresent(tb, "content part", c.AsAny())
			}
		case responses.ResponseFunctionToolCall:
			requirePresent(tb, "function_call item", it)
		case responses.ResponseReasoningItem:
			requirePresent(tb, "reasoning item", it)
		default:
			tb.Fatalf("unexpected output item %T", it)
		}
	}
	if r.JSON.Usage.Valid() {
		requirePresent(tb, "usage", r.Usage)
	}
}

func TestSDKParsesResponsesStream(t *testing.T) {
	for _, name := range []string{"openai_chat_text.sse", "openai_chat_parallel_tool_calls_include_usage.sse", "openai_chat_include_usage_finish_length.sse"} {
		src := readFixture(t, name)
		st := respconv.NewChatToResponsesStream()
		out, err := runStream(t, st, "alias", append(src, []byte(chunk(`{"reasoning_content":"r"}`, "")+chunk(`{"refusal":"no"}`, ""))...), nil)
		respconv.ReleaseStream(st)
		if err != nil {
			t.Fatal(err)
		}
		stream := ssestream.NewStream[responses.ResponseStreamEventUnion](ssestream.NewDecoder(sseResponse(out)), nil)
		var final responses.Response
		n := 0
		for stream.Next() {
			ev := stream.Current()
			any := ev.AsAny()
			requirePresent(t, name+" "+ev.Type, any)
			switch e := any.(type) {
			case responses.ResponseCompletedEvent:
				final = e.Response
			case responses.ResponseIncompleteEvent:
				final = e.Response
			case responses.ResponseOutputItemAddedEvent:
				requirePresent(t, "added item", e.Item.AsAny())
			}
			n++
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("%s: SDK stream error: %s", name, err)
		}
		if final.ID == "" || n < 3 {
			t.Fatalf("%s: no final response in %d events", name, n)
		}
		checkResponseSDK(t, final)
		if name == "openai_chat_text.sse" && !strings.HasPrefix(final.OutputText(), "Hi there!") {
			t.Fatalf("OutputText() = %q", final.OutputText())
		}
	}
}

func TestSDKParsesResponsesFailed(t *testing.T) {
	st := respconv.NewChatToResponsesStream()
	defer respconv.ReleaseStream(st)
	out, err := runStream(t, st, "alias", []byte(chunk(`{"content":"x"}`, "")+`data: {"error":{"message":"m","code":"rate_limit_exceeded"}}`+"\n\n"), nil)
	if err == nil {
		t.Fatal("no error")
	}
	stream := ssestream.NewStream[responses.ResponseStreamEventUnion](ssestream.NewDecoder(sseResponse(out)), nil)
	var failed responses.ResponseFailedEvent
	for stream.Next() {
		if e, ok := stream.Current().AsAny().(responses.ResponseFailedEvent); ok {
			failed = e
		}
	}
	if stream.Err() != nil || failed.Response.Error.Code != "rate_limit_exceeded" || failed.Response.Error.Message != "m" || failed.Response.Status != "failed" {
		t.Fatalf("failed event %+v, %v", failed.Response.Error, stream.Err())
	}
	checkResponseSDK(t, failed.Response)
}

func TestSDKParsesResponseBody(t *testing.T) {
	out, _, err := respconv.ChatResponseToResponses(nil, []byte(`{"id":"chatcmpl-1","created":1,"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"Hi","reasoning_content":"r","tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}}]}}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`),
		respconv.ResponseOptions{Model: []byte("alias")})
	if err != nil {
		t.Fatal(err)
	}
	var r responses.Response
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	checkResponseSDK(t, r)
	if r.OutputText() != "Hi" || r.Usage.TotalTokens != 5 || len(r.Output) != 3 || r.Output[2].AsFunctionCall().CallID != "call_a" {
		t.Fatalf("parsed %+v", r)
	}
}

func TestSDKParsesChat(t *testing.T) {
	src := readFixture(t, "openai_responses_reasoning_then_function_call.sse")
	st := respconv.NewResponsesToChatStream()
	out, err := runStream(t, st, "alias", src, nil, includeUsage)
	respconv.ReleaseStream(st)
	if err != nil {
		t.Fatal(err)
	}
	stream := ssestream.NewStream[openai.ChatCompletionChunk](ssestream.NewDecoder(sseResponse(out)), nil)
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		c := stream.Current()
		requirePresent(t, "chunk", c)
		acc.AddChunk(c)
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 || len(acc.Choices[0].Message.ToolCalls) != 1 || acc.Choices[0].Message.ToolCalls[0].Function.Arguments != `{"result":6666}` ||
		acc.Choices[0].FinishReason != "tool_calls" || acc.Usage.TotalTokens == 0 {
		t.Fatalf("accumulated %+v", acc.ChatCompletion)
	}

	body, _, err := respconv.ResponsesResponseToChat(nil, []byte(`{"id":"resp_1","created_at":1,"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"Hi"}]}],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`), respconv.ResponseOptions{Model: []byte("a")})
	if err != nil {
		t.Fatal(err)
	}
	var cc openai.ChatCompletion
	if err := json.Unmarshal(body, &cc); err != nil {
		t.Fatal(err)
	}
	requirePresent(t, "chat.completion", cc)
	requirePresent(t, "choice", cc.Choices[0])
	requirePresent(t, "message", cc.Choices[0].Message)
	if cc.Choices[0].Message.Content != "Hi" {
		t.Fatalf("parsed %+v", cc)
	}
}
