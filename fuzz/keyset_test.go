package fuzz

import (
	"encoding/json"
	"strings"
	"testing"

	"gw/adapters/bodyrules"
	"gw/adapters/openai"
	"gw/sse/msgconv"
	"gw/sse/rawjson"
	"gw/sse/respconv"
)

var keysetRules = bodyrules.Compile(&bodyrules.Config{
	ParamRenames:        []bodyrules.Rename{{From: "top_p", To: "p"}, {From: "p", To: "temperature"}},
	TemperatureMin:      ptrFloat(0.1),
	TemperatureMax:      ptrFloat(0.5),
	DefaultBodyFields:   []bodyrules.Field{{Key: "top_k", Value: []byte(`7`)}, {Key: "model", Value: []byte(`"x"`)}},
	ContentListToString: true,
}, "model", "stream")

func ptrFloat(f float64) *float64 { return &f }

// FuzzBodyRules: the shared provider-key body rules never panic; on a valid
// object they yield a valid object whose numeric temperature is within the
// bounds and which has the default field.
func FuzzBodyRules(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","temperature":1.5,"top_p":0.2,"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`,
		`{"temperature":0}`, `{"p":2,"temperature":0.3}`, `{"messages":[{"content":[{"type":"text","text":"\ud83d"}]}]}`,
		`{}`, `[]`, `{"a":`, `{"temperature":"hot","top_k":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s := bodyrules.AcquireScratch()
		defer bodyrules.ReleaseScratch(s)
		out, err := keysetRules.Apply(body, bodyrules.All, s)
		if !rawjson.Valid(body) || rawjson.KindOf(body) != rawjson.Object {
			return
		}
		if err != nil {
			t.Fatalf("Apply(%s): %v", body, err)
		}
		if !rawjson.Valid(out) || rawjson.KindOf(out) != rawjson.Object {
			t.Fatalf("Apply(%s) = %s: not a JSON object", body, out)
		}
		if v, k, ok := rawjson.Get(out, "temperature"); ok && k == rawjson.Number {
			if f, ok := rawjson.ParseFloat(v); ok && (f < 0.1 || f > 0.5) {
				t.Fatalf("Apply(%s): temperature %s out of bounds", body, v)
			}
		}
		if _, _, ok := rawjson.Get(out, "top_k"); !ok {
			t.Fatalf("Apply(%s) = %s: no default top_k", body, out)
		}
	})
}

// FuzzRenameReasoning: response.reasoning_field's move never panics and,
// when it moves something in a valid body, yields valid JSON (a broken
// upstream chunk stays broken; the first crasher was one).
func FuzzRenameReasoning(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"index":0,"delta":{"reasoning":"r"},"finish_reason":null}]}`,
		`{"choices":[{"message":{"content":"a","reasoning":"r","reasoning_content":"x"}},{"delta":{"reasoning":1}}]}`,
		`{"choices":[],"usage":{}}`, `{"choices":{}}`, `[`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, ok := openai.RenameReasoning(nil, body, "reasoning")
		if ok && rawjson.Valid(body) && !rawjson.Valid(out) {
			t.Fatalf("RenameReasoning(%s) = %s: invalid JSON", body, out)
		}
	})
}

// FuzzThinkingBlocks: a Messages answer's thinking reaches the chat form
// and comes back as Messages blocks without panics; whatever a chat caller
// sends as thinking_blocks converts to valid JSON or a request error; the
// signatures survive the round trip.
func FuzzThinkingBlocks(f *testing.F) {
	for _, s := range []string{
		`{"id":"m","type":"message","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"redacted_thinking","data":"d"},{"type":"text","text":"a"},{"type":"tool_use","id":"t1","name":"f","input":{}}],"stop_reason":"tool_use","usage":{}}`,
		`{"id":"m","type":"message","content":[{"type":"thinking","thinking":"\u00e9","signature":"s\"q"},{"type":"text","text":"a"},{"type":"server_tool_use"},{"type":"text","text":"b"}],"usage":{}}`,
		`{"id":"m","type":"message","content":[{"type":"thinking"},{"type":"redacted_thinking","data":7}],"usage":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, answer []byte) {
		chat, _, err := msgconv.MessagesResponseToChat(nil, answer, []byte("alias"))
		if err != nil {
			return
		}
		var c struct {
			Choices []struct {
				Message map[string]any
			}
		}
		if err := json.Unmarshal(chat, &c); err != nil || len(c.Choices) != 1 {
			t.Fatalf("MessagesResponseToChat(%s) = %s: %v", answer, chat, err)
		}
		msg := c.Choices[0].Message
		back, _ := json.Marshal(map[string]any{"messages": []any{map[string]any{"role": "user", "content": "q"}, msg}})
		body, err := msgconv.ChatRequestToMessages(nil, back, msgconv.RequestOptions{UpstreamModel: "c"})
		if err != nil {
			return // tool arguments that are not an object, and the like
		}
		if !rawjson.Valid(body) {
			t.Fatalf("ChatRequestToMessages(%s) = %s: invalid JSON", back, body)
		}
		blocks, _ := msg["thinking_blocks"].([]any)
		for _, b := range blocks {
			if sig, _ := b.(map[string]any)["signature"].(string); sig != "" {
				q, _ := json.Marshal(sig)
				if !strings.Contains(string(body), string(q)) {
					t.Fatalf("signature %s lost: %s", q, body)
				}
			}
		}
	})
}

// FuzzResponsesThinking: reasoning input items of any shape convert to a
// valid chat request or an error, never a panic.
func FuzzResponsesThinking(f *testing.F) {
	for _, s := range []string{
		`[{"role":"user","content":"q"},{"type":"reasoning","summary":[{"type":"summary_text","text":"a"},{"type":"summary_text","text":"\ud83d"}],"encrypted_content":"thinking:s"},{"type":"reasoning","encrypted_content":"redacted_thinking:d"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]`,
		`[{"type":"reasoning","encrypted_content":"thinking:"},{"role":"assistant","content":"a"}]`,
		`[{"type":"reasoning","content":[{"type":"reasoning_text","text":"x"}],"encrypted_content":"thinking:s"},{"role":"user","content":"u"},{"role":"assistant","content":"a"}]`,
		`[{"type":"reasoning","encrypted_content":7}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		body := append(append([]byte(`{"model":"m","input":`), input...), '}')
		out, err := respconv.ResponsesRequestToChat(nil, body, respconv.RequestOptions{})
		if err == nil && !rawjson.Valid(out) {
			t.Fatalf("ResponsesRequestToChat(%s) = %s: invalid JSON", body, out)
		}
	})
}
