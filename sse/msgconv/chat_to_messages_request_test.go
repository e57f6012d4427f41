package msgconv_test

import (
	"errors"
	"strings"
	"testing"

	"gw/sse/msgconv"
)

// c2mReq runs ChatRequestToMessages with upstream model "claude" and
// compares the result with want (as JSON values).
func c2mReqCase(t *testing.T, opt msgconv.RequestOptions, in, want string) {
	t.Helper()
	if opt.UpstreamModel == "" {
		opt.UpstreamModel = "claude"
	}
	prefix := []byte("keep:")
	out, err := msgconv.ChatRequestToMessages(prefix, []byte(in), opt)
	if err != nil {
		t.Fatalf("ChatRequestToMessages(%s): %s", in, err)
	}
	if string(out[:5]) != "keep:" {
		t.Fatalf("dst prefix lost")
	}
	sameJSON(t, out[5:], want)
}

func TestChatRequestToMessagesRoles(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		c2mReqCase(t, msgconv.RequestOptions{}, in, want)
	}
	// §4.1: system and developer anywhere → one top-level system string.
	f(`{"model":"alias","messages":[
		{"role":"system","content":"Be terse."},
		{"role":"user","content":"Hi"},
		{"role":"developer","content":[{"type":"text","text":"Use metric."}]},
		{"role":"assistant","content":"Hello"},
		{"role":"user","content":"Weather?"}]}`,
		`{"model":"claude","max_tokens":4096,"system":"Be terse.\n\nUse metric.","messages":[
		{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"},{"role":"user","content":"Weather?"}]}`)
	// One system message stays as written; empty ones vanish.
	f(`{"messages":[{"role":"system","content":"S\u00e9"},{"role":"system","content":""},{"role":"user","content":"u"}]}`,
		`{"model":"claude","max_tokens":4096,"system":"Sé","messages":[{"role":"user","content":"u"}]}`)
	// Consecutive same-role messages merge into one turn.
	f(`{"messages":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"text","text":"b"}]},{"role":"assistant","content":"c"},{"role":"assistant","content":null}]}`,
		`{"model":"claude","max_tokens":4096,"messages":[
		{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
		{"role":"assistant","content":"c"}]}`)
	// §4.1/§4.5: assistant text + tool_calls in one message; tool messages
	// merged into one user turn with the following user text after them.
	f(`{"messages":[
		{"role":"user","content":"Weather in Oslo and time?"},
		{"role":"assistant","content":"Checking.","tool_calls":[
			{"id":"call_a1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},
			{"id":"call_b2","type":"function","function":{"name":"get_time","arguments":""}}]},
		{"role":"tool","tool_call_id":"call_a1","content":"{\"temp_c\":4}"},
		{"role":"tool","tool_call_id":"call_b2","content":[{"type":"text","text":"12:00"}]},
		{"role":"user","content":"Thanks"}]}`,
		`{"model":"claude","max_tokens":4096,"messages":[
		{"role":"user","content":"Weather in Oslo and time?"},
		{"role":"assistant","content":[{"type":"text","text":"Checking."},
			{"type":"tool_use","id":"call_a1","name":"get_weather","input":{"city":"Oslo"}},
			{"type":"tool_use","id":"call_b2","name":"get_time","input":{}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"call_a1","content":"{\"temp_c\":4}"},
			{"type":"tool_result","tool_use_id":"call_b2","content":[{"type":"text","text":"12:00"}]},
			{"type":"text","text":"Thanks"}]}]}`)
	// Assistant with only tool calls (content null or "").
	f(`{"messages":[{"role":"assistant","content":"","tool_calls":[{"id":"x","type":"function","function":{"name":"n","arguments":" {\"a\" : [1, 2]} "}}]}]}`,
		`{"model":"claude","max_tokens":4096,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"n","input":{"a":[1,2]}}]}]}`)
}

func TestChatRequestToMessagesParts(t *testing.T) {
	f := func(parts, want string) {
		t.Helper()
		c2mReqCase(t, msgconv.RequestOptions{},
			`{"messages":[{"role":"user","content":`+parts+`}]}`,
			`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":`+want+`}]}`)
	}
	// §4.2 text, image data URL, image URL, PDF file.
	f(`[{"type":"text","text":"Look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO","detail":"high"}}]`,
		`[{"type":"text","text":"Look"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}]`)
	f(`[{"type":"image_url","image_url":{"url":"https://x.test/a.jpg"}}]`,
		`[{"type":"image","source":{"type":"url","url":"https://x.test/a.jpg"}}]`)
	f(`[{"type":"image_url","image_url":"data:image\/jpeg;base64,\/9j\/"}]`,
		`[{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/"}}]`)
	f(`[{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBER","filename":"a.pdf"}}]`,
		`[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBER"}}]`)
	f(`[{"type":"file","file":{"file_data":"JVBER"}}]`,
		`[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBER"}}]`)
	// A part's cache_control is kept.
	f(`[{"type":"text","text":"big","cache_control":{"type":"ephemeral"}}]`,
		`[{"type":"text","text":"big","cache_control":{"type":"ephemeral"}}]`)
	// Assistant refusal parts become text.
	c2mReqCase(t, msgconv.RequestOptions{},
		`{"messages":[{"role":"assistant","content":[{"type":"refusal","refusal":"No."},{"type":"text","text":""}]}]}`,
		`{"model":"claude","max_tokens":4096,"messages":[{"role":"assistant","content":"No."}]}`)
}

func TestChatRequestToMessagesTools(t *testing.T) {
	f := func(extra, want string) {
		t.Helper()
		c2mReqCase(t, msgconv.RequestOptions{},
			`{"messages":[{"role":"user","content":"x"}],"tools":[
			{"type":"function","function":{"name":"get_weather","description":"Current weather",
			 "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true}},
			{"type":"function","function":{"name":"now"}}]`+extra+`}`,
			`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":"x"}],"tools":[
			{"name":"get_weather","description":"Current weather",
			 "input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true},
			{"name":"now","input_schema":{"type":"object","properties":{}}}]`+want+`}`)
	}
	// §4.3 definitions; §4.4 tool_choice.
	f(``, ``)
	f(`,"tool_choice":"auto"`, `,"tool_choice":{"type":"auto"}`)
	f(`,"tool_choice":"required"`, `,"tool_choice":{"type":"any"}`)
	f(`,"tool_choice":"none"`, `,"tool_choice":{"type":"none"}`)
	f(`,"tool_choice":{"type":"function","function":{"name":"now"}}`, `,"tool_choice":{"type":"tool","name":"now"}`)
	f(`,"tool_choice":"auto","parallel_tool_calls":false`, `,"tool_choice":{"type":"auto","disable_parallel_tool_use":true}`)
	f(`,"tool_choice":"required","parallel_tool_calls":false`, `,"tool_choice":{"type":"any","disable_parallel_tool_use":true}`)
	f(`,"tool_choice":{"type":"function","function":{"name":"now"}},"parallel_tool_calls":false`,
		`,"tool_choice":{"type":"tool","name":"now","disable_parallel_tool_use":true}`)
	f(`,"tool_choice":"none","parallel_tool_calls":false`, `,"tool_choice":{"type":"none"}`)
	f(`,"parallel_tool_calls":false`, `,"tool_choice":{"type":"auto","disable_parallel_tool_use":true}`)
	f(`,"parallel_tool_calls":true`, ``)
}

func TestChatRequestToMessagesParams(t *testing.T) {
	f := func(opt msgconv.RequestOptions, extra, want string) {
		t.Helper()
		c2mReqCase(t, opt, `{"model":"a","messages":[{"role":"user","content":"x"}]`+extra+`}`,
			`{"model":"claude","messages":[{"role":"user","content":"x"}]`+want+`}`)
	}
	var o msgconv.RequestOptions
	// §4.6 max tokens: default, option, either field, completion wins.
	f(o, ``, `,"max_tokens":4096`)
	f(msgconv.RequestOptions{DefaultMaxTokens: 1000}, ``, `,"max_tokens":1000`)
	f(o, `,"max_tokens":77`, `,"max_tokens":77`)
	f(o, `,"max_completion_tokens":88,"max_tokens":77`, `,"max_tokens":88`)
	f(o, `,"max_completion_tokens":null,"max_tokens":77`, `,"max_tokens":77`)
	// stop, temperature (clamped), top_p, stream.
	f(o, `,"stop":"END"`, `,"max_tokens":4096,"stop_sequences":["END"]`)
	f(o, `,"stop":["a","b"]`, `,"max_tokens":4096,"stop_sequences":["a","b"]`)
	f(o, `,"stop":[]`, `,"max_tokens":4096`)
	f(o, `,"stop":null`, `,"max_tokens":4096`)
	f(o, `,"temperature":0.25,"top_p":0.9`, `,"max_tokens":4096,"temperature":0.25,"top_p":0.9`)
	f(o, `,"temperature":1.7`, `,"max_tokens":4096,"temperature":1`)
	f(o, `,"stream":true,"stream_options":{"include_usage":true}`, `,"max_tokens":4096,"stream":true`)
	// reasoning_effort → thinking budget, max_tokens kept above it.
	f(o, `,"reasoning_effort":"low"`, `,"max_tokens":5120,"thinking":{"type":"enabled","budget_tokens":1024}`)
	f(o, `,"reasoning_effort":"minimal"`, `,"max_tokens":5120,"thinking":{"type":"enabled","budget_tokens":1024}`)
	f(o, `,"reasoning_effort":"medium"`, `,"max_tokens":8192,"thinking":{"type":"enabled","budget_tokens":4096}`)
	f(o, `,"reasoning_effort":"high"`, `,"max_tokens":20480,"thinking":{"type":"enabled","budget_tokens":16384}`)
	f(o, `,"reasoning_effort":"xhigh"`, `,"max_tokens":36864,"thinking":{"type":"enabled","budget_tokens":32768}`)
	f(o, `,"reasoning_effort":"none"`, `,"max_tokens":4096`)
	f(o, `,"reasoning_effort":"high","max_tokens":30000`, `,"max_tokens":30000,"thinking":{"type":"enabled","budget_tokens":16384}`)
	f(o, `,"reasoning_effort":"high","max_tokens":8000`, `,"max_tokens":8000,"thinking":{"type":"enabled","budget_tokens":7999}`)
	f(o, `,"reasoning_effort":"high","max_tokens":1000`, `,"max_tokens":1000`)
	f(o, `,"thinking":{"type":"enabled","budget_tokens":2000},"reasoning_effort":"high"`, `,"max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":2000}`)
	// user → metadata.user_id; response_format json_schema → output_config.
	f(o, `,"user":"u-123"`, `,"max_tokens":4096,"metadata":{"user_id":"u-123"}`)
	f(o, `,"safety_identifier":"s-1"`, `,"max_tokens":4096,"metadata":{"user_id":"s-1"}`)
	f(o, `,"response_format":{"type":"json_schema","json_schema":{"name":"r","schema":{"type":"object"}}}`,
		`,"max_tokens":4096,"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}}`)
	f(o, `,"response_format":{"type":"json_object"}`, `,"max_tokens":4096`)
	// Dropped: seed, logprobs, penalties, n = 1, metadata, stream_options.
	f(o, `,"seed":1,"logprobs":true,"presence_penalty":0.5,"frequency_penalty":0.1,"n":1,"metadata":{"a":"b"},"logit_bias":{"1":2}`, `,"max_tokens":4096`)
	// The caller's model when no upstream model is set.
	out, err := msgconv.ChatRequestToMessages(nil, []byte(`{"model":"a","messages":[]}`), msgconv.RequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, out, `{"model":"a","max_tokens":4096,"messages":[]}`)
}

func TestChatRequestToMessagesAutoCache(t *testing.T) {
	f := func(mode msgconv.AutoCache, in, want string) {
		t.Helper()
		c2mReqCase(t, msgconv.RequestOptions{AutoCache: mode}, in, want)
	}
	const eph = `{"type":"ephemeral"}`
	const eph1h = `{"type":"ephemeral","ttl":"1h"}`
	// The last system block and the last user turn's last block.
	f(msgconv.AutoCache5m,
		`{"messages":[{"role":"system","content":"A"},{"role":"developer","content":"B"},{"role":"user","content":"q1"},{"role":"assistant","content":"a1"},{"role":"user","content":"q2"},{"role":"assistant","content":"prefill"}]}`,
		`{"model":"claude","max_tokens":4096,
		"system":[{"type":"text","text":"A"},{"type":"text","text":"B","cache_control":`+eph+`}],
		"messages":[{"role":"user","content":"q1"},{"role":"assistant","content":"a1"},
		{"role":"user","content":[{"type":"text","text":"q2","cache_control":`+eph+`}]},{"role":"assistant","content":"prefill"}]}`)
	// 1h TTL; tool results are the last user turn.
	f(msgconv.AutoCache1h,
		`{"messages":[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]}`,
		`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":"q"},
		{"role":"assistant","content":[{"type":"tool_use","id":"c","name":"f","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"c","content":"r","cache_control":`+eph1h+`}]}]}`)
	// The caller's breakpoints count: 3 of theirs leave room for the
	// system one only, and a marked block is not marked twice.
	f(msgconv.AutoCache5m,
		`{"messages":[{"role":"system","content":"S"},{"role":"user","content":[
			{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},
			{"type":"text","text":"b","cache_control":{"type":"ephemeral"}},
			{"type":"text","text":"c","cache_control":{"type":"ephemeral"}}]}]}`,
		`{"model":"claude","max_tokens":4096,"system":[{"type":"text","text":"S","cache_control":`+eph+`}],
		"messages":[{"role":"user","content":[
			{"type":"text","text":"a","cache_control":`+eph+`},
			{"type":"text","text":"b","cache_control":`+eph+`},
			{"type":"text","text":"c","cache_control":`+eph+`}]}]}`)
	f(msgconv.AutoCache5m,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral","ttl":"1h"}}]}]}`,
		`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral","ttl":"1h"}}]}]}`)
	// Four of theirs: nothing added.
	f(msgconv.AutoCache5m,
		`{"tools":[{"type":"function","function":{"name":"t"},"cache_control":{"type":"ephemeral"}}],"messages":[{"role":"system","content":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":[
			{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"text","text":"b","cache_control":{"type":"ephemeral"}},{"type":"text","text":"c"}]}]}`,
		`{"model":"claude","max_tokens":4096,"system":[{"type":"text","text":"S","cache_control":`+eph+`}],
		"messages":[{"role":"user","content":[
			{"type":"text","text":"a","cache_control":`+eph+`},{"type":"text","text":"b","cache_control":`+eph+`},{"type":"text","text":"c"}]}],
		"tools":[{"name":"t","input_schema":{"type":"object","properties":{}},"cache_control":`+eph+`}]}`)
	// Off: no breakpoints, system stays a string.
	f(msgconv.AutoCacheOff,
		`{"messages":[{"role":"system","content":"S"},{"role":"user","content":"q"}]}`,
		`{"model":"claude","max_tokens":4096,"system":"S","messages":[{"role":"user","content":"q"}]}`)
}

func TestChatRequestToMessagesErrors(t *testing.T) {
	f := func(in, field string) {
		t.Helper()
		out, err := msgconv.ChatRequestToMessages([]byte("keep"), []byte(in), msgconv.RequestOptions{UpstreamModel: "c"})
		if !errors.Is(err, msgconv.ErrInvalidRequest) {
			t.Fatalf("%s: err %v; want ErrInvalidRequest", in, err)
		}
		if string(out) != "keep" {
			t.Fatalf("%s: dst changed to %q", in, out)
		}
		if !strings.Contains(err.Error(), "`"+field+"`") {
			t.Fatalf("%s: error %q does not name %s", in, err, field)
		}
	}
	f(`{"messages":[}`, "body")
	f(`[]`, "body")
	f(`{"model":"a"}`, "messages")
	f(`{"messages":[{"role":"User","content":"x"}]}`, "messages[0].role")
	f(`{"messages":[{"role":"function","content":"x"}]}`, "messages[0].role")
	f(`{"messages":[1]}`, "messages[0]")
	f(`{"messages":[{"role":"user","content":"x"},{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"x","format":"wav"}}]}]}`, "messages[1].content[0]")
	f(`{"messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"f"}}]}]}`, "messages[0].content[0].file")
	f(`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`, "messages[0].content[0].image_url.url")
	f(`{"messages":[{"role":"user","content":[{"type":"video"}]}]}`, "messages[0].content[0].type")
	f(`{"messages":[{"role":"user"}]}`, "messages[0].content")
	f(`{"messages":[{"role":"system","content":[{"type":"image_url"}]}]}`, "messages[0].content[0]")
	f(`{"messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{bad"}}]}]}`, "messages[0].tool_calls[0].function.arguments")
	f(`{"messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"[1]"}}]}]}`, "messages[0].tool_calls[0].function.arguments")
	f(`{"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f"}}]}]}`, "messages[0].tool_calls[0]")
	f(`{"messages":[{"role":"tool","content":"x"}]}`, "messages[0].tool_call_id")
	f(`{"messages":[],"n":2}`, "n")
	f(`{"messages":[],"max_tokens":0}`, "max_tokens")
	f(`{"messages":[],"max_completion_tokens":"5"}`, "max_completion_tokens")
	f(`{"messages":[],"temperature":"hot"}`, "temperature")
	f(`{"messages":[],"reasoning_effort":"extreme"}`, "reasoning_effort")
	f(`{"messages":[],"stop":[1]}`, "stop")
	f(`{"messages":[],"tools":[{"type":"custom","custom":{"name":"x"}}]}`, "tools[0].type")
	f(`{"messages":[],"tools":[{"type":"function","function":{}}]}`, "tools[0].function")
	f(`{"messages":[],"tools":[{"type":"function","function":{"name":"x","parameters":[]}}]}`, "tools[0].function.parameters")
	f(`{"messages":[],"tool_choice":"sometimes"}`, "tool_choice")
	f(`{"messages":[],"tool_choice":{"type":"allowed_tools"}}`, "tool_choice")
	out, err := msgconv.ChatRequestToMessages(nil, []byte(`{"messages":[]}`), msgconv.RequestOptions{})
	if err == nil || !strings.Contains(err.Error(), "`model`") {
		t.Fatalf("missing model: %q, %v", out, err)
	}
}
