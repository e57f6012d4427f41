package mock

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// The fuzz target of ParseChatRequest is FuzzMockChatRequest in gw/fuzz.

func TestParseChatRequest(t *testing.T) {
	f := func(body string, want ChatRequestInfo, wantNames ...string) {
		t.Helper()
		r, err := ParseChatRequest([]byte(body))
		if err != nil {
			t.Fatalf("%s: got error %q", body, err)
		}
		if string(r.Model) != string(want.Model) || r.Stream != want.Stream || r.IncludeUsage != want.IncludeUsage ||
			r.HasTools != want.HasTools || r.Messages != want.Messages {
			t.Fatalf("%s: got model=%q stream=%v include_usage=%v tools=%v messages=%d; want model=%q stream=%v include_usage=%v tools=%v messages=%d",
				body, r.Model, r.Stream, r.IncludeUsage, r.HasTools, r.Messages,
				want.Model, want.Stream, want.IncludeUsage, want.HasTools, want.Messages)
		}
		var names []string
		for _, name := range r.ToolNames() {
			names = append(names, string(name))
		}
		if strings.Join(names, ",") != strings.Join(wantNames, ",") {
			t.Fatalf("%s: got tool names %q; want %q", body, names, wantNames)
		}
	}
	f(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`,
		ChatRequestInfo{Model: []byte("gpt-4o"), Messages: 1})
	f(" {\n \"messages\" : [ {} , {\"content\":[{\"type\":\"text\",\"text\":\"a]}\\\"\"}]} ] ,\"model\":\"m\\\"x\", \"stream\":true,"+
		"\"stream_options\":{\"include_obfuscation\":false,\"include_usage\":true}} \n",
		ChatRequestInfo{Model: []byte(`m\"x`), Stream: true, IncludeUsage: true, Messages: 2})
	f(`{"model":"m","messages":[1],"stream":false,"stream_options":null,"tools":[]}`,
		ChatRequestInfo{Model: []byte("m"), Messages: 1})
	f(`{"model":"m","messages":[1],"tools":[{"type":"function","function":{"description":"x","name":"get_weather","parameters":{"name":"no"}}},`+
		`{"type":"custom","custom":{"name":"grep"}},{"type":"web_search"}],"tool_choice":"auto","temperature":0.5e-1,"n":-1}`,
		ChatRequestInfo{Model: []byte("m"), Messages: 1, HasTools: true}, "get_weather", "grep")
	// Keys compare decoded and the last of repeated keys wins, as in encoding/json.
	f(`{"mod\u0065l":"m","\u006dessages":[1,2],"stream":true,"stream":false,"stream_options":{"include_usage":true,"include_usage":false}}`,
		ChatRequestInfo{Model: []byte("m"), Messages: 2})
	f(`{"model":"a","model":"b","messages":[1],"messages":[1,2,3],"tools":[{"function":{"name":"x"}}],"tools":[{"function":{"name":"y","name":"z"}}]}`,
		ChatRequestInfo{Model: []byte("b"), Messages: 3, HasTools: true}, "z")
	// One name per tool: function.name, else custom.name; unnamed tools are skipped.
	f(`{"model":"m","messages":[1],"tools":[{"function":{"name":""},"custom":{"name":"c"}},{"function":{"name":7}},1,{"function":{"name":"f"},"custom":{"name":"g"}}]}`,
		ChatRequestInfo{Model: []byte("m"), Messages: 1, HasTools: true}, "c", "f")
	// At most 16 names, whatever the tools carry.
	many := `{"model":"m","messages":[1],"tools":[` + strings.Repeat(`{"function":{"name":"a"},"custom":{"name":"b"}},`, 20) + `{}]}`
	f(many, ChatRequestInfo{Model: []byte("m"), Messages: 1, HasTools: true}, slices.Repeat([]string{"a"}, 16)...)
}

func TestParseChatRequestErrors(t *testing.T) {
	f := func(body, want string) {
		t.Helper()
		_, err := ParseChatRequest([]byte(body))
		if got := errString(err); got != want {
			t.Fatalf("%s: got %q; want %q", body, got, want)
		}
	}
	f(``, msgBadJSON)
	f(` `, msgBadJSON)
	f(`[]`, msgBadJSON)
	f(`{"model":"m","messages":[1]`, msgBadJSON)
	f(`{"model":"m","messages":[1],}`, msgBadJSON)
	f(`{"model":"m" "messages":[1]}`, msgBadJSON)
	f(`{"model":"m","messages":[1]}x`, msgBadJSON)
	f(`{"model":"m","messages":[1],"stream":tru}`, msgBadJSON)
	f(`{"model":"m","messages":[1],"x":"unterminated}`, msgBadJSON)
	f(`{"model":"m","messages":[1],"n":01}`, msgBadJSON)
	f(`{"model":"","messages":[1]}`, msgNoModel)
	f(`{"model":null,"messages":[1]}`, msgNoModel)
	f(`{"messages":[1]}`, msgNoModel)
	f(`{"model":"m"}`, msgNoMessages)
	f(`{"model":"m","messages":"x"}`, msgBadMessages)
	f(`{"model":"m","messages":null}`, msgBadMessages)
	f(`{"model":"m","messages":[1 2]}`, msgBadMessages)
	f(`{"model":"m","messages":[]}`, msgEmptyMessages)
	// Members are checked in order: the first bad one answers, even before a syntax error.
	f(`{"messages":"x","model":1}`, msgBadMessages)
	f(`{"model":1,"messages":"x"}`, msgNoModel)
	f(`{"messages":"x"}`, msgBadMessages)
	f(`{"model":7,"messages":[1],"model":"m"}`, msgNoModel)
	f(`{"model":7,"messages":[1],!`, msgNoModel)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestParseFixtureRequestShape(t *testing.T) {
	// The request example of protocols.md §1.1.
	body := `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},
 "messages":[
  {"role":"developer","content":"Be terse."},
  {"role":"user","content":[{"type":"text","text":"Weather in Oslo?"},
                            {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO..."}}]},
  {"role":"assistant","content":null,"tool_calls":[{"id":"call_a1","type":"function",
     "function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
  {"role":"tool","tool_call_id":"call_a1","content":"{\"temp_c\":4}"}],
 "tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather",
   "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],
 "tool_choice":"auto","max_completion_tokens":512}`
	r, err := ParseChatRequest([]byte(body))
	if err != nil {
		t.Fatalf("got error %q", err)
	}
	if string(r.Model) != "gpt-4o" || !r.Stream || !r.IncludeUsage || r.Messages != 4 || !r.HasTools ||
		len(r.ToolNames()) != 1 || string(r.ToolNames()[0]) != "get_weather" {
		t.Fatalf("got %+v", r)
	}
}

func TestAppendEscaped(t *testing.T) {
	f := func(in string) {
		t.Helper()
		got := `"pre` + string(appendEscaped([]byte("x"), in)[1:]) + `"`
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil || back != "pre"+in {
			t.Fatalf("%q: escaped to %s, which decodes to %q (%v)", in, got, back, err)
		}
	}
	f("")
	f("plain")
	f(`q"uote\back`)
	f("ctl\x00\x01\x1f\n\r\t\b\f")
	f("ünïcode ✓")
}
