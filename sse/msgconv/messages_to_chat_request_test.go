package msgconv_test

import (
	"errors"
	"strings"
	"testing"

	"gw/sse/msgconv"
)

func m2cReqCase(t *testing.T, in, want string) {
	t.Helper()
	out, err := msgconv.MessagesRequestToChat([]byte("keep:"), []byte(in), msgconv.RequestOptions{UpstreamModel: "gpt"})
	if err != nil {
		t.Fatalf("MessagesRequestToChat(%s): %s", in, err)
	}
	if string(out[:5]) != "keep:" {
		t.Fatalf("dst prefix lost")
	}
	sameJSON(t, out[5:], want)
}

func TestMessagesRequestToChatRoles(t *testing.T) {
	f := m2cReqCase
	// §4.1 system → first system message (string or joined blocks).
	f(t, `{"model":"c","max_tokens":10,"system":"Be terse.","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"}]}`,
		`{"model":"gpt","max_tokens":10,"messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"}]}`)
	f(t, `{"max_tokens":10,"system":[{"type":"text","text":"A","cache_control":{"type":"ephemeral"}},{"type":"text","text":"B"}],"messages":[]}`,
		`{"model":"gpt","max_tokens":10,"messages":[{"role":"system","content":"A\n\nB"}]}`)
	// §4.5 tool_use → tool_calls; each tool_result → its own tool message,
	// the remaining user content after them.
	f(t, `{"max_tokens":10,"messages":[
		{"role":"user","content":"Weather in Oslo?"},
		{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"Checking."},
			{"type":"tool_use","id":"toolu_01A","name":"get_weather","input":{"city":"Oslo"}},
			{"type":"tool_use","id":"toolu_01B","name":"get_time","input":{}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"toolu_01A","content":"{\"temp_c\":4}"},
			{"type":"tool_result","tool_use_id":"toolu_01B","content":[{"type":"text","text":"12:00"},{"type":"text","text":"UTC"}]},
			{"type":"text","text":"Thanks"}]}]}`,
		`{"model":"gpt","max_tokens":10,"messages":[
		{"role":"user","content":"Weather in Oslo?"},
		{"role":"assistant","content":"Checking.","tool_calls":[
			{"id":"toolu_01A","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},
			{"id":"toolu_01B","type":"function","function":{"name":"get_time","arguments":"{}"}}],
			"thinking_blocks":[{"type":"thinking","thinking":"t","signature":"s"}]},
		{"role":"tool","tool_call_id":"toolu_01A","content":"{\"temp_c\":4}"},
		{"role":"tool","tool_call_id":"toolu_01B","content":"12:00\nUTC"},
		{"role":"user","content":[{"type":"text","text":"Thanks"}]}]}`)
	// is_error prefixes the content; images in a result move to a user
	// message; an assistant turn with only tools has content null.
	f(t, `{"max_tokens":10,"messages":[
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"shot","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":[{"type":"text","text":"partial"},
			{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}]}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","is_error":true}]}]}`,
		`{"model":"gpt","max_tokens":10,"messages":[
		{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"shot","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"t1","content":"Error: partial"},
		{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}}]},
		{"role":"tool","tool_call_id":"t2","content":"Error: "}]}`)
}

func TestMessagesRequestToChatParts(t *testing.T) {
	f := func(blocks, want string) {
		t.Helper()
		m2cReqCase(t, `{"max_tokens":1,"messages":[{"role":"user","content":`+blocks+`}]}`,
			`{"model":"gpt","max_tokens":1,"messages":[{"role":"user","content":`+want+`}]}`)
	}
	// §4.2 in reverse.
	f(`[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"image","source":{"type":"url","url":"https://x.test/i.png"}}]`,
		`[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"https://x.test/i.png"}}]`)
	f(`[{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/"}}]`,
		`[{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/"}}]`)
	f(`[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBER"}}]`,
		`[{"type":"file","file":{"filename":"document.pdf","file_data":"data:application/pdf;base64,JVBER"}}]`)
	f(`[{"type":"document","title":"r.pdf","source":{"type":"base64","media_type":"application/pdf","data":"JVBER"}}]`,
		`[{"type":"file","file":{"filename":"r.pdf","file_data":"data:application/pdf;base64,JVBER"}}]`)
	f(`[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"plain doc"}}]`,
		`[{"type":"text","text":"plain doc"}]`)
}

func TestMessagesRequestToChatParams(t *testing.T) {
	f := func(extra, want string) {
		t.Helper()
		m2cReqCase(t, `{"model":"c","messages":[{"role":"user","content":"x"}]`+extra+`}`,
			`{"model":"gpt","messages":[{"role":"user","content":"x"}]`+want+`}`)
	}
	f(`,"max_tokens":1024,"temperature":0.5,"top_p":0.9,"top_k":40`, `,"max_tokens":1024,"temperature":0.5,"top_p":0.9`)
	f(`,"stop_sequences":["END","STOP"]`, `,"stop":["END","STOP"]`)
	f(`,"stop_sequences":[]`, ``)
	f(`,"stream":true`, `,"stream":true,"stream_options":{"include_usage":true}`)
	f(`,"stream":false`, `,"stream":false`)
	// §4.3, §4.4.
	const tools = `,"tools":[{"name":"get_weather","description":"Current weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}},"cache_control":{"type":"ephemeral"}},{"name":"now","input_schema":{"type":"object"},"strict":true}]`
	const chatTools = `,"tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},{"type":"function","function":{"name":"now","parameters":{"type":"object"},"strict":true}}]`
	f(tools, chatTools)
	f(tools+`,"tool_choice":{"type":"auto"}`, chatTools+`,"tool_choice":"auto"`)
	f(tools+`,"tool_choice":{"type":"any"}`, chatTools+`,"tool_choice":"required"`)
	f(tools+`,"tool_choice":{"type":"none"}`, chatTools+`,"tool_choice":"none"`)
	f(tools+`,"tool_choice":{"type":"tool","name":"now"}`, chatTools+`,"tool_choice":{"type":"function","function":{"name":"now"}}`)
	f(tools+`,"tool_choice":{"type":"auto","disable_parallel_tool_use":true}`, chatTools+`,"tool_choice":"auto","parallel_tool_calls":false`)
	f(tools+`,"tool_choice":{"type":"any","disable_parallel_tool_use":false}`, chatTools+`,"tool_choice":"required"`)
	// Thinking budget → reasoning_effort.
	for _, c := range [][2]string{{"1024", "low"}, {"2047", "low"}, {"2048", "medium"}, {"4096", "medium"}, {"8192", "high"}, {"16384", "high"}, {"32768", "high"}} {
		f(`,"thinking":{"type":"enabled","budget_tokens":`+c[0]+`}`, `,"reasoning_effort":"`+c[1]+`"`)
	}
	f(`,"thinking":{"type":"disabled"}`, ``)
	f(`,"thinking":{"type":"enabled","budget_tokens":2000},"output_config":{"effort":"high"}`, `,"reasoning_effort":"high"`)
	// metadata.user_id → user; output_config.format → response_format.
	f(`,"metadata":{"user_id":"u-1"}`, `,"user":"u-1"`)
	f(`,"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}}`,
		`,"response_format":{"type":"json_schema","json_schema":{"name":"response","schema":{"type":"object"}}}`)
}

func TestMessagesRequestToChatErrors(t *testing.T) {
	f := func(in, field string) {
		t.Helper()
		out, err := msgconv.MessagesRequestToChat([]byte("keep"), []byte(in), msgconv.RequestOptions{UpstreamModel: "g"})
		if !errors.Is(err, msgconv.ErrInvalidRequest) || string(out) != "keep" {
			t.Fatalf("%s: %q, %v", in, out, err)
		}
		if !strings.Contains(err.Error(), "`"+field+"`") {
			t.Fatalf("%s: error %q does not name %s", in, err, field)
		}
	}
	f(`{"messages":`, "body")
	f(`{"messages":{}}`, "messages")
	f(`{"messages":[{"role":"system","content":"x"}]}`, "messages[0].role")
	f(`{"messages":[{"role":"user","content":1}]}`, "messages[0].content")
	f(`{"messages":[{"role":"user","content":[{"type":"tool_use","id":"a","name":"b","input":{}}]}]}`, "messages[0].content[0].type")
	f(`{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"f"}}]}]}`, "messages[0].content[0].source")
	f(`{"messages":[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]}`, "messages[0].content[0].tool_use_id")
	f(`{"messages":[{"role":"assistant","content":[{"type":"tool_use","name":"b"}]}]}`, "messages[0].content[0]")
	f(`{"messages":[{"role":"assistant","content":[{"type":"image"}]}]}`, "messages[0].content[0].type")
	f(`{"messages":[],"system":[{"type":"image"}]}`, "system[0]")
	f(`{"messages":[],"max_tokens":-1}`, "max_tokens")
	f(`{"messages":[],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`, "tools[0].type")
	f(`{"messages":[],"tool_choice":{"type":"maybe"}}`, "tool_choice.type")
	f(`{"messages":[],"tool_choice":"auto"}`, "tool_choice")
	f(`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"b","input":[1]}]}]}`, "messages[0].content[0].input")
	f(`{"messages":[],"stop_sequences":["a",1]}`, "stop_sequences")
	f(`{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"","data":""}}]}]}`, "messages[0].content[0].source")
	f(`{"messages":[],"output_config":{"effort":"ultra"}}`, "output_config.effort")
}
