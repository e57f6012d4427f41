package respconv_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"gw/sse"
)

// transcript is what a caller reconstructs from a stream, in either format.
type transcript struct {
	Text      string
	Refusal   string
	Reasoning string
	Calls     []callRec
	Finish    string // chat finish_reason, or the Responses status (+ "/" + incomplete reason)
	Usage     map[string]int64
	ErrCode   string
	ErrMsg    string
}

type callRec struct {
	ID, Name, Args string
}

// checkResponses validates a Responses event stream written by gw and
// returns what a caller reconstructs from it. It checks: event name equals
// data.type; sequence_number counts from 0 by one; created and in_progress
// come first and one terminal event last; one item open at a time with
// consecutive output_index; every delta belongs to the open item; the
// deltas add up to each .done text and to the items of output_item.done;
// the final response's output equals the done items.
func checkResponses(tb testing.TB, out []byte, sizes []int) transcript {
	tb.Helper()
	if !bytes.HasSuffix(out, []byte("\n\n")) {
		tb.Fatalf("output does not end with a blank line:\n%s", out)
	}
	evs := parseSSE(tb, out, sizes)
	if len(evs) < 3 {
		tb.Fatalf("got %d events; want at least 3:\n%s", len(evs), out)
	}
	var tr transcript
	var doneItems []any
	openID, openIdx := "", int64(-1)
	nItems := int64(0)
	deltas := map[string]string{} // item/content key -> text
	for i, ev := range evs {
		m := obj(tb, ev.Data)
		typ := str(m["type"])
		if typ != ev.Name {
			tb.Fatalf("event %d: name %q but type %q", i, ev.Name, typ)
		}
		if seq, ok := m["sequence_number"].(json.Number); !ok || seq.String() != itoa(i) {
			tb.Fatalf("event %d (%s): sequence_number %v; want %d", i, typ, m["sequence_number"], i)
		}
		switch {
		case i == 0 && typ != "response.created", i == 1 && typ != "response.in_progress":
			tb.Fatalf("event %d is %s", i, typ)
		}
		terminal := typ == "response.completed" || typ == "response.incomplete" || typ == "response.failed"
		if terminal != (i == len(evs)-1) {
			tb.Fatalf("event %d (%s): terminal events must come exactly last", i, typ)
		}
		if typ == "response.created" || typ == "response.in_progress" {
			r := m["response"]
			if str(get(r, "status")) != "in_progress" || str(get(r, "object")) != "response" || !strings.HasPrefix(str(get(r, "id")), "resp_") {
				tb.Fatalf("bad %s response: %v", typ, r)
			}
			continue
		}
		if terminal {
			r := m["response"].(map[string]any)
			for _, k := range []string{"id", "object", "created_at", "model", "output", "parallel_tool_calls", "tool_choice", "tools", "temperature", "top_p", "error", "incomplete_details", "instructions", "metadata"} {
				if _, ok := r[k]; !ok {
					tb.Fatalf("%s response lacks %q", typ, k)
				}
			}
			tr.Finish = str(r["status"])
			if d := get(r, "incomplete_details", "reason"); d != nil {
				tr.Finish += "/" + str(d)
			}
			want := map[string]string{"response.completed": "completed", "response.incomplete": "incomplete", "response.failed": "failed"}[typ]
			if str(r["status"]) != want {
				tb.Fatalf("%s with status %v", typ, r["status"])
			}
			if e, ok := r["error"].(map[string]any); ok {
				tr.ErrCode, tr.ErrMsg = str(e["code"]), str(e["message"])
			}
			if u, ok := r["usage"].(map[string]any); ok {
				tr.Usage = map[string]int64{
					"input": num(u["input_tokens"]), "output": num(u["output_tokens"]), "total": num(u["total_tokens"]),
					"cached": num(get(u, "input_tokens_details", "cached_tokens")), "reasoning": num(get(u, "output_tokens_details", "reasoning_tokens")),
				}
			}
			output, _ := r["output"].([]any)
			if output == nil {
				output = []any{}
			}
			if doneItems == nil {
				doneItems = []any{}
			}
			if !reflect.DeepEqual(output, doneItems) {
				tb.Fatalf("final output differs from the done items:\n%v\n%v", output, doneItems)
			}
			if openID != "" {
				tb.Fatalf("item %s still open at %s", openID, typ)
			}
			continue
		}
		switch typ {
		case "response.output_item.added":
			if openID != "" {
				tb.Fatalf("event %d: item added while %s is open", i, openID)
			}
			if num(m["output_index"]) != nItems {
				tb.Fatalf("event %d: output_index %v; want %d", i, m["output_index"], nItems)
			}
			openID, openIdx = str(get(m, "item", "id")), nItems
			nItems++
			if openID == "" {
				tb.Fatalf("event %d: item without id", i)
			}
			continue
		case "response.output_item.done":
			item := m["item"].(map[string]any)
			if str(item["id"]) != openID || num(m["output_index"]) != openIdx {
				tb.Fatalf("event %d: done for %v while %s is open", i, item["id"], openID)
			}
			switch str(item["type"]) {
			case "message":
				for j, p := range item["content"].([]any) {
					k := openID + "/" + itoa(j)
					switch str(get(p, "type")) {
					case "output_text":
						if str(get(p, "text")) != deltas[k] {
							tb.Fatalf("message text %q; deltas %q", get(p, "text"), deltas[k])
						}
						tr.Text += deltas[k]
					case "refusal":
						if str(get(p, "refusal")) != deltas[k] {
							tb.Fatalf("refusal %q; deltas %q", get(p, "refusal"), deltas[k])
						}
						tr.Refusal += deltas[k]
					}
				}
			case "reasoning":
				s := str(get(item["summary"].([]any)[0], "text"))
				if s != deltas[openID+"/s"] {
					tb.Fatalf("summary %q; deltas %q", s, deltas[openID+"/s"])
				}
				tr.Reasoning += s
			case "function_call":
				if str(item["arguments"]) != deltas[openID+"/a"] {
					tb.Fatalf("arguments %q; deltas %q", item["arguments"], deltas[openID+"/a"])
				}
				if !strings.HasPrefix(openID, "fc_") || str(item["status"]) == "" {
					tb.Fatalf("bad function_call item %v", item)
				}
				tr.Calls = append(tr.Calls, callRec{ID: str(item["call_id"]), Name: str(item["name"]), Args: str(item["arguments"])})
			}
			doneItems = append(doneItems, item)
			openID = ""
			continue
		}
		// Everything else belongs to the open item.
		if str(m["item_id"]) != openID || num(m["output_index"]) != openIdx {
			tb.Fatalf("event %d (%s): item %v/%v but %s/%d is open", i, typ, m["item_id"], m["output_index"], openID, openIdx)
		}
		ck := openID + "/" + itoa(int(num(m["content_index"])))
		switch typ {
		case "response.output_text.delta", "response.refusal.delta":
			deltas[ck] += str(m["delta"])
		case "response.output_text.done":
			if str(m["text"]) != deltas[ck] {
				tb.Fatalf("output_text.done %q; deltas %q", m["text"], deltas[ck])
			}
		case "response.refusal.done":
			if str(m["refusal"]) != deltas[ck] {
				tb.Fatalf("refusal.done %q; deltas %q", m["refusal"], deltas[ck])
			}
		case "response.content_part.added":
			if t := str(get(m, "part", "text")) + str(get(m, "part", "refusal")); t != "" {
				tb.Fatalf("part added with text %q", t)
			}
		case "response.content_part.done":
			if t := str(get(m, "part", "text")) + str(get(m, "part", "refusal")); t != deltas[ck] {
				tb.Fatalf("content_part.done %q; deltas %q", t, deltas[ck])
			}
		case "response.reasoning_summary_text.delta":
			deltas[openID+"/s"] += str(m["delta"])
		case "response.reasoning_summary_text.done":
			if str(m["text"]) != deltas[openID+"/s"] {
				tb.Fatalf("summary done %q; deltas %q", m["text"], deltas[openID+"/s"])
			}
		case "response.reasoning_summary_part.added", "response.reasoning_summary_part.done":
		case "response.function_call_arguments.delta":
			deltas[openID+"/a"] += str(m["delta"])
		case "response.function_call_arguments.done":
			if str(m["arguments"]) != deltas[openID+"/a"] {
				tb.Fatalf("arguments.done %q; deltas %q", m["arguments"], deltas[openID+"/a"])
			}
		default:
			tb.Fatalf("unexpected event %s", typ)
		}
	}
	return tr
}

// checkChat validates a chat-completions stream written by gw and returns
// what a caller reconstructs: every event is an unnamed data event; chunks
// share id, created and model; the stream ends with [DONE] unless it ends
// with an error frame.
func checkChat(tb testing.TB, out []byte, sizes []int) transcript {
	tb.Helper()
	if !bytes.HasSuffix(out, []byte("\n\n")) {
		tb.Fatalf("output does not end with a blank line:\n%s", out)
	}
	evs := parseSSE(tb, out, sizes)
	var tr transcript
	var id string
	calls := map[int64]*callRec{}
	for i, ev := range evs {
		if ev.Name != "" {
			tb.Fatalf("event %d has a name %q", i, ev.Name)
		}
		last := i == len(evs)-1
		if sse.IsDone([]byte(ev.Data)) {
			if !last {
				tb.Fatalf("[DONE] at %d of %d", i, len(evs))
			}
			continue
		}
		m := obj(tb, ev.Data)
		if e, ok := m["error"].(map[string]any); ok {
			if !last {
				tb.Fatalf("error frame at %d of %d", i, len(evs))
			}
			tr.ErrCode, tr.ErrMsg = str(e["code"]), str(e["message"])
			if str(e["type"]) == "" {
				tb.Fatalf("error frame without type: %v", e)
			}
			continue
		}
		if last {
			tb.Fatalf("stream ends without [DONE] or an error frame")
		}
		if str(m["object"]) != "chat.completion.chunk" || !strings.HasPrefix(str(m["id"]), "chatcmpl-") {
			tb.Fatalf("bad chunk %v", m)
		}
		if id == "" {
			id = str(m["id"])
		} else if str(m["id"]) != id {
			tb.Fatalf("chunk id %v; want %s", m["id"], id)
		}
		if u, ok := m["usage"].(map[string]any); ok {
			tr.Usage = map[string]int64{
				"input": num(u["prompt_tokens"]), "output": num(u["completion_tokens"]), "total": num(u["total_tokens"]),
				"cached": num(get(u, "prompt_tokens_details", "cached_tokens")), "reasoning": num(get(u, "completion_tokens_details", "reasoning_tokens")),
			}
		}
		choices, _ := m["choices"].([]any)
		for _, c := range choices {
			d := get(c, "delta")
			tr.Text += str(get(d, "content"))
			tr.Refusal += str(get(d, "refusal"))
			tr.Reasoning += str(get(d, "reasoning_content"))
			if f := str(get(c, "finish_reason")); f != "" {
				if tr.Finish != "" {
					tb.Fatalf("two finish reasons")
				}
				tr.Finish = f
			}
			tcs, _ := get(d, "tool_calls").([]any)
			for _, tc := range tcs {
				k := num(get(tc, "index"))
				r := calls[k]
				if r == nil {
					r = &callRec{}
					calls[k] = r
				}
				if s := str(get(tc, "id")); s != "" {
					r.ID = s
				}
				r.Name += str(get(tc, "function", "name"))
				r.Args += str(get(tc, "function", "arguments"))
			}
		}
	}
	keys := make([]int64, 0, len(calls))
	for k := range calls {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool { return keys[a] < keys[b] })
	for _, k := range keys {
		tr.Calls = append(tr.Calls, *calls[k])
	}
	return tr
}

// sourceResponses reconstructs a recorded Responses stream directly.
func sourceResponses(tb testing.TB, stream []byte) transcript {
	tb.Helper()
	var tr transcript
	calls := map[string]*callRec{}
	var order []string
	for _, ev := range parseSSE(tb, stream, nil) {
		m := obj(tb, ev.Data)
		switch str(m["type"]) {
		case "response.output_text.delta":
			tr.Text += str(m["delta"])
		case "response.reasoning_summary_text.delta":
			tr.Reasoning += str(m["delta"])
		case "response.output_item.added":
			if str(get(m, "item", "type")) == "function_call" {
				id := str(get(m, "item", "id"))
				calls[id] = &callRec{ID: str(get(m, "item", "call_id")), Name: str(get(m, "item", "name"))}
				order = append(order, id)
			}
		case "response.function_call_arguments.delta":
			calls[str(m["item_id"])].Args += str(m["delta"])
		case "response.completed", "response.incomplete":
			u := get(m, "response", "usage")
			tr.Usage = map[string]int64{
				"input": num(get(u, "input_tokens")), "output": num(get(u, "output_tokens")), "total": num(get(u, "total_tokens")),
				"cached": num(get(u, "input_tokens_details", "cached_tokens")), "reasoning": num(get(u, "output_tokens_details", "reasoning_tokens")),
			}
		}
	}
	for _, id := range order {
		tr.Calls = append(tr.Calls, *calls[id])
	}
	return tr
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
