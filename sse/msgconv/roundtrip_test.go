package msgconv_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"gw/sse/msgconv"
)

// chatSemantics reduces a chat request to what an upstream model sees:
// system text (all system and developer messages joined with "\n\n"),
// turns with consecutive same-role messages merged and parts flattened
// (tool messages keep their id and text), tool arguments as JSON values,
// stop as an array, and the sampling and tool parameters.
func chatSemantics(tb testing.TB, body []byte) map[string]any {
	tb.Helper()
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		tb.Fatalf("invalid JSON %s: %s", body, err)
	}
	var system []string
	var turns []map[string]any
	last := func(role string) map[string]any {
		if n := len(turns); n > 0 && turns[n-1]["role"] == role && role != "tool" {
			return turns[n-1]
		}
		t := map[string]any{"role": role}
		turns = append(turns, t)
		return t
	}
	text := func(c any) []any {
		switch c := c.(type) {
		case string:
			if c == "" {
				return nil
			}
			return []any{map[string]any{"type": "text", "text": c}}
		case []any:
			return c
		}
		return nil
	}
	for _, m := range req["messages"].([]any) {
		m := m.(map[string]any)
		switch role := m["role"].(string); role {
		case "system", "developer":
			for _, p := range text(m["content"]) {
				system = append(system, p.(map[string]any)["text"].(string))
			}
		case "tool":
			var s []string
			for _, p := range text(m["content"]) {
				s = append(s, p.(map[string]any)["text"].(string))
			}
			turns = append(turns, map[string]any{"role": "tool", "id": m["tool_call_id"], "text": strings.Join(s, "\n")})
		default:
			t := last(role)
			if role == "assistant" {
				var s string
				for _, p := range text(m["content"]) {
					s += p.(map[string]any)["text"].(string)
				}
				if s != "" {
					t["text"], _ = t["text"].(string)
					t["text"] = t["text"].(string) + s
				}
			} else {
				parts, _ := t["parts"].([]any)
				t["parts"] = append(parts, text(m["content"])...)
			}
			calls, _ := m["tool_calls"].([]any)
			for _, c := range calls {
				c := c.(map[string]any)
				f := c["function"].(map[string]any)
				var args any = map[string]any{}
				if a := f["arguments"].(string); a != "" {
					if err := json.Unmarshal([]byte(a), &args); err != nil {
						tb.Fatalf("bad arguments %q", a)
					}
				}
				prev, _ := t["calls"].([]any)
				t["calls"] = append(prev, []any{c["id"], f["name"], args})
			}
		}
	}
	out := map[string]any{"system": strings.Join(system, "\n\n"), "turns": turns}
	for _, k := range []string{"temperature", "top_p", "stream", "reasoning_effort", "user", "tools", "tool_choice", "parallel_tool_calls"} {
		if v, ok := req[k]; ok {
			out[k] = v
		}
	}
	if v, ok := req["max_completion_tokens"]; ok {
		out["max_tokens"] = v
	} else if v, ok := req["max_tokens"]; ok {
		out["max_tokens"] = v
	}
	switch s := req["stop"].(type) {
	case string:
		out["stop"] = []any{s}
	case []any:
		out["stop"] = s
	}
	if rf, ok := req["response_format"].(map[string]any); ok {
		out["schema"] = rf["json_schema"].(map[string]any)["schema"]
	}
	return out
}

func TestRoundTripChatMessagesChat(t *testing.T) {
	f := func(in string) {
		t.Helper()
		mid, err := msgconv.ChatRequestToMessages(nil, []byte(in), msgconv.RequestOptions{UpstreamModel: "claude", AutoCache: msgconv.AutoCache5m})
		if err != nil {
			t.Fatalf("to messages: %s", err)
		}
		back, err := msgconv.MessagesRequestToChat(nil, mid, msgconv.RequestOptions{UpstreamModel: "gpt"})
		if err != nil {
			t.Fatalf("back to chat: %s\n%s", err, mid)
		}
		got, want := chatSemantics(t, back), chatSemantics(t, []byte(in))
		if _, ok := want["max_tokens"]; !ok {
			delete(got, "max_tokens") // the Anthropic default was filled in
		}
		if !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Fatalf("round trip changed the request\nin:   %s\nmid:  %s\nback: %s\ngot:  %s\nwant: %s", in, mid, back, g, w)
		}
	}
	f(`{"model":"gpt","messages":[{"role":"user","content":"Hi"}]}`)
	f(`{"model":"gpt","max_tokens":300,"temperature":0.3,"top_p":0.5,"stop":"END","user":"u-1","stream":true,"messages":[
		{"role":"developer","content":"Be terse."},
		{"role":"user","content":[{"type":"text","text":"Weather in Oslo?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}}]},
		{"role":"system","content":"Metric units."},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_a1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},
			{"id":"call_b2","type":"function","function":{"name":"get_time","arguments":""}}]},
		{"role":"tool","tool_call_id":"call_a1","content":"{\"temp_c\":4}"},
		{"role":"tool","tool_call_id":"call_b2","content":[{"type":"text","text":"12:00"},{"type":"text","text":"UTC"}]},
		{"role":"assistant","content":"4 °C, noon."},
		{"role":"user","content":"Thanks \"friend\"\n\u2603"}],
		"tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather",
			"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
			{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{}}}}],
		"tool_choice":"required","parallel_tool_calls":false}`)
	f(`{"model":"gpt","max_completion_tokens":40000,"reasoning_effort":"high","stop":["a","b"],
		"messages":[{"role":"user","content":"q"},{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x.test/i.png"}}]}],
		"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],
		"tool_choice":{"type":"function","function":{"name":"f"}},
		"response_format":{"type":"json_schema","json_schema":{"name":"out","schema":{"type":"object","properties":{"a":{"type":"integer"}}}}}}`)
	for _, e := range []string{"low", "medium", "high"} {
		f(`{"model":"gpt","max_tokens":50000,"reasoning_effort":"` + e + `","messages":[{"role":"user","content":"q"}]}`)
	}
}

func TestRoundTripResponses(t *testing.T) {
	// Anthropic response → chat → Anthropic keeps content, ids, inputs,
	// stop reason and usage.
	in := `{"id":"msg_01X","type":"message","role":"assistant","model":"claude","content":[
		{"type":"thinking","thinking":"hm","signature":""},
		{"type":"text","text":"Checking."},
		{"type":"tool_use","id":"toolu_01B","name":"get_weather","input":{"city":"Oslo","n":[1,2.5,null]}}],
		"stop_reason":"tool_use","stop_sequence":null,
		"usage":{"input_tokens":410,"cache_creation_input_tokens":20,"cache_read_input_tokens":1200,"output_tokens":45}}`
	chat, u1, err := msgconv.MessagesResponseToChat(nil, []byte(in), []byte("claude"))
	if err != nil {
		t.Fatal(err)
	}
	back, u2, err := msgconv.ChatResponseToMessages(nil, chat, []byte("claude"))
	if err != nil {
		t.Fatal(err)
	}
	if u1 != u2 {
		t.Fatalf("usage %+v then %+v", u1, u2)
	}
	sameJSON(t, back, strings.Replace(in, `"msg_01X"`, `"msg_msg_01X"`, 1))
}

func TestRoundTripStreams(t *testing.T) {
	// An Anthropic stream through MessagesToChat and back through
	// ChatToMessages yields the same blocks.
	for _, name := range []string{"anthropic_text.sse", "anthropic_text_then_parallel_tool_use.sse",
		"anthropic_thinking_then_text.sse", "anthropic_tool_use_json.jsonl"} {
		stream := readFixture(t, name)
		src := assembleMessages(t, stream)
		chat := runStream(t, msgconv.NewMessagesToChatStream(), "m", stream, nil)
		back := assembleMessages(t, runStream(t, msgconv.NewChatToMessagesStream(), "m", chat, []int{7, 100}))
		if len(back.Blocks) != len(src.Blocks) || back.Stop != src.Stop {
			t.Fatalf("%s: %+v\nwant %+v", name, back, src)
		}
		for k, b := range back.Blocks {
			s := src.Blocks[k]
			if b.Type != s.Type || b.Text != s.Text || b.Thinking != s.Thinking || b.ID != s.ID || b.Name != s.Name {
				t.Fatalf("%s: block %d %+v; want %+v", name, k, b, s)
			}
			if b.Type == "tool_use" {
				sameArgs(t, b.JSONText, s.JSONText)
			}
		}
		sameJSON(t, mustJSON(t, back.Usage["output_tokens"]), string(mustJSON(t, src.Usage["output_tokens"])))
	}
}
