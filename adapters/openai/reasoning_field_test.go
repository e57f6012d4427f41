package openai

import "testing"

func TestReasoningField(t *testing.T) {
	for in, want := range map[string]string{
		"": "", "reasoning": "reasoning", "choices[].message.reasoning": "reasoning", "delta.thinking": "thinking",
		"reasoning_content": "", "message.reasoning_content": "",
	} {
		if got := ReasoningField(in); got != want {
			t.Errorf("ReasoningField(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestRenameReasoning(t *testing.T) {
	f := func(name, body, field, want string) {
		t.Helper()
		out, ok := RenameReasoning([]byte("pre"), []byte(body), field)
		if want == "" {
			if ok || string(out) != "pre" {
				t.Fatalf("%s: changed: %s", name, out)
			}
			return
		}
		if !ok || string(out) != "pre"+want {
			t.Fatalf("%s:\n got %s (%v)\nwant pre%s", name, out, ok, want)
		}
	}
	f("buffered", `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"a","reasoning":"r"}}]}`, "reasoning",
		`{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"a","reasoning_content":"r"}}]}`)
	f("chunk", `{"choices":[{"index":0,"delta":{"thinking":"r"},"finish_reason":null}]}`, "thinking",
		`{"choices":[{"index":0,"delta":{"reasoning_content":"r"},"finish_reason":null}]}`)
	f("second choice only", `{"choices":[{"index":0,"delta":{"content":"c"}},{"index":1,"delta":{"reasoning":"r"}}]}`, "reasoning",
		`{"choices":[{"index":0,"delta":{"content":"c"}},{"index":1,"delta":{"reasoning_content":"r"}}]}`)
	f("the field wins over a reasoning_content already there", `{"choices":[{"delta":{"reasoning_content":"old","reasoning":"new"}}]}`, "reasoning",
		`{"choices":[{"delta":{"reasoning_content":"new"}}]}`)
	f("absent", `{"choices":[{"delta":{"content":"c"}}]}`, "reasoning", "")
	f("usage chunk", `{"choices":[],"usage":{"total_tokens":1}}`, "reasoning", "")
	f("not an answer", `[1]`, "reasoning", "")
	f("no field", `{"choices":[{"delta":{"reasoning":"r"}}]}`, "", "")
}
