package mock

import (
	"slices"
	"strings"
	"testing"
)

// The fuzz targets of these parsers are FuzzMockMessagesRequest and
// FuzzMockResponsesRequest in gw/fuzz.

func names(list [][]byte) string {
	var out []string
	for _, n := range list {
		out = append(out, string(n))
	}
	return strings.Join(out, ",")
}

func TestParseMessagesRequest(t *testing.T) {
	f := func(body string, countTokens bool, want MessagesRequestInfo, wantNames string) {
		t.Helper()
		parse := ParseMessagesRequest
		if countTokens {
			parse = ParseCountTokensRequest
		}
		r, err := parse([]byte(body))
		if err != nil {
			t.Fatalf("%s: got error %q", body, err)
		}
		if string(r.Model) != string(want.Model) || r.Stream != want.Stream || r.MaxTokens != want.MaxTokens ||
			r.Messages != want.Messages || r.HasTools != want.HasTools || names(r.ToolNames()) != wantNames {
			t.Fatalf("%s: got %+v names %q; want %+v names %q", body, r, names(r.ToolNames()), want, wantNames)
		}
	}
	f(`{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"hi"}]}`, false,
		MessagesRequestInfo{Model: []byte("claude-sonnet-4-5"), MaxTokens: 1024, Messages: 1}, "")
	// The request example of protocols.md §3.2.
	f(`{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,
 "system":[{"type":"text","text":"Be terse.","cache_control":{"type":"ephemeral"}}],
 "messages":[
  {"role":"user","content":"Weather in Oslo?"},
  {"role":"assistant","content":[{"type":"tool_use","id":"toolu_01A","name":"get_weather","input":{"city":"Oslo"}}]},
  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01A","content":"{\"temp_c\":4}"}]}],
 "tools":[{"name":"get_weather","description":"Current weather",
   "input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}],
 "tool_choice":{"type":"auto","disable_parallel_tool_use":false},
 "metadata":{"user_id":"u-123"}}`, false,
		MessagesRequestInfo{Model: []byte("claude-sonnet-4-5"), MaxTokens: 1024, Stream: true, Messages: 3, HasTools: true}, "get_weather")
	// Keys compare decoded, the last repeated member wins, escapes are kept.
	f(`{"mod\u0065l":"a\"b","max_tokens":1,"max_tokens":7,"messages":[1],"messages":[1,2],"stream":true,"stream":false,`+
		`"tools":[{"name":"x"}],"tools":[{"type":"web_search_20250305","name":"web_search"},{"name":""},{"name":7},{},{"name":"g\u00e9t"}]}`, false,
		MessagesRequestInfo{Model: []byte(`a\"b`), MaxTokens: 7, Messages: 2, HasTools: true}, `web_search,g\u00e9t`)
	// count_tokens reads neither max_tokens nor stream.
	f(`{"model":"m","messages":[1],"stream":true,"max_tokens":"no"}`, true, MessagesRequestInfo{Model: []byte("m"), Messages: 1}, "")
	// At most 16 names.
	many := `{"model":"m","max_tokens":1,"messages":[1],"tools":[` + strings.Repeat(`{"name":"a"},`, 20) + `{}]}`
	f(many, false, MessagesRequestInfo{Model: []byte("m"), MaxTokens: 1, Messages: 1, HasTools: true},
		strings.Join(slices.Repeat([]string{"a"}, 16), ","))
}

func TestParseMessagesRequestErrors(t *testing.T) {
	f := func(body string, countTokens bool, want string) {
		t.Helper()
		parse := ParseMessagesRequest
		if countTokens {
			parse = ParseCountTokensRequest
		}
		if _, err := parse([]byte(body)); errString(err) != want {
			t.Fatalf("%s: got %q; want %q", body, errString(err), want)
		}
	}
	for _, ct := range []bool{false, true} {
		f(``, ct, msgAnthropicBadJSON)
		f(`[]`, ct, msgAnthropicBadJSON)
		f(`{"model":"m","max_tokens":1,"messages":[1]`, ct, msgAnthropicBadJSON)
		f(`{"model":"m","max_tokens":1,"messages":[1]}x`, ct, msgAnthropicBadJSON)
		f(`{"max_tokens":1,"messages":[1]}`, ct, msgAnthropicNoModel)
		f(`{"model":"","max_tokens":1,"messages":[1]}`, ct, msgAnthropicNoModel)
		f(`{"model":null,"max_tokens":1,"messages":[1]}`, ct, msgAnthropicNoModel)
		f(`{"model":"m","max_tokens":1}`, ct, msgAnthropicNoMessages)
		f(`{"model":"m","max_tokens":1,"messages":"x"}`, ct, msgAnthropicBadMessages)
		f(`{"model":"m","max_tokens":1,"messages":[1 2]}`, ct, msgAnthropicBadMessages)
		f(`{"model":"m","max_tokens":1,"messages":[]}`, ct, msgAnthropicNoMessage)
		// Members are checked in order.
		f(`{"messages":"x","model":1}`, ct, msgAnthropicBadMessages)
		f(`{"model":1,"messages":"x"}`, ct, msgAnthropicNoModel)
	}
	f(`{"model":"m","messages":[1]}`, false, msgAnthropicNoMaxTokens)
	f(`{"model":"m","max_tokens":0,"messages":[1]}`, false, msgAnthropicBadMaxTokens)
	f(`{"model":"m","max_tokens":-5,"messages":[1]}`, false, msgAnthropicBadMaxTokens)
	f(`{"model":"m","max_tokens":1.0,"messages":[1]}`, false, msgAnthropicBadMaxTokens)
	f(`{"model":"m","max_tokens":1e3,"messages":[1]}`, false, msgAnthropicBadMaxTokens)
	f(`{"model":"m","max_tokens":"1","messages":[1]}`, false, msgAnthropicBadMaxTokens)
	f(`{"model":"m","max_tokens":99999999999999999999,"messages":[1]}`, false, msgAnthropicBadMaxTokens)
	f(`{"max_tokens":null,"model":"m","messages":[1]}`, false, msgAnthropicBadMaxTokens)
	f(`{"max_tokens":0,"messages":"x"}`, false, msgAnthropicBadMaxTokens)
	// The missing member named first: model, then max_tokens, then messages.
	f(`{}`, false, msgAnthropicNoModel)
	f(`{"model":"m"}`, false, msgAnthropicNoMaxTokens)
}

func TestParseResponsesRequest(t *testing.T) {
	f := func(body string, want ResponsesRequestInfo, wantNames string) {
		t.Helper()
		r, err := ParseResponsesRequest([]byte(body))
		if err != nil {
			t.Fatalf("%s: got error %q", body, err)
		}
		if string(r.Model) != string(want.Model) || r.Stream != want.Stream || r.Input != want.Input ||
			r.HasTools != want.HasTools || names(r.ToolNames()) != wantNames {
			t.Fatalf("%s: got %+v names %q; want %+v names %q", body, r, names(r.ToolNames()), want, wantNames)
		}
	}
	f(`{"model":"gpt-4.1","input":"hi"}`, ResponsesRequestInfo{Model: []byte("gpt-4.1"), Input: 1}, "")
	f(`{"model":"gpt-4.1","previous_response_id":"resp_1"}`, ResponsesRequestInfo{Model: []byte("gpt-4.1")}, "")
	f(`{"model":"gpt-4.1","input":[]}`, ResponsesRequestInfo{Model: []byte("gpt-4.1")}, "")
	// The request example of protocols.md §2.1.
	f(`{"model":"gpt-5","instructions":"Be terse.","stream":true,
 "input":[{"role":"user","content":"Weather in Oslo?"},
          {"type":"function_call","call_id":"call_a1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"},
          {"type":"function_call_output","call_id":"call_a1","output":"{\"temp_c\":4}"}],
 "tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}],
 "reasoning":{"effort":"low","summary":"auto"},"max_output_tokens":2048}`,
		ResponsesRequestInfo{Model: []byte("gpt-5"), Stream: true, Input: 3, HasTools: true}, "get_weather")
	// Hosted tools have no name; keys compare decoded; the last repeated member wins.
	f(`{"\u006dodel":"x","model":"m\\n","input":"a","input":[1,2],"stream":true,"stream":1,`+
		`"tools":[{"type":"web_search"},{"type":"custom","name":"grep"},{"type":"function","name":"f"}]}`,
		ResponsesRequestInfo{Model: []byte(`m\\n`), Input: 2, HasTools: true}, "grep,f")
	f(`{"model":"m","tools":[{"type":"web_search"}]}`, ResponsesRequestInfo{Model: []byte("m"), HasTools: true}, "")
}

func TestParseResponsesRequestErrors(t *testing.T) {
	f := func(body, want string) {
		t.Helper()
		if _, err := ParseResponsesRequest([]byte(body)); errString(err) != want {
			t.Fatalf("%s: got %q; want %q", body, errString(err), want)
		}
	}
	f(``, msgBadJSON)
	f(`"x"`, msgBadJSON)
	f(`{"model":"m","input":"x"`, msgBadJSON)
	f(`{"model":"m","input":"x",}`, msgBadJSON)
	f(`{"input":"x"}`, msgResponsesNoModel)
	f(`{"model":"","input":"x"}`, msgResponsesNoModel)
	f(`{"model":{},"input":"x"}`, msgResponsesNoModel)
	f(`{"model":"m","input":7}`, msgResponsesBadInput)
	f(`{"model":"m","input":{}}`, msgResponsesBadInput)
	f(`{"model":"m","input":null}`, msgResponsesBadInput)
	f(`{"model":"m","input":[1 2]}`, msgResponsesBadInput)
	// Members are checked in order.
	f(`{"input":7,"model":1}`, msgResponsesBadInput)
	f(`{"model":1,"input":7}`, msgResponsesNoModel)
	f(`{"model":"m","input":7,!`, msgResponsesBadInput)
}
