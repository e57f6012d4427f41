package mock

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestChatRequestParse(t *testing.T) {
	f := func(body string, want chatRequest, wantNames ...string) {
		t.Helper()
		var r chatRequest
		if msg := r.parse([]byte(body)); msg != "" {
			t.Fatalf("%s: got error %q", body, msg)
		}
		if string(r.model) != string(want.model) || r.stream != want.stream || r.includeUsage != want.includeUsage ||
			r.hasTools != want.hasTools || r.messages != want.messages {
			t.Fatalf("%s: got model=%q stream=%v include_usage=%v tools=%v messages=%d; want model=%q stream=%v include_usage=%v tools=%v messages=%d",
				body, r.model, r.stream, r.includeUsage, r.hasTools, r.messages,
				want.model, want.stream, want.includeUsage, want.hasTools, want.messages)
		}
		var names []string
		for i := 0; i < r.nToolNames; i++ {
			names = append(names, string(r.toolNames[i]))
		}
		if strings.Join(names, ",") != strings.Join(wantNames, ",") {
			t.Fatalf("%s: got tool names %q; want %q", body, names, wantNames)
		}
	}
	f(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`,
		chatRequest{model: []byte("gpt-4o"), messages: 1})
	f(" {\n \"messages\" : [ {} , {\"content\":[{\"type\":\"text\",\"text\":\"a]}\\\"\"}]} ] ,\"model\":\"m\\\"x\", \"stream\":true,"+
		"\"stream_options\":{\"include_obfuscation\":false,\"include_usage\":true}} \n",
		chatRequest{model: []byte(`m\"x`), stream: true, includeUsage: true, messages: 2})
	f(`{"model":"m","messages":[1],"stream":false,"stream_options":null,"tools":[]}`,
		chatRequest{model: []byte("m"), messages: 1})
	f(`{"model":"m","messages":[1],"tools":[{"type":"function","function":{"description":"x","name":"get_weather","parameters":{"name":"no"}}},`+
		`{"type":"custom","custom":{"name":"grep"}},{"type":"web_search"}],"tool_choice":"auto","temperature":0.5e-1,"n":-1}`,
		chatRequest{model: []byte("m"), messages: 1, hasTools: true}, "get_weather", "grep")
}

func TestChatRequestParseErrors(t *testing.T) {
	f := func(body, want string) {
		t.Helper()
		var r chatRequest
		if got := r.parse([]byte(body)); got != want {
			t.Fatalf("%s: got %q; want %q", body, got, want)
		}
	}
	f(``, msgBadJSON)
	f(`[]`, msgBadJSON)
	f(`{"model":"m","messages":[1]`, msgBadJSON)
	f(`{"model":"m","messages":[1],}`, msgBadJSON)
	f(`{"model":"m" "messages":[1]}`, msgBadJSON)
	f(`{"model":"m","messages":[1]}x`, msgBadJSON)
	f(`{"model":"m","messages":[1],"stream":tru}`, msgBadJSON)
	f(`{"model":"m","messages":[1],"x":"unterminated}`, msgBadJSON)
	f(`{"model":"","messages":[1]}`, msgNoModel)
	f(`{"model":null,"messages":[1]}`, msgNoModel)
	f(`{"model":"m"}`, msgNoMessages)
	f(`{"model":"m","messages":"x"}`, msgBadMessages)
	f(`{"model":"m","messages":[]}`, msgEmptyMessages)
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
	var r chatRequest
	if msg := r.parse([]byte(body)); msg != "" {
		t.Fatalf("got error %q", msg)
	}
	if string(r.model) != "gpt-4o" || !r.stream || !r.includeUsage || r.messages != 4 || !r.hasTools ||
		r.nToolNames != 1 || string(r.toolNames[0]) != "get_weather" {
		t.Fatalf("got %+v", r)
	}
}

func TestAppendEscaped(t *testing.T) {
	f := func(in string) {
		t.Helper()
		got := `"` + string(appendEscaped(nil, in)) + `"`
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil || back != in {
			t.Fatalf("%q: escaped to %s, which decodes to %q (%v)", in, got, back, err)
		}
	}
	f("")
	f("plain")
	f(`q"uote\back`)
	f("ctl\x00\x01\x1f\n\r\t")
	f("ünïcode ✓")
}

// FuzzChatRequestParse checks that parse never panics and agrees with encoding/json on
// bodies that encoding/json accepts.
func FuzzChatRequestParse(f *testing.F) {
	f.Add(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	f.Add(`{"model":"m\"x","stream":true,"stream_options":{"include_usage":true},"messages":[1,2],"tools":[{"function":{"name":"a"}}]}`)
	f.Add(`{"model":"m","messages":[[[[{"a":"]"}]]]]}`)
	f.Add(`{"model":"m","messages":{}}`)
	if b, err := os.ReadFile("testdata/openai_chat_text.sse"); err == nil {
		f.Add(strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "data: "))
	}
	f.Fuzz(func(t *testing.T, body string) {
		var r chatRequest
		msg := r.parse([]byte(body))
		var ref struct {
			Model    *string           `json:"model"`
			Stream   any               `json:"stream"`
			Messages []json.RawMessage `json:"messages"`
		}
		if json.Unmarshal([]byte(body), &ref) != nil || !json.Valid([]byte(body)) || strings.Contains(body, `\`) {
			return
		}
		var dup map[string]json.RawMessage
		if json.Unmarshal([]byte(body), &dup) != nil {
			return
		}
		if ref.Model == nil || *ref.Model == "" || ref.Messages == nil || len(ref.Messages) == 0 {
			if msg == "" {
				t.Fatalf("%s: parse accepted a body without model or messages", body)
			}
			return
		}
		if msg != "" {
			t.Fatalf("%s: parse rejected a valid body: %s", body, msg)
		}
		if string(r.model) != *ref.Model || r.messages != len(ref.Messages) || r.stream != (ref.Stream == true) {
			t.Fatalf("%s: got model=%q messages=%d stream=%v", body, r.model, r.messages, r.stream)
		}
	})
}
