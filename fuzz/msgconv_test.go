package fuzz

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"gw/sse"
	"gw/sse/msgconv"
	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// mcSeedFiles are the recorded streams the stream fuzzer starts from.
var mcSeedFiles = []string{
	"anthropic_text.sse", "anthropic_text_then_parallel_tool_use.sse", "anthropic_thinking_then_text.sse",
	"openai_chat_text.sse", "openai_chat_include_usage_finish_length.sse",
	"openai_chat_parallel_tool_calls_include_usage.sse", "azure_openai_chat_text_content_filter.sse",
}

var mcChatRequests = []string{
	`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":512,
	 "messages":[{"role":"developer","content":"Be terse."},
	  {"role":"user","content":[{"type":"text","text":"Weather in Oslo?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}}]},
	  {"role":"assistant","content":null,"tool_calls":[{"id":"call_a1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
	  {"role":"tool","tool_call_id":"call_a1","content":"{\"temp_c\":4}"},{"role":"user","content":"ok"}],
	 "tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],
	 "tool_choice":"auto","parallel_tool_calls":false,"stop":["x"],"temperature":1.5,"reasoning_effort":"medium","user":"u"}`,
	`{"messages":[{"role":"system","content":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":[{"type":"file","file":{"file_data":"JVBER"}},{"type":"image_url","image_url":"https://x/y.png"}]}],
	 "tool_choice":{"type":"function","function":{"name":"f"}},"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object"}}},"thinking":{"type":"enabled","budget_tokens":2000}}`,
	`{"messages":[{"role":"assistant","content":[{"type":"refusal","refusal":"no"}],"tool_calls":[{"id":"a","function":{"name":"f","arguments":""}}]},{"role":"tool","tool_call_id":"a","content":[{"type":"text","text":"r"}]}],"max_tokens":3,"n":1}`,
	`{"messages":[{"role":"user","content":"x"}],"stop":"s","max_tokens":0}`, `{"messages":[{"role":"User"}]}`, `[]`, `{`, `{"messages":{}}`,
}

var mcMessagesRequests = []string{
	`{"model":"claude","max_tokens":1024,"stream":true,"system":[{"type":"text","text":"Be terse.","cache_control":{"type":"ephemeral"}}],
	 "messages":[{"role":"user","content":"Weather in Oslo?"},
	  {"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_01A","name":"get_weather","input":{"city":"Oslo"}}]},
	  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01A","is_error":true,"content":[{"type":"text","text":"x"},{"type":"image","source":{"type":"url","url":"https://x"}}]},{"type":"text","text":"go on"}]}],
	 "tools":[{"name":"get_weather","description":"Current weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}],
	 "tool_choice":{"type":"any","disable_parallel_tool_use":true},"stop_sequences":["END"],"thinking":{"type":"enabled","budget_tokens":4096},
	 "metadata":{"user_id":"u-1"},"temperature":0.5,"top_p":0.9,"top_k":4}`,
	`{"system":"S","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}},{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBER"}}]}],
	 "output_config":{"effort":"high","format":{"type":"json_schema","schema":{"type":"object"}}},"tool_choice":{"type":"tool","name":"f"}}`,
	`{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"","data":""}}]}]}`,
	`{"messages":[{"role":"assistant","content":"x"}],"max_tokens":-1}`, `{"messages":[{"role":"system"}]}`, `{}`, `"x"`,
}

// mcCheckObject fails unless out is one valid JSON object.
func mcCheckObject(t *testing.T, what string, in, out []byte) {
	t.Helper()
	if !rawjson.Valid(out) || !json.Valid(out) || rawjson.KindOf(bytes.TrimSpace(out)) != rawjson.Object {
		t.Fatalf("%s: invalid output\nin:  %s\nout: %s", what, in, out)
	}
}

// FuzzMsgconvChatRequest: no panic; a valid JSON body gives a valid JSON
// object or an error, never a partial write; a converted body is a
// messages request that converts back to chat without error.
func FuzzMsgconvChatRequest(f *testing.F) {
	for i, s := range mcChatRequests {
		f.Add([]byte(s), uint8(i))
	}
	f.Fuzz(func(t *testing.T, body []byte, flags uint8) {
		opt := msgconv.RequestOptions{UpstreamModel: "claude", AutoCache: msgconv.AutoCache(flags % 3), DefaultMaxTokens: int(flags >> 2)}
		orig := append([]byte(nil), body...)
		out, err := msgconv.ChatRequestToMessages([]byte("keep"), body, opt)
		if !bytes.Equal(body, orig) {
			t.Fatalf("the body was modified")
		}
		if !bytes.HasPrefix(out, []byte("keep")) {
			t.Fatalf("dst prefix lost")
		}
		if err != nil {
			if len(out) != 4 {
				t.Fatalf("partial write on error %v: %q", err, out)
			}
			return
		}
		if !rawjson.Valid(body) {
			t.Fatalf("invalid JSON accepted: %q", body)
		}
		out = out[4:]
		mcCheckObject(t, "ChatRequestToMessages", body, out)
		var req struct {
			Model     string
			MaxTokens int64 `json:"max_tokens"`
			Messages  []struct{ Role string }
		}
		if err := json.Unmarshal(out, &req); err != nil {
			t.Fatalf("bad messages request %s: %s", out, err)
		}
		if req.Model != "claude" || req.MaxTokens <= 0 {
			t.Fatalf("model %q, max_tokens %d", req.Model, req.MaxTokens)
		}
		for i, m := range req.Messages {
			if m.Role != "user" && m.Role != "assistant" || i > 0 && m.Role == req.Messages[i-1].Role {
				t.Fatalf("roles do not alternate: %s", out)
			}
		}
		// Automatic breakpoints never take the total past 4.
		if n, m := bytes.Count(out, []byte(`"cache_control"`)), bytes.Count(body, []byte(`"cache_control"`)); n > max(m, 4) ||
			opt.AutoCache == msgconv.AutoCacheOff && n > m {
			t.Fatalf("%d cache breakpoints for %d in the body", n, m)
		}
		back, err := msgconv.MessagesRequestToChat(nil, out, msgconv.RequestOptions{UpstreamModel: "gpt"})
		if err != nil {
			t.Fatalf("own output rejected: %v\nin:  %s\nout: %s", err, body, out)
		}
		mcCheckObject(t, "MessagesRequestToChat", out, back)
	})
}

// FuzzMsgconvMessagesRequest: the same properties in the other direction.
func FuzzMsgconvMessagesRequest(f *testing.F) {
	for i, s := range mcMessagesRequests {
		f.Add([]byte(s), uint8(i))
	}
	f.Fuzz(func(t *testing.T, body []byte, flags uint8) {
		orig := append([]byte(nil), body...)
		out, err := msgconv.MessagesRequestToChat([]byte("keep"), body, msgconv.RequestOptions{UpstreamModel: "gpt"})
		if !bytes.Equal(body, orig) {
			t.Fatalf("the body was modified")
		}
		if err != nil {
			if string(out) != "keep" {
				t.Fatalf("partial write on error %v: %q", err, out)
			}
			return
		}
		if !rawjson.Valid(body) {
			t.Fatalf("invalid JSON accepted: %q", body)
		}
		out = out[4:]
		mcCheckObject(t, "MessagesRequestToChat", body, out)
		back, err := msgconv.ChatRequestToMessages(nil, out, msgconv.RequestOptions{UpstreamModel: "claude", AutoCache: msgconv.AutoCache(flags % 3)})
		if err != nil {
			t.Fatalf("own output rejected: %v\nin:  %s\nout: %s", err, body, out)
		}
		mcCheckObject(t, "ChatRequestToMessages", out, back)
	})
}

// FuzzMsgconvStream: arbitrary SSE input through both stream converters,
// with an optional Fail: no panic, and the output is well-framed SSE whose
// data is valid JSON ([DONE] aside), chat frames end with [DONE] or one
// error frame, and the Anthropic events follow the messages grammar.
func FuzzMsgconvStream(f *testing.F) {
	for _, name := range mcSeedFiles {
		b, err := os.ReadFile(filepath.Join("..", "sse", "msgconv", "testdata", name))
		if err != nil {
			f.Fatalf("cannot read seed: %s", err)
		}
		f.Add(b, uint8(0))
		f.Add(b, uint8(7))
	}
	f.Add([]byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}\n\n"), uint8(0))
	f.Add([]byte("data: {\"error\":{\"message\":\"m\",\"code\":\"rate_limit_exceeded\"}}\n\n"), uint8(1))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"\"}}]}}]}\n\n"+
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"b\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]}}]}\n\n"), uint8(2))
	f.Fuzz(func(t *testing.T, stream []byte, flags uint8) {
		failAt := -1
		if flags&0x80 != 0 {
			failAt = int(flags & 0x0f)
		}
		m2c := msgconv.AcquireMessagesToChatStream([]byte("alias"))
		defer msgconv.ReleaseMessagesToChatStream(m2c)
		c2m := msgconv.AcquireChatToMessagesStream([]byte("alias"))
		defer msgconv.ReleaseChatToMessagesStream(c2m)
		for _, s := range []transcode.Stream{m2c, c2m} {
			out := mcFeed(s, stream, failAt, flags)
			if s == transcode.Stream(m2c) {
				mcCheckChat(t, stream, out)
			} else {
				mcCheckMessages(t, stream, out)
			}
		}
	})
}

// mcFeed runs stream through s, failing after event failAt (if >= 0).
func mcFeed(s transcode.Stream, stream []byte, failAt int, flags uint8) []byte {
	r := sse.AcquireReader(bytes.NewReader(stream))
	defer sse.ReleaseReader(r)
	r.MaxEventSize = 1 << 16
	var out []byte
	for n := 0; ; n++ {
		ev, err := r.Next()
		if err != nil {
			break
		}
		out, _ = s.Event(out, ev.Name, ev.Data)
		if n == failAt {
			codes := []string{transcode.CodeOverloaded, transcode.CodeTimeout, "content_filter", transcode.CodeRateLimit}
			return s.Fail(out, codes[int(flags>>4)&3], "failed \"here\"\n")
		}
	}
	return s.End(out)
}

// mcEvents parses out strictly: every event must carry valid JSON data.
func mcEvents(t *testing.T, in, out []byte) [][2]string {
	t.Helper()
	r := sse.AcquireReader(bytes.NewReader(out))
	defer sse.ReleaseReader(r)
	var evs [][2]string
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return evs
		}
		if err != nil || ev.Unterminated {
			t.Fatalf("bad SSE output (%v)\nin:  %q\nout: %q", err, in, out)
		}
		if !sse.IsDone(ev.Data) && (!rawjson.Valid(ev.Data) || !json.Valid(ev.Data)) {
			t.Fatalf("invalid JSON data %q\nin: %q", ev.Data, in)
		}
		evs = append(evs, [2]string{string(ev.Name), string(ev.Data)})
	}
}

func mcCheckChat(t *testing.T, in, out []byte) {
	t.Helper()
	evs := mcEvents(t, in, out)
	for i, ev := range evs {
		if ev[0] != "" {
			t.Fatalf("named chat frame %q", ev[0])
		}
		last := i == len(evs)-1
		isErr := bytes.HasPrefix([]byte(ev[1]), []byte(`{"error":`))
		if (ev[1] == "[DONE]" || isErr) != last {
			t.Fatalf("[DONE] or error not last (frame %d of %d)\nin:  %q\nout: %q", i, len(evs), in, out)
		}
		if !last && !bytes.Contains([]byte(ev[1]), []byte(`"model":"alias"`)) {
			t.Fatalf("chunk without the alias: %s", ev[1])
		}
	}
	if len(evs) == 0 {
		t.Fatalf("no output for %q", in)
	}
}

func mcCheckMessages(t *testing.T, in, out []byte) {
	t.Helper()
	evs := mcEvents(t, in, out)
	open, next, state := -1, 0, 0 // state: 0 before message_start, 1 in message, 2 after message_delta, 3 done
	for _, ev := range evs {
		var e struct {
			Type  string
			Index *int
		}
		if err := json.Unmarshal([]byte(ev[1]), &e); err != nil || e.Type != ev[0] {
			t.Fatalf("event %q with data %s", ev[0], ev[1])
		}
		bad := state == 3
		switch e.Type {
		case "error":
			state = 3
			continue
		case "message_start":
			bad = bad || state != 0
			state = 1
		case "content_block_start":
			bad = bad || state != 1 || open >= 0 || e.Index == nil || *e.Index != next
			open, next = next, next+1
		case "content_block_delta":
			bad = bad || state != 1 || e.Index == nil || *e.Index != open
		case "content_block_stop":
			bad = bad || state != 1 || e.Index == nil || *e.Index != open
			open = -1
		case "message_delta":
			bad = bad || state != 1 || open >= 0
			state = 2
		case "message_stop":
			bad = bad || state != 2
			state = 3
		default:
			bad = true
		}
		if bad {
			t.Fatalf("out of order: %s %s\nin:  %q\nout: %s", ev[0], ev[1], in, out)
		}
	}
	if state != 3 {
		t.Fatalf("stream not ended\nin:  %q\nout: %s", in, out)
	}
}
