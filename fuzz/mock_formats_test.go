package fuzz

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"testing"

	"gw/perf/mock"
	"gw/sse/rawjson"
)

// FuzzMockMessagesRequest: the mock's Anthropic Messages and count_tokens request readers
// never panic, keep at most 16 tool names and, on valid JSON, agree with
// mockMessagesRequestRef, the same rules written with encoding/json.
func FuzzMockMessagesRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m\"x","max_tokens":1,"stream":true,"messages":[1,2],"tools":[{"name":"a","input_schema":{}}]}`,
		`{"model":"m","max_tokens":5,"messages":[1],"tools":[{"type":"web_search_20250305","name":"web_search"},{"name":""},{"name":7},1]}`,
		`{"mod\u0065l":"a\u0062","max_tokens":1,"max_tokens":2,"messages":[1],"messages":[],"tools":[{"name":"x","name":"y"}],"tools":[]}`,
		`{"model":7,"max_tokens":1,"messages":[1],"model":"m"}`, `{"messages":"x","model":1}`, `{"max_tokens":0,"messages":"x"}`,
		`{"model":"m","max_tokens":1.0,"messages":[1]}`, `{"model":"m","max_tokens":-0,"messages":[1]}`,
		`{"model":"m","max_tokens":9223372036854775808,"messages":[1]}`, `{"model":"m","max_tokens":"1","messages":[1]}`,
		`{"model":"m","messages":[1]}`, `{"model":"m","max_tokens":1,"messages":[[[[{"a":"]"}]]]]}`,
		`{"model":"m","max_tokens":1,"messages":{}}`, `{"model":"m","max_tokens":1,"messages":[1 2]}`,
		`[]`, `{`, ``, `{"model":"m","max_tokens":1,"messages":[1]}x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, countTokens := range []bool{false, true} {
			parse := mock.ParseMessagesRequest
			if countTokens {
				parse = mock.ParseCountTokensRequest
			}
			info, err := parse(body)
			if len(info.ToolNames()) > 16 {
				t.Fatalf("%q: %d tool names; want at most 16", body, len(info.ToolNames()))
			}
			if !json.Valid(body) || !rawjson.Valid(body) {
				continue
			}
			want, wantErr := mockMessagesRequestRef(t, body, countTokens)
			if err != wantErr {
				t.Fatalf("%q (count_tokens %v): got error %v; want %v", body, countTokens, err, wantErr)
			}
			if err != nil {
				continue
			}
			got := mockFormatInfo{
				model:     mockUnquote(t, info.Model),
				stream:    info.Stream,
				maxTokens: info.MaxTokens,
				items:     info.Messages,
				hasTools:  info.HasTools,
				toolNames: mockNames(t, info.ToolNames()),
			}
			if !got.equal(want) {
				t.Fatalf("%q (count_tokens %v):\n got %+v\nwant %+v", body, countTokens, got, want)
			}
		}
	})
}

// FuzzMockResponsesRequest: the mock's Responses request reader never panics, keeps at
// most 16 tool names and, on valid JSON, agrees with mockResponsesRequestRef.
func FuzzMockResponsesRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"gpt-4.1","input":"hi"}`,
		`{"model":"gpt-5","stream":true,"input":[{"role":"user","content":"x"},{"type":"function_call_output","call_id":"c","output":"{}"}]}`,
		`{"model":"m","tools":[{"type":"web_search"},{"type":"custom","name":"grep"},{"type":"function","name":"f"},{"name":""},1]}`,
		`{"\u006dodel":"x","model":"m\\n","input":"a","input":[1,2],"stream":true,"stream":1,"tools":[{"name":"a"}],"tools":{}}`,
		`{"model":7,"input":"x","model":"m"}`, `{"input":7,"model":1}`, `{"model":"m","input":null}`,
		`{"model":"m","input":{}}`, `{"model":"m","input":[1 2]}`, `{"model":"m","input":[]}`, `{"model":"","input":"x"}`,
		`[]`, `{`, ``, `{"model":"m"}x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		info, err := mock.ParseResponsesRequest(body)
		if len(info.ToolNames()) > 16 {
			t.Fatalf("%q: %d tool names; want at most 16", body, len(info.ToolNames()))
		}
		if !json.Valid(body) || !rawjson.Valid(body) {
			return
		}
		want, wantErr := mockResponsesRequestRef(t, body)
		if err != wantErr {
			t.Fatalf("%q: got error %v; want %v", body, err, wantErr)
		}
		if err != nil {
			return
		}
		got := mockFormatInfo{
			model:     mockUnquote(t, info.Model),
			stream:    info.Stream,
			items:     info.Input,
			hasTools:  info.HasTools,
			toolNames: mockNames(t, info.ToolNames()),
		}
		if !got.equal(want) {
			t.Fatalf("%q:\n got %+v\nwant %+v", body, got, want)
		}
	})
}

// mockFormatInfo is what the Messages and Responses readers report; items counts messages
// (Anthropic) or input items (Responses).
type mockFormatInfo struct {
	model     string
	stream    bool
	maxTokens int64
	items     int
	hasTools  bool
	toolNames []string
}

func (a mockFormatInfo) equal(b mockFormatInfo) bool {
	return slices.Equal(a.toolNames, b.toolNames) && a.model == b.model && a.stream == b.stream &&
		a.maxTokens == b.maxTokens && a.items == b.items && a.hasTools == b.hasTools
}

func mockNames(t *testing.T, names [][]byte) []string {
	var out []string
	for _, name := range names {
		out = append(out, mockUnquote(t, name))
	}
	return out
}

// mockMembers calls fn for the top-level members of the valid JSON body in order,
// duplicates included, until fn returns false. It reports false if body is not an object.
func mockMembers(t *testing.T, body []byte, fn func(key string, val json.RawMessage) bool) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("%q: encoding/json: %s", body, err)
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			t.Fatalf("%q: encoding/json: %s", body, err)
		}
		if !fn(tok.(string), val) {
			break
		}
	}
	return true
}

// mockNamedTools reads a tools value as the mock does: whether it is an array with an
// element, and the first 16 non-empty string "name" members of its elements.
func mockNamedTools(t *testing.T, val json.RawMessage) (bool, []string) {
	if val[0] != '[' {
		return false, nil
	}
	has := false
	var names []string
	for _, tool := range mockElems(t, val) {
		has = true
		if len(names) == 16 {
			break
		}
		if name := mockMember(t, tool, "name"); len(name) >= 3 && name[0] == '"' {
			names = append(names, mockUnquote(t, name[1:len(name)-1]))
		}
	}
	return has, names
}

// mockMessagesRequestRef reads the valid JSON body with encoding/json by the rules of
// mock.ParseMessagesRequest (countTokens false) or mock.ParseCountTokensRequest: members
// in order, the last of repeated members wins, a non-string model, a max_tokens that is
// not an integer >= 1 or a non-array messages fails at once.
func mockMessagesRequestRef(t *testing.T, body []byte, countTokens bool) (mockFormatInfo, error) {
	var r mockFormatInfo
	var bad error
	hasMaxTokens, hasMessages := false, false
	if !mockMembers(t, body, func(key string, val json.RawMessage) bool {
		switch key {
		case "model":
			if val[0] != '"' {
				bad = mock.ErrMessagesNoModel
				return false
			}
			r.model = mockUnquote(t, val[1:len(val)-1])
		case "max_tokens":
			if countTokens {
				break
			}
			n, err := strconv.ParseInt(string(val), 10, 64) // JSON has no leading '+' or zeros
			if err != nil || n < 1 {
				bad = mock.ErrMessagesBadMaxTokens
				return false
			}
			r.maxTokens, hasMaxTokens = n, true
		case "messages":
			if val[0] != '[' {
				bad = mock.ErrMessagesBadMessages
				return false
			}
			r.items, hasMessages = len(mockElems(t, val)), true
		case "stream":
			if !countTokens {
				r.stream = string(val) == "true"
			}
		case "tools":
			r.hasTools, r.toolNames = mockNamedTools(t, val)
		}
		return true
	}) {
		return mockFormatInfo{}, mock.ErrMessagesBadJSON
	}
	switch {
	case bad != nil:
		return mockFormatInfo{}, bad
	case r.model == "":
		return mockFormatInfo{}, mock.ErrMessagesNoModel
	case !countTokens && !hasMaxTokens:
		return mockFormatInfo{}, mock.ErrMessagesNoMaxTokens
	case !hasMessages:
		return mockFormatInfo{}, mock.ErrMessagesNoMessages
	case r.items == 0:
		return mockFormatInfo{}, mock.ErrMessagesEmpty
	}
	return r, nil
}

// mockResponsesRequestRef reads the valid JSON body with encoding/json by the rules of
// mock.ParseResponsesRequest: members in order, the last of repeated members wins, a
// non-string model or an input that is neither a string nor an array fails at once.
func mockResponsesRequestRef(t *testing.T, body []byte) (mockFormatInfo, error) {
	var r mockFormatInfo
	var bad error
	if !mockMembers(t, body, func(key string, val json.RawMessage) bool {
		switch key {
		case "model":
			if val[0] != '"' {
				bad = mock.ErrResponsesNoModel
				return false
			}
			r.model = mockUnquote(t, val[1:len(val)-1])
		case "stream":
			r.stream = string(val) == "true"
		case "input":
			switch val[0] {
			case '"':
				r.items = 1
			case '[':
				r.items = len(mockElems(t, val))
			default:
				bad = mock.ErrResponsesBadInput
				return false
			}
		case "tools":
			r.hasTools, r.toolNames = mockNamedTools(t, val)
		}
		return true
	}) {
		return mockFormatInfo{}, mock.ErrBadJSON
	}
	switch {
	case bad != nil:
		return mockFormatInfo{}, bad
	case r.model == "":
		return mockFormatInfo{}, mock.ErrResponsesNoModel
	}
	return r, nil
}
