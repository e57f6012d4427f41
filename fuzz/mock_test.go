package fuzz

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"gw/perf/mock"
	"gw/sse/rawjson"
)

// FuzzMockChatRequest: the mock's request reader never panics, keeps at most 16 tool
// names and, on valid JSON, agrees with mockChatRequestRef, the same rules written with
// encoding/json.
func FuzzMockChatRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m\"x","stream":true,"stream_options":{"include_usage":true},"messages":[1,2],"tools":[{"function":{"name":"a"}}]}`,
		`{"model":"m","messages":[1],"tools":[{"type":"custom","custom":{"name":"grep"}},{"function":{"name":""},"custom":{"name":"c"}},1]}`,
		`{"mod\u0065l":"a\u0062","messages":[1],"messages":[],"tools":[{"function":{"name":"x","name":"y"}}],"tools":[]}`,
		`{"model":7,"messages":[1],"model":"m"}`, `{"messages":"x","model":1}`,
		`{"model":"m","messages":[[[[{"a":"]"}]]]]}`, `{"model":"m","messages":{}}`, `{"model":"m","messages":[1 2]}`,
		`{"model":"m","messages":[1],"stream_options":null,"stream":true}`,
		`[]`, `{`, ``, `{"model":"m","messages":[1]}x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		info, err := mock.ParseChatRequest(body)
		if len(info.ToolNames()) > 16 {
			t.Fatalf("%q: %d tool names; want at most 16", body, len(info.ToolNames()))
		}
		if !json.Valid(body) || !rawjson.Valid(body) {
			return
		}
		want, wantErr := mockChatRequestRef(t, body)
		if err != wantErr {
			t.Fatalf("%q: got error %v; want %v", body, err, wantErr)
		}
		if err != nil {
			return
		}
		got := mockInfo{
			model:        mockUnquote(t, info.Model),
			stream:       info.Stream,
			includeUsage: info.IncludeUsage,
			hasTools:     info.HasTools,
			messages:     info.Messages,
		}
		for _, name := range info.ToolNames() {
			got.toolNames = append(got.toolNames, mockUnquote(t, name))
		}
		if !got.equal(want) {
			t.Fatalf("%q:\n got %+v\nwant %+v", body, got, want)
		}
	})
}

type mockInfo struct {
	model                          string
	stream, includeUsage, hasTools bool
	messages                       int
	toolNames                      []string
}

func (a mockInfo) equal(b mockInfo) bool {
	return slices.Equal(a.toolNames, b.toolNames) && a.model == b.model && a.stream == b.stream && a.includeUsage == b.includeUsage &&
		a.hasTools == b.hasTools && a.messages == b.messages
}

// mockChatRequestRef reads the valid JSON body with encoding/json by the rules of
// mock.ParseChatRequest: top-level members in order, the last of repeated members wins,
// a non-string model or a non-array messages fails at once.
func mockChatRequestRef(t *testing.T, body []byte) (mockInfo, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return mockInfo{}, mock.ErrBadJSON
	}
	var r mockInfo
	hasMessages := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("%q: encoding/json: %s", body, err)
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			t.Fatalf("%q: encoding/json: %s", body, err)
		}
		switch tok.(string) {
		case "model":
			if val[0] != '"' {
				return mockInfo{}, mock.ErrNoModel
			}
			r.model = mockUnquote(t, val[1:len(val)-1])
		case "stream":
			r.stream = string(val) == "true"
		case "stream_options":
			r.includeUsage = string(mockMember(t, val, "include_usage")) == "true"
		case "messages":
			if val[0] != '[' {
				return mockInfo{}, mock.ErrBadMessages
			}
			r.messages, hasMessages = len(mockElems(t, val)), true
		case "tools":
			r.hasTools, r.toolNames = false, nil
			if val[0] != '[' {
				break
			}
			for _, tool := range mockElems(t, val) {
				r.hasTools = true
				if len(r.toolNames) == 16 {
					break
				}
				name := mockMember(t, mockMember(t, tool, "function"), "name")
				if len(name) < 3 || name[0] != '"' {
					name = mockMember(t, mockMember(t, tool, "custom"), "name")
				}
				if len(name) >= 3 && name[0] == '"' {
					r.toolNames = append(r.toolNames, mockUnquote(t, name[1:len(name)-1]))
				}
			}
		}
	}
	switch {
	case r.model == "":
		return mockInfo{}, mock.ErrNoModel
	case !hasMessages:
		return mockInfo{}, mock.ErrNoMessages
	case r.messages == 0:
		return mockInfo{}, mock.ErrEmptyMessages
	}
	return r, nil
}

// mockMember returns member key of val if val is an object, the last one if repeated.
func mockMember(t *testing.T, val json.RawMessage, key string) json.RawMessage {
	if len(val) == 0 || val[0] != '{' {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(val, &m); err != nil {
		t.Fatalf("encoding/json: %s", err)
	}
	return m[key]
}

func mockElems(t *testing.T, arr json.RawMessage) []json.RawMessage {
	var elems []json.RawMessage
	if err := json.Unmarshal(arr, &elems); err != nil {
		t.Fatalf("encoding/json: %s", err)
	}
	return elems
}

// mockUnquote decodes the contents of a JSON string, escapes included.
func mockUnquote(t *testing.T, contents []byte) string {
	var s string
	if err := json.Unmarshal(append(append([]byte{'"'}, contents...), '"'), &s); err != nil {
		t.Fatalf("encoding/json cannot decode the string contents %q: %s", contents, err)
	}
	return s
}
