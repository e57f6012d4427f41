package respconv_test

import (
	"errors"
	"strings"
	"testing"

	"gw/sse/respconv"
)

func TestResponsesRequestToChat(t *testing.T) {
	opt := respconv.RequestOptions{UpstreamModel: "gpt-4o-2024-08-06"}
	f := func(name, body, want string) {
		t.Helper()
		out, err := respconv.ResponsesRequestToChat([]byte("pre"), []byte(body), opt)
		if err != nil {
			t.Fatalf("%s: %s", name, err)
		}
		if string(out[:3]) != "pre" {
			t.Fatalf("%s: dst not appended to", name)
		}
		sameJSON(t, name, out[3:], want)
	}
	f("string input, instructions, stream",
		`{"model":"alias","instructions":"Be terse.","input":"Hi","stream":true}`,
		`{"model":"gpt-4o-2024-08-06","messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Hi"}],"stream":true,"stream_options":{"include_usage":true}}`)
	f("the protocols.md example: function call round trip, tools, reasoning, max tokens",
		`{"model":"gpt-5","instructions":"Be terse.","stream":false,
		  "input":[{"role":"user","content":"Weather in Oslo?"},
		           {"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"e"},
		           {"type":"function_call","call_id":"call_a1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"},
		           {"type":"function_call_output","call_id":"call_a1","output":"{\"temp_c\":4}"}],
		  "tools":[{"type":"function","name":"get_weather","description":"Current weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true}],
		  "tool_choice":"auto","reasoning":{"effort":"low","summary":"auto"},"max_output_tokens":2048,"temperature":0.3,"top_p":0.9,
		  "user":"u","metadata":{"a":"b"},"parallel_tool_calls":false,"store":false,"truncation":"auto","include":["reasoning.encrypted_content"]}`,
		`{"model":"gpt-4o-2024-08-06","messages":[
		   {"role":"system","content":"Be terse."},
		   {"role":"user","content":"Weather in Oslo?"},
		   {"role":"assistant","content":null,"tool_calls":[{"id":"call_a1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
		   {"role":"tool","tool_call_id":"call_a1","content":"{\"temp_c\":4}"}],
		  "tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true}}],
		  "tool_choice":"auto","max_completion_tokens":2048,"temperature":0.3,"top_p":0.9,"reasoning_effort":"low",
		  "user":"u","metadata":{"a":"b"},"parallel_tool_calls":false}`)
	f("assistant text and parallel calls merge into one message",
		`{"model":"m","input":[
		   {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking.","annotations":[]}]},
		   {"type":"function_call","call_id":"c1","name":"a","arguments":"{}"},
		   {"type":"function_call","call_id":"c2","name":"b","arguments":""},
		   {"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"r1"}]},
		   {"type":"function_call_output","call_id":"c2","output":"r2"},
		   {"role":"developer","content":[{"type":"input_text","text":"d1"},{"type":"input_text","text":"d2"}]}]}`,
		`{"model":"gpt-4o-2024-08-06","messages":[
		   {"role":"assistant","content":"Checking.","tool_calls":[{"id":"c1","type":"function","function":{"name":"a","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"b","arguments":"{}"}}]},
		   {"role":"tool","tool_call_id":"c1","content":"r1"},
		   {"role":"tool","tool_call_id":"c2","content":"r2"},
		   {"role":"developer","content":[{"type":"text","text":"d1"},{"type":"text","text":"d2"}]}]}`)
	f("user parts: text, image, file, audio",
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"What is this?"},
		   {"type":"input_image","image_url":"data:image/png;base64,iVBO","detail":"low"},
		   {"type":"input_image","image_url":"https://x/y.png"},
		   {"type":"input_file","file_data":"data:application/pdf;base64,JVB","filename":"a.pdf"},
		   {"type":"input_audio","input_audio":{"data":"UklG","format":"wav"}}]}]}`,
		`{"model":"gpt-4o-2024-08-06","messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},
		   {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO","detail":"low"}},
		   {"type":"image_url","image_url":{"url":"https://x/y.png"}},
		   {"type":"file","file":{"file_data":"data:application/pdf;base64,JVB","filename":"a.pdf"}},
		   {"type":"input_audio","input_audio":{"data":"UklG","format":"wav"}}]}]}`)
	f("tool_choice function, json_schema, verbosity, caller model kept",
		`{"model":"mine","input":"x","tool_choice":{"type":"function","name":"f"},
		  "text":{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"strict":true},"verbosity":"low"}}`,
		`{"model":"gpt-4o-2024-08-06","messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"function","function":{"name":"f"}},
		  "response_format":{"type":"json_schema","json_schema":{"name":"out","schema":{"type":"object"},"strict":true}},"verbosity":"low"}`)
	f("allowed_tools and json_object",
		`{"model":"m","input":"x","tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"a"}]},"text":{"format":{"type":"json_object"}}}`,
		`{"model":"gpt-4o-2024-08-06","messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"a"}}]}},"response_format":{"type":"json_object"}}`)
	opt.UpstreamModel = ""
	f("no upstream model: the caller's is kept; null members dropped",
		`{"model":"mine","input":"x","instructions":null,"temperature":null,"previous_response_id":null,"text":{"format":{"type":"text"}}}`,
		`{"model":"mine","messages":[{"role":"user","content":"x"}]}`)
}

func TestResponsesRequestToChatErrors(t *testing.T) {
	f := func(body string, want error, field string) {
		t.Helper()
		out, err := respconv.ResponsesRequestToChat([]byte("x"), []byte(body), respconv.RequestOptions{UpstreamModel: "u"})
		if !errors.Is(err, want) || string(out) != "x" {
			t.Fatalf("%s: %q, %v; want %v", body, out, err, want)
		}
		var fe *respconv.FieldError
		if !errors.As(err, &fe) || fe.Field != field || !strings.Contains(err.Error(), "respconv: ") {
			t.Fatalf("%s: error %v; want field %q", body, err, field)
		}
	}
	f(`{"model":"m","input":"x","previous_response_id":"resp_1"}`, respconv.ErrStateful, "previous_response_id")
	f(`{"model":"m","input":"x","conversation":"conv_1"}`, respconv.ErrStateful, "conversation")
	f(`{"model":"m","input":"x","store":true}`, respconv.ErrStateful, "store")
	f(`{"model":"m","input":"x","background":true}`, respconv.ErrStateful, "background")
	f(`{"model":"m","prompt":{"id":"pmpt_1"}}`, respconv.ErrStateful, "prompt")
	f(`{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`, respconv.ErrStateful, "input[0]")
	f(`{"model":"m","input":"x","tools":[{"type":"function","name":"f"},{"type":"web_search"}]}`, respconv.ErrUnsupported, "tools[1].type")
	f(`{"model":"m","input":"x","tool_choice":{"type":"web_search_preview"}}`, respconv.ErrUnsupported, "tool_choice.type")
	f(`{"model":"m","input":[{"type":"computer_call","id":"c"}]}`, respconv.ErrUnsupported, "input[0].type")
	f(`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"file_1"}]}]}`, respconv.ErrUnsupported, "input[0].content[0].file_id")
	f(`{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_url":"https://x"}]}]}`, respconv.ErrUnsupported, "input[0].content[0].file_url")
	f(`{"model":"m","input":[{"role":"system","content":[{"type":"input_image","image_url":"x"}]}]}`, respconv.ErrUnsupported, "input[0].content[0].type")
	f(`{"model":"m","input":[{"role":"robot","content":"x"}]}`, respconv.ErrInvalid, "input[0].role")
	f(`{"model":"m","input":[{"type":"function_call","name":"f"}]}`, respconv.ErrInvalid, "input[0].call_id")
	f(`{"model":"m","input":[1]}`, respconv.ErrInvalid, "input[0]")
	f(`{"model":"m"}`, respconv.ErrInvalid, "input")
	f(`{"model":"m","input":"x","tools":[{"type":"function"}]}`, respconv.ErrInvalid, "tools[0].name")
	f(`{"model":"m","input":"x",}`, respconv.ErrInvalid, "")
	f(`[]`, respconv.ErrInvalid, "")
}

func TestChatRequestToResponses(t *testing.T) {
	opt := respconv.RequestOptions{UpstreamModel: "gpt-5"}
	f := func(name, body, want string) {
		t.Helper()
		out, err := respconv.ChatRequestToResponses(nil, []byte(body), opt)
		if err != nil {
			t.Fatalf("%s: %s", name, err)
		}
		sameJSON(t, name, out, want)
	}
	f("the protocols.md chat example",
		`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},
		  "messages":[
		   {"role":"developer","content":"Be terse."},
		   {"role":"user","content":[{"type":"text","text":"Weather in Oslo?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO..."}}]},
		   {"role":"assistant","content":null,"tool_calls":[{"id":"call_a1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
		   {"role":"tool","tool_call_id":"call_a1","content":"{\"temp_c\":4}"}],
		  "tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],
		  "tool_choice":"auto","max_completion_tokens":512,"seed":1,"presence_penalty":0}`,
		`{"model":"gpt-5","store":false,"input":[
		   {"type":"message","role":"developer","content":"Be terse."},
		   {"type":"message","role":"user","content":[{"type":"input_text","text":"Weather in Oslo?"},{"type":"input_image","image_url":"data:image/png;base64,iVBO...","detail":"auto"}]},
		   {"type":"function_call","call_id":"call_a1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"},
		   {"type":"function_call_output","call_id":"call_a1","output":"{\"temp_c\":4}"}],
		  "tools":[{"type":"function","name":"get_weather","description":"Current weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":false}],
		  "tool_choice":"auto","max_output_tokens":512,"stream":true}`)
	f("assistant text with refusal and parts, tool content parts, reasoning effort, response_format, verbosity",
		`{"model":"x","messages":[
		   {"role":"system","content":[{"type":"text","text":"s"}]},
		   {"role":"assistant","content":"Sure.","refusal":"but no","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
		   {"role":"assistant","content":[{"type":"text","text":"a"},{"type":"refusal","refusal":"r"}]},
		   {"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"p1"},{"type":"text","text":"p2"}]},
		   {"role":"user","content":[{"type":"file","file":{"file_id":"file_1"}},{"type":"input_audio","input_audio":{"data":"d","format":"mp3"}}]}],
		  "tools":[{"type":"function","function":{"name":"f","strict":true}}],
		  "tool_choice":{"type":"function","function":{"name":"f"}},
		  "reasoning_effort":"high","max_tokens":100,"temperature":0.1,"top_p":1,"user":"u","metadata":{"k":"v"},"parallel_tool_calls":true,
		  "response_format":{"type":"json_schema","json_schema":{"name":"o","schema":{"type":"object"},"strict":true}},"verbosity":"high"}`,
		`{"model":"gpt-5","store":false,"input":[
		   {"type":"message","role":"system","content":[{"type":"input_text","text":"s"}]},
		   {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Sure.","annotations":[]},{"type":"refusal","refusal":"but no"}]},
		   {"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
		   {"type":"message","role":"assistant","content":[{"type":"output_text","text":"a","annotations":[]},{"type":"refusal","refusal":"r"}]},
		   {"type":"function_call_output","call_id":"c1","output":"p1p2"},
		   {"type":"message","role":"user","content":[{"type":"input_file","file_id":"file_1"},{"type":"input_audio","input_audio":{"data":"d","format":"mp3"}}]}],
		  "tools":[{"type":"function","name":"f","parameters":{"type":"object","properties":{}},"strict":true}],
		  "tool_choice":{"type":"function","name":"f"},"max_output_tokens":100,"reasoning":{"effort":"high"},
		  "text":{"format":{"type":"json_schema","name":"o","schema":{"type":"object"},"strict":true},"verbosity":"high"},
		  "temperature":0.1,"top_p":1,"user":"u","metadata":{"k":"v"},"parallel_tool_calls":true}`)
	f("allowed_tools, json_object, verbosity only",
		`{"model":"x","messages":[{"role":"user","content":"q"}],"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"a"}}]}},"response_format":{"type":"json_object"},"n":1,"stop":null}`,
		`{"model":"gpt-5","store":false,"input":[{"type":"message","role":"user","content":"q"}],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"a"}]},"text":{"format":{"type":"json_object"}}}`)
}

func TestChatRequestToResponsesErrors(t *testing.T) {
	f := func(body string, want error, field string) {
		t.Helper()
		out, err := respconv.ChatRequestToResponses([]byte("x"), []byte(body), respconv.RequestOptions{})
		var fe *respconv.FieldError
		if !errors.Is(err, want) || string(out) != "x" || !errors.As(err, &fe) || fe.Field != field {
			t.Fatalf("%s: %q, %v; want %v at %q", body, out, err, want, field)
		}
	}
	msgs := `"messages":[{"role":"user","content":"q"}]`
	f(`{"model":"m",`+msgs+`,"n":2}`, respconv.ErrUnsupported, "n")
	f(`{"model":"m",`+msgs+`,"stop":["x"]}`, respconv.ErrUnsupported, "stop")
	f(`{"model":"m",`+msgs+`,"audio":{"voice":"a"}}`, respconv.ErrUnsupported, "audio")
	f(`{"model":"m",`+msgs+`,"functions":[]}`, respconv.ErrUnsupported, "functions")
	f(`{"model":"m",`+msgs+`,"tools":[{"type":"custom","custom":{"name":"c"}}]}`, respconv.ErrUnsupported, "tools[0].type")
	f(`{"model":"m","messages":[{"role":"function","name":"f","content":"x"}]}`, respconv.ErrUnsupported, "messages[0].role")
	f(`{"model":"m","messages":[{"role":"tool","content":"x"}]}`, respconv.ErrInvalid, "messages[0].tool_call_id")
	f(`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f"}}]}]}`, respconv.ErrInvalid, "messages[0].tool_calls[0].id")
	f(`{"model":"m","messages":[{"role":"user","content":[{"type":"video"}]}]}`, respconv.ErrUnsupported, "messages[0].content[0].type")
	f(`{"model":"m","messages":{}}`, respconv.ErrInvalid, "messages")
	f(`{"messages":[]}`, respconv.ErrInvalid, "model")
	f(`{"model":"m","messages":[]`, respconv.ErrInvalid, "")
}

func TestErrorCode(t *testing.T) {
	f := func(status int, obj, want string) {
		t.Helper()
		if got := respconv.ErrorCode(status, []byte(obj)); got != want {
			t.Fatalf("ErrorCode(%d, %s) = %q; want %q", status, obj, got, want)
		}
	}
	f(400, `{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`, "context_length_exceeded")
	f(0, `{"message":"Input exceeds the Context Window of the model","type":"invalid_request_error"}`, "context_length_exceeded")
	f(429, `{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}`, "insufficient_quota")
	f(429, ``, "rate_limit_exceeded")
	f(0, `{"type":"tokens","code":"rate_limit_exceeded","message":"m"}`, "rate_limit_exceeded")
	f(0, `{"code":"slow_down","message":"m"}`, "slow_down")
	f(400, `{"error":{"type":"invalid_request_error","code":"invalid_prompt","message":"flagged"}}`, "invalid_prompt")
	f(400, `{"error":{"type":"invalid_request_error","message":"bad"}}`, "invalid_prompt")
	f(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "server_is_overloaded")
	f(503, ``, "server_is_overloaded")
	f(504, ``, "stream_timeout")
	f(500, `{"error":{"type":"server_error","message":"x"}}`, "server_error")
	f(0, `garbage`, "server_error")

	g := func(in, want string) {
		t.Helper()
		if got := respconv.ResponsesErrorCode(in); got != want {
			t.Fatalf("ResponsesErrorCode(%q) = %q; want %q", in, got, want)
		}
	}
	for _, c := range []string{"invalid_prompt", "context_length_exceeded", "insufficient_quota", "rate_limit_exceeded", "server_is_overloaded", "slow_down"} {
		g(c, c)
	}
	g("server_error", "server_is_overloaded")
	g("stream_timeout", "server_is_overloaded")
	g("upstream_stream_error", "server_is_overloaded")
	g("whatever", "server_is_overloaded")
}
