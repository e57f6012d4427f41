package gemini

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestChatRequestToGemini(t *testing.T) {
	f := func(chat, want string) {
		t.Helper()
		got, err := ChatRequestToGemini(nil, []byte(chat))
		if err != nil {
			t.Fatalf("%s: %v", chat, err)
		}
		if !json.Valid(got) {
			t.Fatalf("invalid JSON: %s", got)
		}
		if string(got) != want {
			t.Fatalf("\nchat: %s\ngot:  %s\nwant: %s", chat, got, want)
		}
	}
	// Roles: system and developer anywhere → systemInstruction; adjacent
	// same-role turns merge.
	f(`{"messages":[{"role":"user","content":"a"},{"role":"developer","content":"d"},{"role":"user","content":[{"type":"text","text":"b"}]},{"role":"system","content":[{"type":"text","text":"s"}]}]}`,
		`{"contents":[{"role":"user","parts":[{"text":"a"},{"text":"b"}]}],"systemInstruction":{"parts":[{"text":"d"},{"text":"s"}]}}`)
	// Tool round trip with parallel calls; the thought signature rides in the id.
	f(`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"on it","tool_calls":[{"id":"call_a__thought__U0lH","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}},{"id":"b","type":"function","function":{"name":"g","arguments":""}}]},{"role":"tool","tool_call_id":"b","content":[{"type":"text","text":"two"}]},{"role":"tool","tool_call_id":"call_a__thought__U0lH","content":"{\"ok\":true}"}]}`,
		`{"contents":[{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"text":"on it"},{"functionCall":{"name":"f","args":{"x":1}},"thoughtSignature":"U0lH"},{"functionCall":{"name":"g","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"g","response":{"content":"two"}}},{"functionResponse":{"name":"f","response":{"ok":true}}}]}]}`)
	// Media.
	f(`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/"}},{"type":"image_url","image_url":{"url":"gs://b/x.PNG?v=1"}},{"type":"image_url","image_url":{"url":"https://h/i"}},{"type":"input_audio","input_audio":{"data":"UklG","format":"wav"}},{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBE"}}]}]}`,
		`{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"image/jpeg","data":"/9j/"}},{"fileData":{"mimeType":"image/png","fileUri":"gs://b/x.PNG?v=1"}},{"fileData":{"mimeType":"image/jpeg","fileUri":"https://h/i"}},{"inlineData":{"mimeType":"audio/wav","data":"UklG"}},{"inlineData":{"mimeType":"application/pdf","data":"JVBE"}}]}]}`)
	// Tools, tool_choice and generation settings.
	f(`{"messages":[{"role":"user","content":"q"}],"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"}}},{"type":"function","function":{"name":"g"}}],"tool_choice":{"type":"function","function":{"name":"g"}},"temperature":0.3,"top_p":0.9,"max_tokens":10,"max_completion_tokens":20,"stop":["a","b"],"seed":7,"presence_penalty":0.1,"frequency_penalty":0.2,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}},"reasoning_effort":"none","n":1,"user":"u"}`,
		`{"contents":[{"role":"user","parts":[{"text":"q"}]}],"tools":[{"functionDeclarations":[{"name":"f","description":"d","parametersJsonSchema":{"type":"object"}},{"name":"g"}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["g"]}},"generationConfig":{"temperature":0.3,"topP":0.9,"maxOutputTokens":20,"stopSequences":["a","b"],"seed":7,"presencePenalty":0.1,"frequencyPenalty":0.2,"responseMimeType":"application/json","responseJsonSchema":{"type":"object"},"thinkingConfig":{"thinkingBudget":0}}}`)
	f(`{"messages":[{"role":"user","content":"q"}],"tool_choice":"none","reasoning_effort":"high","response_format":{"type":"json_object"}}`,
		`{"contents":[{"role":"user","parts":[{"text":"q"}]}],"toolConfig":{"functionCallingConfig":{"mode":"NONE"}},"generationConfig":{"responseMimeType":"application/json","thinkingConfig":{"thinkingBudget":24576,"includeThoughts":true}}}`)
	// safetySettings have no chat field: the caller's array passes through.
	f(`{"messages":[{"role":"user","content":"q"}],"safety_settings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}],"temperature":0.1}`,
		`{"contents":[{"role":"user","parts":[{"text":"q"}]}],"generationConfig":{"temperature":0.1},"safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]}`)
	f(`{"messages":[{"role":"user","content":"q"}],"safetySettings":[],"safety_settings":null}`,
		`{"contents":[{"role":"user","parts":[{"text":"q"}]}],"safetySettings":[]}`)

	bad := func(chat string) {
		t.Helper()
		if _, err := ChatRequestToGemini(nil, []byte(chat)); !errors.Is(err, ErrInvalidRequest) {
			t.Fatalf("%s: err %v; want ErrInvalidRequest", chat, err)
		}
	}
	bad(`[]`)
	bad(`{"messages":{}}`)
	bad(`{"messages":[{"role":"tool","tool_call_id":"nope","content":"x"}]}`)
	bad(`{"messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"[1]"}}]}]}`)
	bad(`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,raw"}}]}]}`)
	bad(`{"messages":[{"role":"user","content":"q"}],"tools":[{"type":"web_search"}]}`)
	bad(`{"messages":[{"role":"user","content":"q"}],"reasoning_effort":"extreme"}`)
	bad(`{"messages":[{"role":"user","content":"q"}],"temperature":"hot"}`)
	bad(`{"messages":[{"role":"user","content":"q"}],"safety_settings":{"category":"x"}}`)
}

func TestResponseToChat(t *testing.T) {
	f := func(body, want string) {
		t.Helper()
		got, _, err := ResponseToChat(nil, []byte(body), []byte("alias"))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		// created varies: compare without it.
		g := string(got)
		i := strings.Index(g, `,"created":`)
		j := strings.Index(g, `,"model"`)
		if g[:i]+g[j:] != want {
			t.Fatalf("\ngot:  %s\nwant: %s", g[:i]+g[j:], want)
		}
	}
	f(`{"candidates":[{"content":{"role":"model","parts":[{"text":"plan","thought":true},{"text":"Hel"},{"text":"lo"}]},"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":3,"thoughtsTokenCount":4,"cachedContentTokenCount":6,"totalTokenCount":17},"responseId":"r1"}`,
		`{"id":"chatcmpl-r1","object":"chat.completion","model":"alias","choices":[{"index":0,"message":{"role":"assistant","content":"Hello","reasoning_content":"plan"},"finish_reason":"length","logprobs":null}],"usage":{"prompt_tokens":10,"completion_tokens":7,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":6},"completion_tokens_details":{"reasoning_tokens":4}}}`)
	f(`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":1},"id":"fc1"}}]},"finishReason":"STOP"}],"responseId":"r2"}`,
		`{"id":"chatcmpl-r2","object":"chat.completion","model":"alias","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"fc1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls","logprobs":null}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"prompt_tokens_details":{"cached_tokens":0}}}`)
	f(`{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":4,"totalTokenCount":4},"responseId":"r3"}`,
		`{"id":"chatcmpl-r3","object":"chat.completion","model":"alias","choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"content_filter","logprobs":null}],"usage":{"prompt_tokens":4,"completion_tokens":0,"total_tokens":4,"prompt_tokens_details":{"cached_tokens":0}}}`)

	_, _, err := ResponseToChat(nil, []byte(`{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}}`), nil)
	var ue *UpstreamError
	if !errors.As(err, &ue) || ue.Code != "rate_limit_exceeded" || ue.Message != "quota" {
		t.Fatalf("error envelope: %v", err)
	}
	if _, _, err := ResponseToChat(nil, []byte(`{"x":1}`), nil); !errors.Is(err, ErrInvalidResponse) {
		t.Fatalf("not a response: %v", err)
	}
}

func TestFinishReason(t *testing.T) {
	for r, want := range map[string]string{"STOP": "stop", "MAX_TOKENS": "length", "SAFETY": "content_filter", "RECITATION": "content_filter",
		"PROHIBITED_CONTENT": "content_filter", "MALFORMED_FUNCTION_CALL": "stop", "OTHER": "stop"} {
		if got := FinishReason([]byte(r), false); got != want {
			t.Fatalf("%s: %s; want %s", r, got, want)
		}
	}
	if FinishReason([]byte("STOP"), true) != "tool_calls" || FinishReason([]byte("SAFETY"), true) != "content_filter" {
		t.Fatal("tool calls")
	}
}
