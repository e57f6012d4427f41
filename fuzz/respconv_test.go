package fuzz

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"gw/sse"
	"gw/sse/respconv"
	"gw/sse/transcode"
)

// rcSeedRequests are Responses and chat request bodies for both request fuzzers.
var rcSeedRequests = []string{
	`{"model":"gpt-5","instructions":"Be terse.","stream":true,"input":[{"role":"user","content":"Weather in Oslo?"},{"type":"reasoning","id":"rs_1","summary":[]},{"type":"function_call","call_id":"call_a1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"},{"type":"function_call_output","call_id":"call_a1","output":"{\"temp_c\":4}"}],"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"},"strict":true}],"tool_choice":{"type":"function","name":"get_weather"},"reasoning":{"effort":"low"},"max_output_tokens":2048,"text":{"format":{"type":"json_schema","name":"o","schema":{}},"verbosity":"low"}}`,
	`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"x"},{"type":"input_image","image_url":"data:image/png;base64,AA","detail":"low"},{"type":"input_file","file_id":"f"},{"type":"input_audio","input_audio":{"data":"d","format":"wav"}}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"y"},{"type":"refusal","refusal":"n"}]},{"type":"function_call","call_id":"c","name":"f","arguments":""}],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"}]},"store":false}`,
	`{"model":"m","input":"x","previous_response_id":"resp_1"}`,
	`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"developer","content":"Be terse."},{"role":"user","content":[{"type":"text","text":"Weather?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}},{"type":"file","file":{"file_id":"f"}}]},{"role":"assistant","content":"ok","refusal":"r","tool_calls":[{"id":"call_a1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_a1","content":[{"type":"text","text":"4"}]}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"get_weather"}}]}},"max_completion_tokens":512,"reasoning_effort":"low","response_format":{"type":"json_schema","json_schema":{"name":"o","schema":{}}}}`,
	`{"id":"chatcmpl-1","created":1,"choices":[{"index":0,"finish_reason":"length","message":{"role":"assistant","content":"Hi","reasoning_content":"r","refusal":"n","tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":""}}]}}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,"prompt_tokens_details":{"cached_tokens":1}}}`,
	`{"id":"resp_1","created_at":1,"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"reasoning","summary":[{"type":"summary_text","text":"s"}]},{"type":"message","content":[{"type":"output_text","text":"x"},{"type":"refusal","refusal":"r"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}],"usage":{"input_tokens":1,"output_tokens":2,"total_tokens":3}}`,
}

// rcCheckBody fails unless a converter's result is either an error wrapping
// a respconv sentinel with dst untouched, or dst followed by one valid JSON
// object.
func rcCheckBody(t *testing.T, what string, out []byte, err error) {
	t.Helper()
	if !bytes.HasPrefix(out, []byte("dst")) {
		t.Fatalf("%s: dst prefix lost: %q", what, out)
	}
	if err != nil {
		if len(out) != 3 {
			t.Fatalf("%s: error %v but output %q", what, err, out)
		}
		if !errors.Is(err, respconv.ErrInvalid) && !errors.Is(err, respconv.ErrUnsupported) &&
			!errors.Is(err, respconv.ErrStateful) && !errors.Is(err, respconv.ErrUpstreamFailed) {
			t.Fatalf("%s: error %v wraps no sentinel", what, err)
		}
		return
	}
	var m map[string]any
	if err := json.Unmarshal(out[3:], &m); err != nil {
		t.Fatalf("%s: invalid JSON output %q: %s", what, out[3:], err)
	}
}

// FuzzRespconvResponsesRequest: ResponsesRequestToChat and both response-body
// converters never panic, return sentinel errors, and otherwise write one
// valid JSON object.
func FuzzRespconvResponsesRequest(f *testing.F) {
	for _, s := range rcSeedRequests {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := respconv.ResponsesRequestToChat([]byte("dst"), body, respconv.RequestOptions{UpstreamModel: "up"})
		rcCheckBody(t, "ResponsesRequestToChat", out, err)
		if err == nil {
			var m struct {
				Model    string
				Messages []json.RawMessage
			}
			if json.Unmarshal(out[3:], &m) != nil || m.Model != "up" {
				t.Fatalf("bad chat request %q", out[3:])
			}
		}
		opt := respconv.ResponseOptions{Model: []byte("alias"), Request: body}
		out, _, err = respconv.ChatResponseToResponses([]byte("dst"), body, opt)
		rcCheckBody(t, "ChatResponseToResponses", out, err)
		out, _, err = respconv.ResponsesResponseToChat([]byte("dst"), body, opt)
		rcCheckBody(t, "ResponsesResponseToChat", out, err)
	})
}

// FuzzRespconvChatRequest: ChatRequestToResponses never panics, returns
// sentinel errors, and otherwise writes one valid JSON object with store false.
func FuzzRespconvChatRequest(f *testing.F) {
	for _, s := range rcSeedRequests {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := respconv.ChatRequestToResponses([]byte("dst"), body, respconv.RequestOptions{})
		rcCheckBody(t, "ChatRequestToResponses", out, err)
		if err == nil {
			var m struct {
				Store *bool
				Input []json.RawMessage
			}
			if json.Unmarshal(out[3:], &m) != nil || m.Store == nil || *m.Store {
				t.Fatalf("bad Responses request %q", out[3:])
			}
		}
	})
}

// rcEvents reads every event of an SSE stream.
func rcEvents(data []byte) [][2][]byte {
	r := sse.AcquireReader(bytes.NewReader(data))
	defer sse.ReleaseReader(r)
	var evs [][2][]byte
	for {
		ev, err := r.Next()
		if err != nil {
			return evs
		}
		evs = append(evs, [2][]byte{bytes.Clone(ev.Name), bytes.Clone(ev.Data)})
	}
}

// rcCheckOutput parses a stream's output: complete events whose data is one
// JSON object (or [DONE]); for a Responses caller named events whose type
// matches and whose sequence_number counts from 0. It returns the events.
func rcCheckOutput(t *testing.T, out []byte, responses bool) int {
	t.Helper()
	if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n\n")) {
		t.Fatalf("output does not end with a blank line: %q", out)
	}
	n := 0
	for _, ev := range rcEvents(out) {
		name, data := ev[0], ev[1]
		if bytes.IndexByte(data, '\n') >= 0 {
			t.Fatalf("multi-line data %q", data)
		}
		if sse.IsDone(data) {
			if responses {
				t.Fatalf("[DONE] in a Responses stream")
			}
			continue
		}
		var m struct {
			Type string          `json:"type"`
			Seq  json.RawMessage `json:"sequence_number"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("invalid JSON event %q: %s", data, err)
		}
		if responses {
			if string(name) != m.Type || string(m.Seq) != strconv.Itoa(n) {
				t.Fatalf("event %d: name %q, type %q, sequence_number %s", n, name, m.Type, m.Seq)
			}
		} else if len(name) != 0 {
			t.Fatalf("named event %q in a chat stream", name)
		}
		n++
	}
	return n
}

// FuzzRespconvStream: both streams take any event sequence without panicking
// and write well-formed SSE (one JSON object per event, Responses sequence
// numbers from 0 by one, nothing after the terminal event); malformed events
// return errors wrapping respconv sentinels. The input is an SSE stream; the
// first byte picks the stream and whether it ends with End or Fail.
func FuzzRespconvStream(f *testing.F) {
	paths, _ := filepath.Glob("../sse/testdata/*.sse")
	jl, _ := filepath.Glob("../sse/respconv/testdata/*.jsonl")
	for _, p := range append(paths, jl...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if filepath.Ext(p) == ".jsonl" {
			var framed []byte
			for _, line := range bytes.Split(b, []byte("\n")) {
				var m struct{ Type string }
				if json.Unmarshal(line, &m) == nil {
					framed = sse.AppendEvent(framed, []byte(m.Type), line)
				}
			}
			b = framed
		}
		for mode := byte(0); mode < 4; mode++ {
			f.Add(append([]byte{mode}, b...))
		}
	}
	c2r := respconv.NewChatToResponsesStream()
	r2c := respconv.NewResponsesToChatStream()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		mode, stream := data[0], data[1:]
		st, responses := c2r, true
		if mode&1 != 0 {
			st, responses = r2c, false
		}
		st.Reset([]byte("alias"))
		if responses {
			c2r.(*respconv.ChatToResponses).SetRequest(stream)
		} else {
			r2c.(*respconv.ResponsesToChat).SetIncludeUsage(mode&4 != 0)
		}
		var out []byte
		failed := false
		for _, ev := range rcEvents(stream) {
			before := len(out)
			var err error
			out, err = st.Event(out, ev[0], ev[1])
			switch {
			case err == nil:
			case errors.Is(err, respconv.ErrUpstreamFailed):
				failed = true
			case errors.Is(err, respconv.ErrInvalid):
				if len(out) != before {
					t.Fatalf("ErrInvalid with output %q", out[before:])
				}
			default:
				t.Fatalf("unexpected error %v", err)
			}
			if failed {
				break
			}
		}
		if mode&2 != 0 {
			out = st.Fail(out, transcode.CodeTimeout, "stalled")
		} else {
			out = st.End(out)
		}
		if more := append(st.End(nil), st.Fail(nil, transcode.CodeServerError, "x")...); len(more) != 0 {
			t.Fatalf("output after the terminal event: %q", more)
		}
		if n := rcCheckOutput(t, out, responses); n == 0 {
			t.Fatalf("no events written")
		}
		_, _ = st.Usage()
		_ = st.Started()
	})
}
