package converse

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func TestChatRequestToConverse(t *testing.T) {
	f := func(name, in string, opt RequestOptions, want string) {
		t.Helper()
		got, err := ChatRequestToConverse(nil, []byte(in), opt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: output is not JSON: %v\n%s", name, err, got)
		}
		if err := json.Unmarshal([]byte(want), &w); err != nil {
			t.Fatalf("%s: bad want: %v", name, err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%s:\ngot  %s\nwant %s", name, got, want)
		}
	}
	f("text", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, RequestOptions{},
		`{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`)
	f("system and developer become system blocks",
		`{"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"hi"},{"role":"developer","content":"D"}],"max_tokens":100,"temperature":0.5,"top_p":0.9,"stop":["x"]}`,
		RequestOptions{},
		`{"messages":[{"role":"user","content":[{"text":"hi"}]}],"system":[{"text":"S\n\nD"}],"inferenceConfig":{"maxTokens":100,"temperature":0.5,"topP":0.9,"stopSequences":["x"]}}`)
	f("tools, calls, results, images",
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}}]},`+
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"c2","type":"function","function":{"name":"g","arguments":""}}]},`+
			`{"role":"tool","tool_call_id":"c1","content":"r1"},{"role":"tool","tool_call_id":"c2","content":"r2"}],`+
			`"tools":[{"type":"function","function":{"name":"f","description":"F","parameters":{"type":"object"}}},{"type":"function","function":{"name":"g"}}],"tool_choice":"required"}`,
		RequestOptions{},
		`{"messages":[{"role":"user","content":[{"text":"look"},{"image":{"format":"png","source":{"bytes":"iVBO"}}}]},`+
			`{"role":"assistant","content":[{"toolUse":{"toolUseId":"c1","name":"f","input":{"a":1}}},{"toolUse":{"toolUseId":"c2","name":"g","input":{}}}]},`+
			`{"role":"user","content":[{"toolResult":{"toolUseId":"c1","content":[{"text":"r1"}]}},{"toolResult":{"toolUseId":"c2","content":[{"text":"r2"}]}}]}],`+
			`"toolConfig":{"tools":[{"toolSpec":{"name":"f","description":"F","inputSchema":{"json":{"type":"object"}}}},{"toolSpec":{"name":"g","inputSchema":{"json":{"type":"object","properties":{}}}}}],"toolChoice":{"any":{}}}}`)
	f("named tool choice", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
		RequestOptions{},
		`{"messages":[{"role":"user","content":[{"text":"hi"}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"object","properties":{}}}}}],"toolChoice":{"tool":{"name":"f"}}}}`)
	f("reasoning on claude", `{"model":"m","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"low"}`,
		RequestOptions{Anthropic: true},
		`{"messages":[{"role":"user","content":[{"text":"hi"}]}],"inferenceConfig":{"maxTokens":5120},"additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":1024}}}`)
	f("reasoning dropped elsewhere", `{"model":"m","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"low"}`,
		RequestOptions{},
		`{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`)
}

func TestChatRequestToConverseErrors(t *testing.T) {
	for _, in := range []string{
		`[]`,
		`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`,
		`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/bmp;base64,AAAA"}}]}]}`,
	} {
		if _, err := ChatRequestToConverse(nil, []byte(in), RequestOptions{}); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%s: got %v; want ErrInvalidRequest", in, err)
		}
	}
}
