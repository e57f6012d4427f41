package mock_test

import (
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Helpers for the named-event formats (Anthropic Messages, OpenAI Responses): parsing
// streams and fixtures, and comparing their structure.

// event is one event of a named-event stream, or one line of a .jsonl fixture.
type event struct {
	name string // the event: line; for .jsonl fixtures the data's type
	data string
	m    map[string]any
}

func (e event) typ() string { return e.m["type"].(string) }

// namedEvents parses an SSE body whose events are "event: <type>\ndata: <json>", the
// event name equal to the JSON type, as Anthropic and the Responses API send them.
func namedEvents(t testing.TB, body []byte) []event {
	t.Helper()
	var out []event
	for _, block := range strings.Split(string(body), "\n\n") {
		if block = strings.TrimSpace(block); block == "" {
			continue
		}
		name, data, ok := strings.Cut(block, "\n")
		name, ok1 := strings.CutPrefix(name, "event: ")
		data, ok2 := strings.CutPrefix(data, "data: ")
		if !ok || !ok1 || !ok2 || strings.Contains(data, "\n") {
			t.Fatalf("event %q is not an event: line and one data: line", block)
		}
		m := object(t, data)
		if typ, _ := m["type"].(string); typ != name {
			t.Fatalf("event %q: its data has type %q", name, m["type"])
		}
		out = append(out, event{name: name, data: data, m: m})
	}
	return out
}

// fixtureEvents reads a testdata fixture: an SSE file or a .jsonl file of event data.
func fixtureEvents(t testing.TB, name string) []event {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatalf("cannot read fixture: %s", err)
	}
	if !strings.HasSuffix(name, ".jsonl") {
		return namedEvents(t, b)
	}
	var out []event
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			m := object(t, line)
			out = append(out, event{name: m["type"].(string), data: line, m: m})
		}
	}
	return out
}

// splitStreams splits concatenated Responses streams where sequence_number restarts at 0.
func splitStreams(evs []event) [][]event {
	var out [][]event
	for i, e := range evs {
		if i == 0 || jsonString(e.m["sequence_number"]) == "0" {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], e)
	}
	return out
}

// kindOf is an event's type, with the type of its content block, delta or item:
// content_block_start/tool_use, response.output_item.added/function_call.
func kindOf(m map[string]any) string {
	k := m["type"].(string)
	for _, key := range []string{"content_block", "delta", "item"} {
		if sub, ok := m[key].(map[string]any); ok {
			if typ, ok := sub["type"].(string); ok {
				k += "/" + typ
			}
		}
	}
	return k
}

// shape is the sequence of event kinds, runs of one kind collapsed, without the types in drop.
func shape(evs []event, drop ...string) []string {
	var out []string
	for _, e := range evs {
		if slices.Contains(drop, e.typ()) {
			continue
		}
		k := kindOf(e.m)
		if len(out) == 0 || out[len(out)-1] != k {
			out = append(out, k)
		}
	}
	return out
}

func checkShape(t *testing.T, what string, got, want []event, drop ...string) {
	t.Helper()
	g, w := shape(got, drop...), shape(want, drop...)
	if !slices.Equal(g, w) {
		t.Fatalf("%s: event sequence differs from the fixture\ngot:\n  %s\nwant:\n  %s", what,
			strings.Join(g, "\n  "), strings.Join(w, "\n  "))
	}
}

// Members whose contents are the caller's (tool schemas, tool input, metadata): their
// keys are not compared.
var opaqueMembers = map[string]bool{"input": true, "tools": true, "metadata": true, "parameters": true}

// keyPaths collects the paths of every member of v: ".message.usage.input_tokens",
// ".response.output[].content[].text". Padding (obfuscation) is left out.
func keyPaths(v any, prefix string, out map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if k == "obfuscation" {
				continue
			}
			p := prefix + "." + k
			out[p] = true
			if !opaqueMembers[k] {
				keyPaths(x, p, out)
			}
		}
	case []any:
		for _, x := range v {
			keyPaths(x, prefix+"[]", out)
		}
	}
}

// fieldSets holds, per event kind, the member paths every recorded event of that kind
// has (all) and those any of them has (any). The members of the Responses response
// object are pooled across the lifecycle events under the kind "(response)".
type fieldSets struct {
	all, any map[string]map[string]bool
}

const responseKind = "(response)"

func eventPaths(m map[string]any) map[string]map[string]bool {
	paths := map[string]bool{}
	keyPaths(m, "", paths)
	out := map[string]map[string]bool{kindOf(m): {}}
	for p := range paths {
		k := kindOf(m)
		if strings.HasPrefix(p, ".response.") && strings.Count(p, ".") == 2 {
			k = responseKind
		}
		if out[k] == nil {
			out[k] = map[string]bool{}
		}
		out[k][p] = true
	}
	return out
}

func newFieldSets(evs []event) *fieldSets {
	f := &fieldSets{all: map[string]map[string]bool{}, any: map[string]map[string]bool{}}
	for _, e := range evs {
		for kind, paths := range eventPaths(e.m) {
			if f.all[kind] == nil {
				f.all[kind], f.any[kind] = maps(paths), map[string]bool{}
			}
			for p := range f.all[kind] {
				if !paths[p] {
					delete(f.all[kind], p)
				}
			}
			for p := range paths {
				f.any[kind][p] = true
			}
		}
	}
	return f
}

func maps[V any](m map[string]V) map[string]V {
	c := make(map[string]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// check requires each event to be of a recorded kind, to have every member all recorded
// events of its kind have, and no member none of them has. Kinds in unrecorded are
// skipped.
func (f *fieldSets) check(t *testing.T, what string, evs []event, unrecorded ...string) {
	t.Helper()
	for _, e := range evs {
		if slices.Contains(unrecorded, e.typ()) {
			continue
		}
		for kind, paths := range eventPaths(e.m) {
			if f.any[kind] == nil {
				t.Fatalf("%s: event kind %s is not in the fixtures: %s", what, kind, e.data)
			}
			var missing, extra []string
			for p := range f.all[kind] {
				if !paths[p] {
					missing = append(missing, p)
				}
			}
			for p := range paths {
				if !f.any[kind][p] {
					extra = append(extra, p)
				}
			}
			if len(missing)+len(extra) > 0 {
				sort.Strings(missing)
				sort.Strings(extra)
				t.Fatalf("%s: %s lacks %q and has unrecorded %q: %s", what, kind, missing, extra, e.data)
			}
		}
	}
}

func num(t testing.TB, v any) int {
	t.Helper()
	n, err := strconv.Atoi(jsonString(v))
	if err != nil {
		t.Fatalf("%v is not an integer", v)
	}
	return n
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// anthropicStream is what checkAnthropicStream gathers from a stream.
type anthropicStream struct {
	message    map[string]any   // message_start's message
	blocks     []map[string]any // content_block of each content_block_start
	text       map[int]string   // text_delta concatenated per block
	partial    map[int]string   // partial_json concatenated per block
	firstJSON  map[int]string   // the first partial_json of each block
	stopped    int              // content_block_stop events
	stopReason string           // message_delta's
	usage      map[string]any   // message_delta's
	pings      int
	end        string         // the last event if it ends the stream: message_stop or error
	errorEvent map[string]any // the error event
}

// checkAnthropicStream checks the grammar of a Messages stream (protocols.md §3.4):
// message_start first, one content block open at a time with indexes 0, 1, 2..., deltas
// on the open block, message_delta with every block closed, then message_stop; ping
// anywhere; error ends the stream.
func checkAnthropicStream(t *testing.T, what string, evs []event) anthropicStream {
	t.Helper()
	s := anthropicStream{text: map[int]string{}, partial: map[int]string{}, firstJSON: map[int]string{}}
	open := -1
	for i, e := range evs {
		if s.end != "" {
			t.Fatalf("%s: event %s after %s", what, e.data, s.end)
		}
		if (i == 0) != (e.typ() == "message_start") {
			t.Fatalf("%s: event %d is %s; message_start comes first and once", what, i, e.typ())
		}
		switch e.typ() {
		case "message_start":
			s.message = obj(e.m["message"])
		case "content_block_start":
			if idx := num(t, e.m["index"]); open != -1 || idx != len(s.blocks) || s.usage != nil {
				t.Fatalf("%s: block %d starts while block %d is open, or out of order: %s", what, idx, open, e.data)
			}
			open = len(s.blocks)
			s.blocks = append(s.blocks, obj(e.m["content_block"]))
		case "content_block_delta":
			if idx := num(t, e.m["index"]); idx != open {
				t.Fatalf("%s: delta for block %d while block %d is open: %s", what, idx, open, e.data)
			}
			d := obj(e.m["delta"])
			switch str(d["type"]) {
			case "text_delta":
				s.text[open] += str(d["text"])
			case "input_json_delta":
				if _, ok := s.firstJSON[open]; !ok {
					s.firstJSON[open] = str(d["partial_json"])
				}
				s.partial[open] += str(d["partial_json"])
			case "thinking_delta", "signature_delta":
			default:
				t.Fatalf("%s: unknown delta: %s", what, e.data)
			}
		case "content_block_stop":
			if idx := num(t, e.m["index"]); idx != open {
				t.Fatalf("%s: stop for block %d while block %d is open: %s", what, idx, open, e.data)
			}
			open = -1
			s.stopped++
		case "message_delta":
			if open != -1 || s.usage != nil {
				t.Fatalf("%s: message_delta with block %d open, or twice: %s", what, open, e.data)
			}
			s.stopReason = str(obj(e.m["delta"])["stop_reason"])
			s.usage = obj(e.m["usage"])
		case "message_stop":
			if s.usage == nil {
				t.Fatalf("%s: message_stop before message_delta", what)
			}
			s.end = "message_stop"
		case "ping":
			s.pings++
		case "error":
			s.end, s.errorEvent = "error", e.m
		default:
			t.Fatalf("%s: unknown event %s", what, e.data)
		}
	}
	return s
}

// responsesStream is what checkResponsesStream gathers from a stream.
type responsesStream struct {
	items      []map[string]any // the items of response.output_item.done
	text       string           // output_text deltas, concatenated
	args       map[int]string   // function_call_arguments deltas per output_index
	response   map[string]any   // the response of the last lifecycle event
	end        string           // response.completed or response.failed, if the stream ended so
	errorEvent map[string]any   // the error event
}

// checkResponsesStream checks the grammar of a Responses stream (protocols.md §2.3):
// sequence_number 0, 1, 2...; response.created then response.in_progress; one item open
// at a time with output_index 0, 1, 2...; part, text and argument events on the open item
// whose done events repeat what the deltas carried; response.completed with the done
// items as output, or an error event then response.failed.
func checkResponsesStream(t *testing.T, what string, evs []event) responsesStream {
	t.Helper()
	s := responsesStream{args: map[int]string{}}
	open, openID := -1, ""
	var text, args string
	for i, e := range evs {
		if s.end != "" {
			t.Fatalf("%s: event %s after %s", what, e.data, s.end)
		}
		if n := num(t, e.m["sequence_number"]); n != i {
			t.Fatalf("%s: event %d has sequence_number %d: %s", what, i, n, e.data)
		}
		onOpen := func() {
			t.Helper()
			if str(e.m["item_id"]) != openID || num(t, e.m["output_index"]) != open {
				t.Fatalf("%s: event for item %v/%v while item %s/%d is open: %s", what,
					e.m["item_id"], e.m["output_index"], openID, open, e.data)
			}
		}
		switch typ := e.typ(); typ {
		case "response.created", "response.in_progress":
			if want := map[string]int{"response.created": 0, "response.in_progress": 1}[typ]; i != want {
				t.Fatalf("%s: %s is event %d; want %d", what, typ, i, want)
			}
			s.response = obj(e.m["response"])
			if str(s.response["status"]) != "in_progress" || len(s.response["output"].([]any)) != 0 {
				t.Fatalf("%s: %s must be in progress with no output: %s", what, typ, e.data)
			}
		case "response.output_item.added":
			item := obj(e.m["item"])
			if idx := num(t, e.m["output_index"]); open != -1 || idx != len(s.items) || (item["status"] != nil && item["status"] != "in_progress") {
				t.Fatalf("%s: item %d added while item %d is open, out of order or not in progress: %s", what, idx, open, e.data)
			}
			if str(item["type"]) == "function_call" && item["arguments"] != "" {
				t.Fatalf("%s: function_call added with arguments: %s", what, e.data)
			}
			open, openID, text, args = len(s.items), str(item["id"]), "", ""
		case "response.content_part.added":
			onOpen()
			if str(obj(e.m["part"])["text"]) != "" {
				t.Fatalf("%s: part added with text: %s", what, e.data)
			}
		case "response.output_text.delta":
			onOpen()
			text += str(e.m["delta"])
			s.text += str(e.m["delta"])
		case "response.output_text.done":
			onOpen()
			if str(e.m["text"]) != text {
				t.Fatalf("%s: text done %q; deltas made %q", what, e.m["text"], text)
			}
		case "response.content_part.done":
			onOpen()
			if str(obj(e.m["part"])["text"]) != text {
				t.Fatalf("%s: part done with %q; deltas made %q", what, obj(e.m["part"])["text"], text)
			}
		case "response.function_call_arguments.delta":
			onOpen()
			args += str(e.m["delta"])
			s.args[open] += str(e.m["delta"])
		case "response.function_call_arguments.done":
			onOpen()
			if str(e.m["arguments"]) != args {
				t.Fatalf("%s: arguments done %q; deltas made %q", what, e.m["arguments"], args)
			}
		case "response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
			"response.reasoning_summary_text.done", "response.reasoning_summary_part.done":
			onOpen()
		case "response.output_item.done":
			item := obj(e.m["item"])
			if num(t, e.m["output_index"]) != open || str(item["id"]) != openID || str(item["status"]) == "in_progress" {
				t.Fatalf("%s: item done is not the open item %s/%d, or in progress: %s", what, openID, open, e.data)
			}
			switch str(item["type"]) {
			case "message":
				if content := item["content"].([]any); len(content) != 1 || str(obj(content[0])["text"]) != text {
					t.Fatalf("%s: message done without the streamed text %q: %s", what, text, e.data)
				}
			case "function_call":
				if str(item["arguments"]) != args {
					t.Fatalf("%s: function_call done without the streamed arguments %q: %s", what, args, e.data)
				}
			}
			s.items = append(s.items, item)
			open, openID = -1, ""
		case "response.completed":
			s.response, s.end = obj(e.m["response"]), typ
			output, _ := s.response["output"].([]any)
			if open != -1 || str(s.response["status"]) != "completed" || s.response["usage"] == nil || len(output) != len(s.items) {
				t.Fatalf("%s: completed with item %d open, a status other than completed, no usage or not the %d items: %s",
					what, open, len(s.items), e.data)
			}
			for j, item := range output {
				// Reasoning is encrypted anew for each event.
				a, b := maps(obj(item)), maps(s.items[j])
				delete(a, "encrypted_content")
				delete(b, "encrypted_content")
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("%s: output[%d] of response.completed differs from its output_item.done:\n%v\n%v", what, j, a, b)
				}
			}
		case "error":
			s.errorEvent = e.m
		case "response.failed":
			s.response, s.end = obj(e.m["response"]), typ
			if str(s.response["status"]) != "failed" || s.response["error"] == nil {
				t.Fatalf("%s: failed without status failed and an error: %s", what, e.data)
			}
		default:
			t.Fatalf("%s: unknown event %s", what, e.data)
		}
	}
	return s
}
