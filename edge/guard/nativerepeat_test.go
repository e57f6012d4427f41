package guard

import (
	"strings"
	"testing"
)

// TestNativeResponsesRepeatedText: the Responses events that repeat text
// never carry text that was not judged. Differing from the judged deltas,
// they are rewritten to them; carrying text no delta carried, that text is
// judged (blocked, masked or passed byte for byte).
func TestNativeResponsesRepeatedText(t *testing.T) {
	block := []*Stage{stage("kw", &wordChecker{word: "forbidden"}, nil)}
	mask := maskStage(nil)
	msgItem := func(seq, text string) nev {
		return nev{"response.output_item.done", `{"type":"response.output_item.done","sequence_number":` + seq + `,"output_index":0,"item":{"id":"i","type":"message","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"` + text + `"}]}}`}
	}
	completed := func(seq, text, args string) nev {
		return nev{"response.completed", `{"type":"response.completed","sequence_number":` + seq + `,"response":{"id":"r","output":[{"id":"i","type":"message","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"` + text + `"}]},{"id":"f","type":"function_call","name":"send","arguments":"` + args + `","call_id":"c"}]}}`}
	}
	created := nev{"response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"r","output":[]}}`}
	delta := nev{"response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":1,"item_id":"i","output_index":0,"content_index":0,"delta":"hello world"}`}
	cases := []struct {
		name   string
		stages []*Stage
		evs    []nev
		want   Decision
		out    []string // expected data of each released event ("" = as sent)
	}{
		{"matching done passes byte for byte", block,
			[]nev{created, delta,
				{"response.output_text.done", `{"type":"response.output_text.done","sequence_number":2,"output_index":0,"content_index":0,"text":"hello world"}`},
				msgItem("3", "hello world"), completed("4", "hello world", "{}")},
			Pass, []string{"", "", "", "", ""}},
		{"differing done rewritten to the judged deltas", block,
			[]nev{created, delta,
				{"response.output_text.done", `{"type":"response.output_text.done","sequence_number":2,"output_index":0,"content_index":0,"text":"hello forbidden world"}`},
				msgItem("3", "hello forbidden world")},
			Pass, []string{"", "",
				`{"type":"response.output_text.done","sequence_number":2,"output_index":0,"content_index":0,"text":"hello world"}`,
				`{"type":"response.output_item.done","sequence_number":3,"output_index":0,"item":{"id":"i","type":"message","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"hello world"}]}}`}},
		{"text only in final events: blocked", block,
			[]nev{created, msgItem("1", "say forbidden things")},
			Blocked, []string{""}},
		{"function arguments only in the final response: blocked", block,
			[]nev{created, completed("1", "fine", `{\"to\":\"forbidden\"}`)},
			Blocked, []string{""}},
		{"text only in final events: clean passes byte for byte", block,
			[]nev{created, msgItem("1", "all good"), completed("2", "all good", "{}")},
			Pass, []string{"", "", ""}},
		{"text only in final events: masked", mask,
			[]nev{created, msgItem("1", "say forbidden things"), completed("2", "say forbidden things", "{}")},
			Pass, []string{"",
				`{"type":"response.output_item.done","sequence_number":1,"output_index":0,"item":{"id":"i","type":"message","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"say [X] things"}]}}`,
				`{"type":"response.completed","sequence_number":2,"response":{"id":"r","output":[{"id":"i","type":"message","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"say [X] things"}]},{"id":"f","type":"function_call","name":"send","arguments":"{}","call_id":"c"}]}}`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, d, _ := runNative(t, NativeResponses, c.stages, c.evs)
			if d != c.want || len(out) != len(c.out) {
				t.Fatalf("decision %d, %d events %v; want %d, %d events", d, len(out), out, c.want, len(c.out))
			}
			for i, w := range c.out {
				if w == "" {
					w = c.evs[i].data
				}
				if out[i].data != w {
					t.Fatalf("event %d:\n%s\nwant\n%s", i, out[i].data, w)
				}
				if strings.Contains(out[i].data, "forbidden") {
					t.Fatalf("event %d carries the blocked word: %s", i, out[i].data)
				}
			}
		})
	}
}
