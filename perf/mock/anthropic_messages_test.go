package mock_test

import (
	"bytes"
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
	anthropicBody = `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Say hi"}]}`

	anthropicStreamBody = `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,` +
		`"messages":[{"role":"user","content":"Say hi"}]}`

	anthropicToolsBody = `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Weather?"}],` +
		`"tools":[{"name":"get_weather","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search"},` +
		`{"name":"get_time","input_schema":{"type":"object"}}]}`
)

// postAnthropic posts body with the headers of an Anthropic client.
func postAnthropic(t testing.TB, c *http.Client, url, body string, header ...string) *http.Response {
	t.Helper()
	return post(t, c, url, body, append([]string{"anthropic-version", "2023-06-01", "x-api-key", "sk-ant-test"}, header...)...)
}

// streamed turns a request body into its streaming variant.
func streamed(body string) string { return strings.Replace(body, `{`, `{"stream":true,`, 1) }

// anthropicMessage is the part of a Messages answer the tests look at.
type anthropicMessage struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Role    string `json:"role"`
	Model   string `json:"model"`
	Content []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

func bufferedMessage(t *testing.T, c *http.Client, url, body string, header ...string) anthropicMessage {
	t.Helper()
	return decodeOK[anthropicMessage](t, postAnthropic(t, c, url, body, header...))
}

func streamMessages(t *testing.T, c *http.Client, url, body string, header ...string) ([]event, *http.Response) {
	t.Helper()
	resp := postAnthropic(t, c, url, body, header...)
	raw, err := readAll(resp)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("got status %d, err %v: %s", resp.StatusCode, err, raw)
	}
	return namedEvents(t, raw), resp
}

func TestBufferedMessages(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	for _, path := range []string{"/v1/messages", "/anthropic/v1/messages", "/knobs/chunks=3/v1/messages"} {
		resp := postAnthropic(t, c, base+path, anthropicBody)
		body, err := readAll(resp)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: got status %d, err %v: %s", path, resp.StatusCode, err, body)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s: got Content-Type %q", path, ct)
		}
		if id := resp.Header.Get("Request-Id"); !strings.HasPrefix(id, "req_mock_") || id != resp.Header.Get("X-Request-Id") {
			t.Fatalf("%s: got request-id %q, X-Request-Id %q", path, id, resp.Header.Get("X-Request-Id"))
		}
		var m anthropicMessage
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("%s: cannot decode %s: %s", path, body, err)
		}
		chunks := mock.DefaultChunks
		if strings.Contains(path, "chunks=3") {
			chunks = 3
		}
		if !strings.HasPrefix(m.ID, "msg_") || m.Type != "message" || m.Role != "assistant" || m.Model != "claude-sonnet-4-5" ||
			m.StopReason != "end_turn" || m.StopSequence != nil || len(m.Content) != 1 || m.Content[0].Type != "text" ||
			len(m.Content[0].Text) != chunks*mock.DefaultChunkSize {
			t.Fatalf("%s: unexpected message %s", path, body)
		}
		u := m.Usage
		if u.InputTokens != len(anthropicBody)/4 || u.OutputTokens != chunks || u.CacheCreationInputTokens != 0 || u.CacheReadInputTokens != 0 {
			t.Fatalf("%s: unexpected usage %+v", path, u)
		}
		// Every member is there, nulls included.
		msg := object(t, string(body))
		for _, key := range []string{"id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"} {
			if _, ok := msg[key]; !ok {
				t.Fatalf("%s: message has no %q: %s", path, key, body)
			}
		}
		usage := msg["usage"].(map[string]any)
		for _, key := range []string{"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"} {
			if _, ok := usage[key]; !ok {
				t.Fatalf("%s: usage has no %q: %s", path, key, body)
			}
		}
	}

	// model_suffix.
	if m := bufferedMessage(t, c, base+"/v1/messages", anthropicBody, "x-mock-model-suffix", "-20250929"); m.Model != "claude-sonnet-4-5-20250929" {
		t.Fatalf("got model %q; want the suffix appended", m.Model)
	}
}

func TestStreamMessages(t *testing.T) {
	s, base := startMock(t, mock.Config{})
	c := newClient()
	evs, resp := streamMessages(t, c, base+"/v1/messages", anthropicStreamBody, "x-mock-chunks", "4", "x-mock-chunk-size", "5")
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("got Content-Type %q, Cache-Control %q", ct, resp.Header.Get("Cache-Control"))
	}
	if !strings.HasPrefix(resp.Header.Get("Request-Id"), "req_mock_") {
		t.Fatalf("got request-id %q", resp.Header.Get("Request-Id"))
	}
	want := []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta",
		"content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	var got []string
	for _, e := range evs {
		got = append(got, e.name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got events %q; want %q", got, want)
	}
	st := checkAnthropicStream(t, "text stream", evs)
	msg := st.message
	if !strings.HasPrefix(str(msg["id"]), "msg_") || msg["model"] != "claude-sonnet-4-5" || msg["stop_reason"] != nil ||
		len(msg["content"].([]any)) != 0 || num(t, obj(msg["usage"])["input_tokens"]) != len(anthropicStreamBody)/4 {
		t.Fatalf("unexpected message_start %v", msg)
	}
	if st.stopReason != "end_turn" || num(t, st.usage["output_tokens"]) != 4 || len(st.text[0]) != 20 || st.end != "message_stop" {
		t.Fatalf("got stop_reason %q, usage %v, text %q, end %q", st.stopReason, st.usage, st.text[0], st.end)
	}
	// The buffered answer carries the same text.
	m := bufferedMessage(t, c, base+"/v1/messages", anthropicBody, "x-mock-chunks", "4", "x-mock-chunk-size", "5")
	if m.Content[0].Text != st.text[0] {
		t.Fatalf("buffered text %q differs from streamed %q", m.Content[0].Text, st.text[0])
	}
	if got := s.Stats(); got.Streams != 1 {
		t.Fatalf("got %d streams; want 1", got.Streams)
	}
}

// TestMessagesMatchFixtures compares the mock's streams with recorded Anthropic streams:
// the same event sequence, and on every event the members every recording has and none
// that no recording has.
func TestMessagesMatchFixtures(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	text := fixtureEvents(t, "anthropic_text.sse")
	parallel := fixtureEvents(t, "anthropic_text_then_parallel_tool_use.sse")
	toolJSON := fixtureEvents(t, "anthropic_tool_use_json.jsonl")
	for name, evs := range map[string][]event{"text": text, "parallel": parallel, "tool json": toolJSON} {
		checkAnthropicStream(t, "fixture "+name, evs)
	}
	fields := newFieldSets(slices.Concat(text, parallel, toolJSON))

	got, _ := streamMessages(t, c, base+"/v1/messages", anthropicStreamBody)
	checkShape(t, "text", got, text)
	fields.check(t, "text", got)

	got, _ = streamMessages(t, c, base+"/v1/messages", streamed(anthropicToolsBody), "x-mock-tool-calls", "1")
	checkShape(t, "one tool call", got, toolJSON)
	fields.check(t, "one tool call", got)

	// The recording opens with a text block and pings after it; the mock answers only
	// tool calls and pings after the first call's empty delta.
	got, _ = streamMessages(t, c, base+"/v1/messages", streamed(anthropicToolsBody), "x-mock-tool-calls", "2")
	var tools []event
	for _, e := range parallel {
		if idx, ok := e.m["index"]; !ok || jsonString(idx) != "0" {
			tools = append(tools, e)
		}
	}
	checkShape(t, "two tool calls", got, tools, "ping")
	fields.check(t, "two tool calls", got)
	if st := checkAnthropicStream(t, "two tool calls", got); st.pings != 1 {
		t.Fatalf("got %d pings; want 1", st.pings)
	}
}

func TestMessagesToolCalls(t *testing.T) {
	_, base := startMock(t, mock.Config{Knobs: mock.Knobs{ToolCalls: 3}})
	c := newClient()
	// The server default applies only to requests with tools.
	if m := bufferedMessage(t, c, base+"/v1/messages", anthropicBody); m.StopReason != "end_turn" || m.Content[0].Type != "text" {
		t.Fatalf("request without tools: got %+v; want a text answer", m)
	}
	m := bufferedMessage(t, c, base+"/v1/messages", anthropicToolsBody, "x-mock-chunks", "3")
	if m.StopReason != "tool_use" || len(m.Content) != 3 {
		t.Fatalf("got %+v; want 3 tool_use blocks and stop_reason tool_use", m)
	}
	ids := map[string]bool{}
	for i, name := range []string{"get_weather", "web_search", "get_time"} {
		b := m.Content[i]
		var input map[string]string
		if err := json.Unmarshal(b.Input, &input); err != nil || b.Type != "tool_use" || b.Name != name ||
			!strings.HasPrefix(b.ID, "toolu_") || len(b.Input) != 3*mock.DefaultChunkSize {
			t.Fatalf("block %d: got %+v (%v); want tool_use %s with an object input of %d bytes", i, b, err, name, 3*mock.DefaultChunkSize)
		}
		ids[b.ID] = true
	}
	if len(ids) != 3 {
		t.Fatalf("tool_use ids are not unique: %v", ids)
	}
	frags := (3*mock.DefaultChunkSize + mock.DefaultChunkSize - 1) / mock.DefaultChunkSize
	if m.Usage.OutputTokens != 3*(1+frags) {
		t.Fatalf("got output_tokens %d; want %d", m.Usage.OutputTokens, 3*(1+frags))
	}
	// Per request: forced without tools, named mock_tool_<i>; 0 turns the default off.
	if m := bufferedMessage(t, c, base+"/v1/messages", anthropicBody, "x-mock-tool-calls", "1"); len(m.Content) != 1 || m.Content[0].Name != "mock_tool_0" {
		t.Fatalf("got %+v; want one call to mock_tool_0", m)
	}
	if m := bufferedMessage(t, c, base+"/v1/messages", anthropicToolsBody, "x-mock-tool-calls", "0"); m.StopReason != "end_turn" {
		t.Fatalf("tool_calls=0: got stop_reason %q", m.StopReason)
	}

	// Streamed: each block starts with input {} and an empty partial_json; the fragments
	// make the buffered input.
	evs, _ := streamMessages(t, c, base+"/v1/messages", streamed(anthropicToolsBody), "x-mock-chunks", "3")
	st := checkAnthropicStream(t, "tool calls", evs)
	if st.stopReason != "tool_use" || len(st.blocks) != 3 || st.stopped != 3 || num(t, st.usage["output_tokens"]) != m.Usage.OutputTokens {
		t.Fatalf("got stop_reason %q, %d blocks, %d stopped, usage %v", st.stopReason, len(st.blocks), st.stopped, st.usage)
	}
	for i, b := range st.blocks {
		if b["type"] != "tool_use" || b["name"] != m.Content[i].Name || len(obj(b["input"])) != 0 || !strings.HasPrefix(str(b["id"]), "toolu_") {
			t.Fatalf("block %d: got %v", i, b)
		}
		if first, ok := st.firstJSON[i]; !ok || first != "" {
			t.Fatalf("block %d: first partial_json %q; want \"\"", i, first)
		}
		if st.partial[i] != string(m.Content[i].Input) {
			t.Fatalf("block %d: streamed input %q differs from buffered %s", i, st.partial[i], m.Content[i].Input)
		}
	}
}

func TestMessagesErrorStatuses(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	for status, typ := range map[int]string{
		400: "invalid_request_error", 401: "authentication_error", 402: "billing_error", 403: "permission_error",
		404: "not_found_error", 409: "invalid_request_error", 413: "request_too_large", 422: "invalid_request_error",
		429: "rate_limit_error", 500: "api_error", 502: "api_error", 503: "api_error", 504: "timeout_error", 529: "overloaded_error",
	} {
		for _, path := range []string{"/v1/messages", "/v1/messages/count_tokens"} {
			resp := postAnthropic(t, c, base+path, anthropicBody, "x-mock-status", jsonString(status), "x-mock-retry-after", "7")
			b, _ := readAll(resp)
			if resp.StatusCode != status || resp.Header.Get("Retry-After") != "7" {
				t.Fatalf("%s status=%d: got %d, Retry-After %q", path, status, resp.StatusCode, resp.Header.Get("Retry-After"))
			}
			checkAnthropicError(t, b, typ, "mock: injected status")
		}
	}
}

// checkAnthropicError checks that b is exactly {"type":"error","error":{"type","message"}}.
func checkAnthropicError(t *testing.T, b []byte, wantType, wantMessage string) {
	t.Helper()
	m := object(t, string(b))
	e := obj(m["error"])
	if len(m) != 2 || m["type"] != "error" || len(e) != 2 || e["type"] != wantType || !strings.Contains(str(e["message"]), wantMessage) {
		t.Fatalf("got %s; want an Anthropic error of type %s with a message containing %q", b, wantType, wantMessage)
	}
}

func TestBadMessagesRequests(t *testing.T) {
	s, base := startMock(t, mock.Config{})
	c := newClient()
	f := func(path, body, wantMessage string, header ...string) {
		t.Helper()
		resp := post(t, c, base+path, body, header...)
		b, _ := readAll(resp)
		if resp.StatusCode != 400 {
			t.Fatalf("%s %s: got status %d; want 400", path, body, resp.StatusCode)
		}
		checkAnthropicError(t, b, "invalid_request_error", wantMessage)
	}
	v := []string{"anthropic-version", "2023-06-01"}
	// anthropic-version is required, on both endpoints.
	f("/v1/messages", anthropicBody, "anthropic-version: header is required", "x-api-key", "k")
	f("/v1/messages/count_tokens", anthropicBody, "anthropic-version: header is required")
	for _, path := range []string{"/v1/messages", "/v1/messages/count_tokens"} {
		f(path, `{"model":"m","max_tokens":1,"messages":[`, "error parsing the body", v...)
		f(path, `not json`, "error parsing the body", v...)
		f(path, `{"max_tokens":1,"messages":[1]}`, "model: Field required", v...)
		f(path, `{"model":7,"max_tokens":1,"messages":[1]}`, "model: Field required", v...)
		f(path, `{"model":"m","max_tokens":1}`, "messages: Field required", v...)
		f(path, `{"model":"m","max_tokens":1,"messages":{}}`, "messages: Input should be a valid list", v...)
		f(path, `{"model":"m","max_tokens":1,"messages":[]}`, "messages: at least one message is required", v...)
	}
	// max_tokens is required by messages only.
	f("/v1/messages", `{"model":"m","messages":[1]}`, "max_tokens: Field required", v...)
	f("/v1/messages", `{"model":"m","max_tokens":0,"messages":[1]}`, "max_tokens: Input should be a valid integer", v...)
	f("/v1/messages", `{"model":"m","max_tokens":"9","messages":[1]}`, "max_tokens: Input should be a valid integer", v...)
	f("/v1/messages", `{"model":"m","max_tokens":1.5,"messages":[1]}`, "max_tokens: Input should be a valid integer", v...)

	// Bad knobs are answered in Anthropic's words too.
	resp := postAnthropic(t, c, base+"/v1/messages", anthropicBody, "x-mock-chunkz", "1")
	b, _ := readAll(resp)
	if resp.StatusCode != 400 {
		t.Fatalf("bad knob: got %d", resp.StatusCode)
	}
	checkAnthropicError(t, b, "invalid_request_error", "mock: unknown knob")

	// Headers are recorded as sent.
	resp = postAnthropic(t, c, base+"/v1/messages", anthropicBody, "anthropic-beta", "tools-2024-04-04")
	readAll(resp)
	last := s.Requests()[len(s.Requests())-1]
	if last.Header.Get("X-Api-Key") != "sk-ant-test" || last.Header.Get("Anthropic-Version") != "2023-06-01" ||
		last.Header.Get("Anthropic-Beta") != "tools-2024-04-04" || last.Body != anthropicBody {
		t.Fatalf("recorded %+v", last)
	}

	// Unknown routes answer in Anthropic's words when the client is Anthropic's.
	resp = postAnthropic(t, c, base+"/v1/messages/batches", anthropicBody)
	b, _ = readAll(resp)
	if resp.StatusCode != 404 {
		t.Fatalf("got %d; want 404", resp.StatusCode)
	}
	checkAnthropicError(t, b, "not_found_error", "Invalid URL")
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/messages", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET: %s", err)
	}
	b, _ = readAll(resp)
	if resp.StatusCode != 405 {
		t.Fatalf("got %d; want 405", resp.StatusCode)
	}
	checkAnthropicError(t, b, "invalid_request_error", "Invalid URL")
}

func TestCountTokens(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	const body = `{"model":"claude-sonnet-4-5","system":"Be terse.","messages":[{"role":"user","content":"Say hi"}],` +
		`"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]}`
	for _, path := range []string{"/v1/messages/count_tokens", "/anthropic/v1/messages/count_tokens"} {
		resp := postAnthropic(t, c, base+path, body)
		b, err := readAll(resp)
		if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: got %d %s (%v)", path, resp.StatusCode, b, err)
		}
		if want := `{"input_tokens":` + jsonString(len(body)/4) + `}`; string(b) != want {
			t.Fatalf("%s: got %s; want %s", path, b, want)
		}
	}
	// The same estimate as a Messages answer's input_tokens for the same bytes.
	resp := postAnthropic(t, c, base+"/v1/messages/count_tokens", anthropicBody)
	b, _ := readAll(resp)
	m := bufferedMessage(t, c, base+"/v1/messages", anthropicBody)
	if want := `{"input_tokens":` + jsonString(m.Usage.InputTokens) + `}`; string(b) != want {
		t.Fatalf("got %s; want %s", b, want)
	}
}

func TestMessagesStreamErrorAfter(t *testing.T) {
	s, base := startMock(t, mock.Config{})
	c := newClient()
	f := func(body string, k string, want []string, header ...string) {
		t.Helper()
		evs, _ := streamMessages(t, c, base+"/v1/messages", body, append([]string{"x-mock-stream-error-after", k, "x-mock-chunks", "3"}, header...)...)
		var got []string
		for _, e := range evs {
			got = append(got, kindOf(e.m))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("stream_error_after=%s: got %q; want %q", k, got, want)
		}
		st := checkAnthropicStream(t, "stream_error_after="+k, evs)
		e := obj(st.errorEvent["error"])
		if st.end != "error" || len(st.errorEvent) != 2 || e["type"] != "overloaded_error" || str(e["message"]) == "" {
			t.Fatalf("stream_error_after=%s: got error event %v", k, st.errorEvent)
		}
	}
	start := []string{"message_start", "content_block_start/text", "ping"}
	f(anthropicStreamBody, "0", append(start, "error"))
	f(anthropicStreamBody, "2", append(start, "content_block_delta/text_delta", "content_block_delta/text_delta", "error"))
	// At or past the last delta: before content_block_stop.
	f(anthropicStreamBody, "99", append(start, "content_block_delta/text_delta", "content_block_delta/text_delta",
		"content_block_delta/text_delta", "error"))
	// Tool calls: the header event counts.
	f(streamed(anthropicToolsBody), "1", []string{"message_start", "content_block_start/tool_use",
		"content_block_delta/input_json_delta", "ping", "error"}, "x-mock-tool-calls", "1")
	if got := s.Stats().Errors; got != 4 {
		t.Fatalf("got %d errors counted; want 4", got)
	}
	// Off.
	evs, _ := streamMessages(t, c, base+"/v1/messages", anthropicStreamBody, "x-mock-stream-error-after", "off")
	if st := checkAnthropicStream(t, "off", evs); st.end != "message_stop" {
		t.Fatalf("stream_error_after=off: stream ends with %q", st.end)
	}
}

func TestMessagesFailAfter(t *testing.T) {
	s, base := startMock(t, mock.Config{})
	c := newClient()
	f := func(body, k string, wantDeltas int, header ...string) {
		t.Helper()
		resp := postAnthropic(t, c, base+"/v1/messages", body, append([]string{"x-mock-fail-after", k, "x-mock-chunks", "3"}, header...)...)
		raw, err := readAll(resp)
		if resp.StatusCode != 200 || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("fail_after=%s: got status %d, read error %v; want 200 and %v", k, resp.StatusCode, err, io.ErrUnexpectedEOF)
		}
		evs := namedEvents(t, raw)
		st := checkAnthropicStream(t, "fail_after="+k, evs)
		deltas := 0
		for _, e := range evs {
			if e.typ() == "content_block_delta" {
				deltas++
			}
		}
		if st.end != "" || st.usage != nil || deltas != wantDeltas {
			t.Fatalf("fail_after=%s: got %d deltas, end %q, message_delta %v; want %d deltas and no end", k, deltas, st.end, st.usage, wantDeltas)
		}
	}
	f(anthropicStreamBody, "0", 0)
	f(anthropicStreamBody, "2", 2)
	f(anthropicStreamBody, "3", 3) // every delta, then cut before content_block_stop
	// Tool calls: the header event carries the empty delta.
	f(streamed(anthropicToolsBody), "1", 1, "x-mock-tool-calls", "1")
	if got := s.Stats().Cuts; got != 4 {
		t.Fatalf("got %d cuts; want 4", got)
	}
	// Buffered answers and count_tokens: closed before any response byte.
	for _, path := range []string{"/v1/messages", "/v1/messages/count_tokens"} {
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(anthropicBody))
		req.Header.Set("anthropic-version", "2023-06-01")
		req.Header.Set("x-mock-fail-after", "0")
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("%s: got status %d; want a transport error", path, resp.StatusCode)
		}
	}
	waitFor(t, func() bool { return s.Stats().InFlight == 0 }, "in_flight to drop to 0")
}

func TestMessagesStreamEnds(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	f := func(want []string, header ...string) {
		t.Helper()
		evs, _ := streamMessages(t, c, base+"/v1/messages", anthropicStreamBody, header...)
		got := shape(evs)
		if !slices.Equal(got, want) {
			t.Fatalf("%v: got %q; want %q", header, got, want)
		}
		checkAnthropicStream(t, "ends", evs)
	}
	f([]string{"message_start", "content_block_start/text", "ping", "content_block_stop", "message_delta", "message_stop"},
		"x-mock-chunks", "0")
	f([]string{"message_start", "content_block_start/text", "ping", "content_block_delta/text_delta", "content_block_stop", "message_delta"},
		"x-mock-no-done", "true")
	f(nil, "x-mock-empty-stream", "true")
	// Delays and stalls apply as to chat: a stall past the end comes before content_block_stop.
	resp := postAnthropic(t, c, base+"/v1/messages", anthropicStreamBody, "x-mock-stall-after", "5", "x-mock-stall-for", "50ms",
		"x-mock-chunk-delay", "1ms", "x-mock-first-token-delay", "1ms")
	if raw, err := readAll(resp); err != nil || !bytes.HasSuffix(raw, []byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")) {
		t.Fatalf("got %s (%v)", raw, err)
	}
}
