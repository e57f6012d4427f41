package mock_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"gw/perf/mock"
)

const (
	responsesBody = `{"model":"gpt-4.1","instructions":"Be terse.","input":"Say hi"}`

	responsesStreamBody = `{"model":"gpt-4.1","stream":true,"input":[{"role":"user","content":"Say hi"}]}`

	responsesToolsBody = `{"model":"gpt-4.1","input":[{"role":"user","content":"Weather?"}],` +
		`"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}},{"type":"web_search"},` +
		`{"type":"custom","name":"grep"}]}`
)

// response is the part of a Responses answer the tests look at.
type response struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	CreatedAt int64  `json:"created_at"`
	Status    string `json:"status"`
	Model     string `json:"model"`
	Error     any    `json:"error"`
	Output    []struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Status  string `json:"status"`
		Role    string `json:"role"`
		Content []struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			Annotations []any  `json:"annotations"`
		} `json:"content"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"output"`
	Usage *struct {
		InputTokens        int `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens *int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens *int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
		TotalTokens int `json:"total_tokens"`
	} `json:"usage"`
}

func bufferedResponse(t *testing.T, c *http.Client, url, body string, header ...string) response {
	t.Helper()
	return decodeOK[response](t, post(t, c, url, body, header...))
}

// decodeOK reads a 200 answer's JSON body into a T, failing the test otherwise.
func decodeOK[T any](t *testing.T, resp *http.Response) T {
	t.Helper()
	b, err := readAll(resp)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("got status %d, err %v: %s", resp.StatusCode, err, b)
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("cannot decode %s: %s", b, err)
	}
	return v
}

func streamResponses(t *testing.T, c *http.Client, url, body string, header ...string) ([]event, *http.Response) {
	t.Helper()
	resp := post(t, c, url, body, header...)
	raw, err := readAll(resp)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("got status %d, err %v: %s", resp.StatusCode, err, raw)
	}
	return namedEvents(t, raw), resp
}

func TestBufferedResponses(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	for _, path := range []string{"/v1/responses", "/openai/v1/responses", "/knobs/chunks=3/v1/responses"} {
		resp := post(t, c, base+path, responsesBody)
		b, err := readAll(resp)
		if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" ||
			!strings.HasPrefix(resp.Header.Get("X-Request-Id"), "req_mock_") {
			t.Fatalf("%s: got %d %v %s (%v)", path, resp.StatusCode, resp.Header, b, err)
		}
		var r response
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: cannot decode %s: %s", path, b, err)
		}
		chunks := mock.DefaultChunks
		if strings.Contains(path, "chunks=3") {
			chunks = 3
		}
		if !strings.HasPrefix(r.ID, "resp_") || r.Object != "response" || r.Status != "completed" || r.CreatedAt == 0 ||
			r.Model != "gpt-4.1" || r.Error != nil || len(r.Output) != 1 {
			t.Fatalf("%s: unexpected response %s", path, b)
		}
		item := r.Output[0]
		if item.Type != "message" || item.Role != "assistant" || item.Status != "completed" || !strings.HasPrefix(item.ID, "msg_") ||
			len(item.Content) != 1 || item.Content[0].Type != "output_text" || item.Content[0].Annotations == nil ||
			len(item.Content[0].Text) != chunks*mock.DefaultChunkSize {
			t.Fatalf("%s: unexpected output %s", path, b)
		}
		u := r.Usage
		if u == nil || u.InputTokens != len(responsesBody)/4 || u.OutputTokens != chunks || u.TotalTokens != u.InputTokens+u.OutputTokens ||
			u.InputTokensDetails.CachedTokens == nil || *u.InputTokensDetails.CachedTokens != 0 ||
			u.OutputTokensDetails.ReasoningTokens == nil || *u.OutputTokensDetails.ReasoningTokens != 0 {
			t.Fatalf("%s: unexpected usage %s", path, b)
		}
	}
	if r := bufferedResponse(t, c, base+"/v1/responses", responsesBody, "x-mock-model-suffix", "-2025-04-14"); r.Model != "gpt-4.1-2025-04-14" {
		t.Fatalf("got model %q; want the suffix appended", r.Model)
	}
}

func TestStreamResponses(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	evs, resp := streamResponses(t, c, base+"/v1/responses", responsesStreamBody, "x-mock-chunks", "4", "x-mock-chunk-size", "5")
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("got Content-Type %q, Cache-Control %q", ct, resp.Header.Get("Cache-Control"))
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	var got []string
	for _, e := range evs {
		got = append(got, e.name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got events %q; want %q", got, want)
	}
	st := checkResponsesStream(t, "text stream", evs)
	if st.end != "response.completed" || len(st.text) != 20 || str(st.response["model"]) != "gpt-4.1" {
		t.Fatalf("got end %q, text %q, response %v", st.end, st.text, st.response)
	}
	u := obj(st.response["usage"])
	if num(t, u["input_tokens"]) != len(responsesStreamBody)/4 || num(t, u["output_tokens"]) != 4 {
		t.Fatalf("got usage %v", u)
	}
	// Every lifecycle event carries the same response id.
	id := str(obj(evs[0].m["response"])["id"])
	if !strings.HasPrefix(id, "resp_") || str(st.response["id"]) != id || str(obj(evs[1].m["response"])["id"]) != id {
		t.Fatalf("response ids differ: %s", evs[len(evs)-1].data)
	}
	// The buffered answer carries the same text.
	r := bufferedResponse(t, c, base+"/v1/responses", responsesBody, "x-mock-chunks", "4", "x-mock-chunk-size", "5")
	if r.Output[0].Content[0].Text != st.text {
		t.Fatalf("buffered text %q differs from streamed %q", r.Output[0].Content[0].Text, st.text)
	}
}

// TestResponsesMatchFixtures compares the mock's streams with recorded Responses streams:
// the same event sequence, and on every event the members every recording has and none
// that no recording has.
func TestResponsesMatchFixtures(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	text := fixtureEvents(t, "openai_responses_text.sse")
	failed := fixtureEvents(t, "openai_responses_error_then_failed.jsonl")
	reasoning := fixtureEvents(t, "openai_responses_reasoning_then_function_call.sse")
	multi := splitStreams(fixtureEvents(t, "openai_responses_reasoning_summary_multi_request.jsonl"))
	if len(multi) != 4 {
		t.Fatalf("got %d streams in the multi-request fixture; want 4", len(multi))
	}
	for i, evs := range append([][]event{text, failed, reasoning}, multi...) {
		checkResponsesStream(t, "fixture "+jsonString(i), evs)
	}
	fields := newFieldSets(slices.Concat(text, failed, reasoning, slices.Concat(multi...)))

	got, _ := streamResponses(t, c, base+"/v1/responses", responsesStreamBody)
	checkShape(t, "text", got, text)
	checkShape(t, "text", got, multi[3])
	fields.check(t, "text", got)

	got, _ = streamResponses(t, c, base+"/v1/responses", streamed(responsesToolsBody), "x-mock-tool-calls", "1")
	checkShape(t, "one function call", got, multi[1])
	fields.check(t, "one function call", got)

	got, _ = streamResponses(t, c, base+"/v1/responses", streamed(responsesToolsBody), "x-mock-tool-calls", "3")
	fields.check(t, "three function calls", got)

	got, _ = streamResponses(t, c, base+"/v1/responses", responsesStreamBody, "x-mock-stream-error-after", "0")
	checkShape(t, "stream_error_after=0", got, failed)
	fields.check(t, "stream_error_after=0", got)

	got, _ = streamResponses(t, c, base+"/v1/responses", responsesStreamBody, "x-mock-stream-error-after", "2")
	fields.check(t, "stream_error_after=2", got)
}

func TestResponsesToolCalls(t *testing.T) {
	_, base := startMock(t, mock.Config{Knobs: mock.Knobs{ToolCalls: 3}})
	c := newClient()
	if r := bufferedResponse(t, c, base+"/v1/responses", responsesBody); len(r.Output) != 1 || r.Output[0].Type != "message" {
		t.Fatalf("request without tools: got %+v; want a message", r.Output)
	}
	r := bufferedResponse(t, c, base+"/v1/responses", responsesToolsBody, "x-mock-chunks", "3")
	if len(r.Output) != 3 || r.Status != "completed" {
		t.Fatalf("got %+v; want 3 function calls", r)
	}
	ids := map[string]bool{}
	// Hosted tools have no name: calls go round-robin over the named ones.
	for i, name := range []string{"get_weather", "grep", "get_weather"} {
		item := r.Output[i]
		var args map[string]string
		if err := json.Unmarshal([]byte(item.Arguments), &args); err != nil || item.Type != "function_call" || item.Name != name ||
			item.Status != "completed" || !strings.HasPrefix(item.ID, "fc_") || !strings.HasPrefix(item.CallID, "call_") ||
			len(item.Arguments) != 3*mock.DefaultChunkSize {
			t.Fatalf("item %d: got %+v (%v); want function_call %s", i, item, err, name)
		}
		ids[item.ID], ids[item.CallID] = true, true
	}
	if len(ids) != 6 {
		t.Fatalf("ids are not unique: %v", ids)
	}
	frags := 3
	if r.Usage.OutputTokens != 3*(1+frags) {
		t.Fatalf("got output_tokens %d; want %d", r.Usage.OutputTokens, 3*(1+frags))
	}
	if r := bufferedResponse(t, c, base+"/v1/responses", responsesBody, "x-mock-tool-calls", "1"); len(r.Output) != 1 || r.Output[0].Name != "mock_tool_0" {
		t.Fatalf("got %+v; want one call to mock_tool_0", r.Output)
	}
	if r := bufferedResponse(t, c, base+"/v1/responses", responsesToolsBody, "x-mock-tool-calls", "0"); r.Output[0].Type != "message" {
		t.Fatalf("tool_calls=0: got %+v", r.Output)
	}

	evs, _ := streamResponses(t, c, base+"/v1/responses", streamed(responsesToolsBody), "x-mock-chunks", "3")
	st := checkResponsesStream(t, "function calls", evs)
	if len(st.items) != 3 || st.end != "response.completed" || num(t, obj(st.response["usage"])["output_tokens"]) != r.Usage.OutputTokens {
		t.Fatalf("got %d items, end %q, response %v", len(st.items), st.end, st.response)
	}
	for i, item := range st.items {
		if item["name"] != r.Output[i].Name || st.args[i] != r.Output[i].Arguments {
			t.Fatalf("item %d: got %v, arguments %q; want %+v", i, item, st.args[i], r.Output[i])
		}
	}
}

func TestResponsesErrors(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	for status, typ := range map[int]string{400: "invalid_request_error", 401: "invalid_request_error", 429: "requests", 500: "server_error", 503: "server_error"} {
		resp := post(t, c, base+"/v1/responses", responsesBody, "x-mock-status", jsonString(status))
		b, _ := readAll(resp)
		var e openAIError
		if resp.StatusCode != status || json.Unmarshal(b, &e) != nil || e.Error.Type != typ || !strings.HasPrefix(e.Error.Message, "mock: ") {
			t.Fatalf("status=%d: got %d %s; want an OpenAI envelope of type %s", status, resp.StatusCode, b, typ)
		}
	}
	f := func(body, wantMessage string) {
		t.Helper()
		resp := post(t, c, base+"/v1/responses", body)
		b, _ := readAll(resp)
		var e openAIError
		if resp.StatusCode != 400 || json.Unmarshal(b, &e) != nil || e.Error.Type != "invalid_request_error" ||
			!strings.Contains(e.Error.Message, wantMessage) {
			t.Fatalf("%s: got %d %s; want 400 containing %q", body, resp.StatusCode, b, wantMessage)
		}
	}
	f(`{"model":"gpt-4.1","input":"x"`, "could not parse the JSON body")
	f(`[]`, "could not parse the JSON body")
	f(`{"input":"x"}`, "Missing required parameter: 'model'.")
	f(`{"model":"","input":"x"}`, "Missing required parameter: 'model'.")
	f(`{"model":["gpt-4.1"],"input":"x"}`, "Missing required parameter: 'model'.")
	f(`{"model":"gpt-4.1","input":{"role":"user"}}`, "Invalid type for 'input'")
	f(`{"model":"gpt-4.1","input":null}`, "Invalid type for 'input'")
	// input may be absent: a request can continue a stored response.
	if r := bufferedResponse(t, c, base+"/v1/responses", `{"model":"gpt-4.1","previous_response_id":"resp_1"}`); r.Status != "completed" {
		t.Fatalf("got %+v", r)
	}
}

func TestResponsesStreamErrorAfter(t *testing.T) {
	s, base := startMock(t, mock.Config{})
	c := newClient()
	f := func(body, k string, want []string, header ...string) {
		t.Helper()
		evs, _ := streamResponses(t, c, base+"/v1/responses", body, append([]string{"x-mock-stream-error-after", k, "x-mock-chunks", "3"}, header...)...)
		if got := shape(evs); !slices.Equal(got, want) {
			t.Fatalf("stream_error_after=%s: got %q; want %q", k, got, want)
		}
		st := checkResponsesStream(t, "stream_error_after="+k, evs)
		e, re := obj(st.errorEvent["error"]), obj(st.response["error"])
		if st.end != "response.failed" || e["code"] != "server_is_overloaded" || e["type"] != "server_error" ||
			str(e["message"]) == "" || re["code"] != "server_is_overloaded" || re["message"] != e["message"] ||
			len(st.response["output"].([]any)) != 0 || st.response["usage"] != nil {
			t.Fatalf("stream_error_after=%s: got error %v, response %v", k, st.errorEvent, st.response)
		}
	}
	start := []string{"response.created", "response.in_progress"}
	f(responsesStreamBody, "0", append(start, "error", "response.failed"))
	f(responsesStreamBody, "2", append(start, "response.output_item.added/message", "response.content_part.added",
		"response.output_text.delta", "error", "response.failed"))
	f(responsesStreamBody, "9", append(start, "response.output_item.added/message", "response.content_part.added",
		"response.output_text.delta", "error", "response.failed"))
	f(streamed(responsesToolsBody), "1", append(start, "response.output_item.added/function_call", "error", "response.failed"),
		"x-mock-tool-calls", "2")
	if got := s.Stats().Errors; got != 4 {
		t.Fatalf("got %d errors counted; want 4", got)
	}
}

func TestResponsesFailAfter(t *testing.T) {
	s, base := startMock(t, mock.Config{})
	c := newClient()
	f := func(body, k string, want []string, header ...string) {
		t.Helper()
		resp := post(t, c, base+"/v1/responses", body, append([]string{"x-mock-fail-after", k, "x-mock-chunks", "3"}, header...)...)
		raw, err := readAll(resp)
		if resp.StatusCode != 200 || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("fail_after=%s: got status %d, read error %v; want 200 and %v", k, resp.StatusCode, err, io.ErrUnexpectedEOF)
		}
		evs := namedEvents(t, raw)
		if got := shape(evs); !slices.Equal(got, want) {
			t.Fatalf("fail_after=%s: got %q; want %q", k, got, want)
		}
		if st := checkResponsesStream(t, "fail_after="+k, evs); st.end != "" {
			t.Fatalf("fail_after=%s: a cut stream ended with %s", k, st.end)
		}
	}
	start := []string{"response.created", "response.in_progress"}
	f(responsesStreamBody, "0", start)
	f(responsesStreamBody, "3", append(start, "response.output_item.added/message", "response.content_part.added", "response.output_text.delta"))
	f(streamed(responsesToolsBody), "2", append(start, "response.output_item.added/function_call",
		"response.function_call_arguments.delta"), "x-mock-tool-calls", "1")
	if got := s.Stats().Cuts; got != 3 {
		t.Fatalf("got %d cuts; want 3", got)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/responses", strings.NewReader(responsesBody))
	req.Header.Set("x-mock-fail-after", "0")
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("buffered: got status %d; want a transport error", resp.StatusCode)
	}
	waitFor(t, func() bool { return s.Stats().InFlight == 0 }, "in_flight to drop to 0")
}

func TestResponsesStreamEnds(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	f := func(want []string, header ...string) {
		t.Helper()
		evs, _ := streamResponses(t, c, base+"/v1/responses", responsesStreamBody, header...)
		if got := shape(evs); !slices.Equal(got, want) {
			t.Fatalf("%v: got %q; want %q", header, got, want)
		}
		checkResponsesStream(t, "ends", evs)
	}
	f([]string{"response.created", "response.in_progress", "response.output_item.added/message", "response.content_part.added",
		"response.output_text.done", "response.content_part.done", "response.output_item.done/message", "response.completed"},
		"x-mock-chunks", "0")
	f([]string{"response.created", "response.in_progress", "response.output_item.added/message", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done/message"},
		"x-mock-no-done", "1")
	f(nil, "x-mock-empty-stream", "1")
}
