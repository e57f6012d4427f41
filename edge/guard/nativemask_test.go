package guard

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"gw/admin/resources"
)

// msgText checks that out has the events of in, in order, each valid JSON
// with every field but the delta's text unchanged, and returns the
// concatenated text of the text and tool-input deltas.
func msgText(t *testing.T, in, out []nev) string {
	t.Helper()
	if len(out) != len(in) {
		t.Fatalf("%d events released; want %d: %v", len(out), len(in), out)
	}
	var b strings.Builder
	for i := range out {
		if out[i].name != in[i].name {
			t.Fatalf("event %d is %q; want %q", i, out[i].name, in[i].name)
		}
		var got, want map[string]any
		if err := json.Unmarshal([]byte(out[i].data), &got); err != nil {
			t.Fatalf("event %d invalid JSON %q: %v", i, out[i].data, err)
		}
		if err := json.Unmarshal([]byte(in[i].data), &want); err != nil {
			t.Fatal(err)
		}
		gd, _ := got["delta"].(map[string]any)
		wd, _ := want["delta"].(map[string]any)
		for _, f := range []string{"text", "partial_json", "delta"} {
			if v, ok := gd[f].(string); ok {
				b.WriteString(v)
				delete(gd, f)
				delete(wd, f)
			}
			if v, ok := got[f].(string); ok && out[i].name != "" && strings.HasSuffix(out[i].name, ".delta") {
				b.WriteString(v)
				delete(got, f)
				delete(want, f)
			}
		}
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		if string(gj) != string(wj) {
			t.Fatalf("event %d changed beyond its text: %s; want %s", i, gj, wj)
		}
	}
	return b.String()
}

func maskStage(mut func(g *resources.Guardrail)) []*Stage {
	return []*Stage{stage("pii", &wordChecker{word: "forbidden", mask: true}, mut)}
}

func smallWindow(g *resources.Guardrail) {
	g.Stream = &resources.StreamControls{Mode: resources.StreamModeWindow, WindowSize: 16, WindowOverlapSize: 10}
}

// TestNativeMessagesMask: a mask split across deltas (and across windows)
// is released masked, in the deltas' own events; text and tool input.
func TestNativeMessagesMask(t *testing.T) {
	tool := func(s string) nev {
		return nev{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"` + s + `"}}`}
	}
	evs := []nev{
		{"message_start", `{"type":"message_start","message":{"id":"m","content":[]}}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		msgDelta("a long preamble so that windows slide, forb"), {"ping", `{"type":"ping"}`}, msgDelta("idd"), msgDelta("en and \\\"more\\\" text after it, forbidden again"),
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"send","input":{}}}`},
		tool(`{\"to\":\"forb`), tool(`idden\",`), tool(`\"n\":1}`),
		{"content_block_stop", `{"type":"content_block_stop","index":1}`},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}`},
		{"message_stop", `{"type":"message_stop"}`},
	}
	const want = `a long preamble so that windows slide, [X] and "more" text after it, [X] again{"to":"[X]","n":1}`
	for _, tc := range []struct {
		name string
		mut  func(g *resources.Guardrail)
	}{{"default window", nil}, {"small window", smallWindow}, {"buffer_full", func(g *resources.Guardrail) {
		g.Stream = &resources.StreamControls{Mode: resources.StreamModeBufferFull}
	}}} {
		out, d, e := runNative(t, NativeMessages, maskStage(tc.mut), evs)
		if d != Pass || !strings.Contains(hitsString(e.Outcome.Enforced), "pii:mask") {
			t.Fatalf("%s: %d %v", tc.name, d, e.Outcome.Enforced)
		}
		if got := msgText(t, evs, out); got != want {
			t.Fatalf("%s: text %q; want %q", tc.name, got, want)
		}
		for _, ev := range out {
			if strings.Contains(ev.data, "forb") || strings.Contains(ev.data, "idden") {
				t.Fatalf("%s: leaked %v", tc.name, ev)
			}
		}
	}
}

// TestNativeMessagesSignedThinking: thinking is signed, so a mask there
// records mask_unsupported and the events pass unchanged.
func TestNativeMessagesSignedThinking(t *testing.T) {
	evs := []nev{
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"think forb"}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"idden"}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln"}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
	}
	out, d, e := runNative(t, NativeMessages, maskStage(nil), evs)
	if d != Pass || hitsString(e.Outcome.Enforced) != "pii:mask_unsupported" {
		t.Fatalf("%d %v", d, e.Outcome.Enforced)
	}
	for i := range evs {
		if out[i] != evs[i] {
			t.Fatalf("event %d changed: %v", i, out[i])
		}
	}
	_, _, e = runNative(t, NativeMessages, maskStage(func(g *resources.Guardrail) { g.EnforcementMode = resources.EnforcementMonitor }), evs)
	if hitsString(e.Outcome.Monitor) != "pii:would_mask_unsupported" {
		t.Fatalf("monitor: %v", e.Outcome.Monitor)
	}
}

// TestNativeResponsesMask: the deltas, the .done events, the finished
// part and item and the final response all carry the masked text.
func TestNativeResponsesMask(t *testing.T) {
	delta := func(typ, seq, ci, text string) nev {
		return nev{typ, `{"type":"` + typ + `","sequence_number":` + seq + `,"item_id":"i","output_index":0` + ci + `,"delta":"` + text + `"}`}
	}
	const ci = `,"content_index":0`
	evs := []nev{
		{"response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"r","output":[]}}`},
		delta("response.output_text.delta", "1", ci, "hello forb"), delta("response.output_text.delta", "2", ci, "idden world"),
		{"response.output_text.done", `{"type":"response.output_text.done","sequence_number":3,"item_id":"i","output_index":0,"content_index":0,"text":"hello forbidden world","logprobs":[]}`},
		{"response.content_part.done", `{"type":"response.content_part.done","sequence_number":4,"item_id":"i","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":"hello forbidden world"}}`},
		{"response.output_item.done", `{"type":"response.output_item.done","sequence_number":5,"output_index":0,"item":{"id":"i","type":"message","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"hello forbidden world"}]}}`},
		{"response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","sequence_number":6,"item_id":"f","output_index":1,"delta":"{\"to\":\"forbi"}`},
		{"response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","sequence_number":7,"item_id":"f","output_index":1,"delta":"dden\"}"}`},
		{"response.function_call_arguments.done", `{"type":"response.function_call_arguments.done","sequence_number":8,"item_id":"f","output_index":1,"arguments":"{\"to\":\"forbidden\"}"}`},
		{"response.output_item.done", `{"type":"response.output_item.done","sequence_number":9,"output_index":1,"item":{"id":"f","type":"function_call","name":"send","arguments":"{\"to\":\"forbidden\"}","call_id":"c"}}`},
		{"response.completed", `{"type":"response.completed","sequence_number":10,"response":{"id":"r","status":"completed","output":[{"id":"i","type":"message","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"hello forbidden world"}]},{"id":"f","type":"function_call","name":"send","arguments":"{\"to\":\"forbidden\"}","call_id":"c"}],"usage":{"output_tokens":5}}}`},
	}
	for _, mut := range []func(g *resources.Guardrail){nil, smallWindow} {
		out, d, e := runNative(t, NativeResponses, maskStage(mut), evs)
		if d != Pass || hitsString(e.Outcome.Enforced) != "pii:mask" {
			t.Fatalf("%d %v", d, e.Outcome.Enforced)
		}
		if len(out) != len(evs) {
			t.Fatalf("%d events", len(out))
		}
		var text, args strings.Builder
		for i, ev := range out {
			if ev.name != evs[i].name || strings.Contains(ev.data, "forb") {
				t.Fatalf("event %d: %v", i, ev)
			}
			var v struct {
				Seq   int    `json:"sequence_number"`
				Delta string `json:"delta"`
			}
			if err := json.Unmarshal([]byte(ev.data), &v); err != nil || v.Seq != i {
				t.Fatalf("event %d: %v %v", i, ev, err)
			}
			switch ev.name {
			case "response.output_text.delta":
				text.WriteString(v.Delta)
			case "response.function_call_arguments.delta":
				args.WriteString(v.Delta)
			}
		}
		if text.String() != "hello [X] world" || args.String() != `{"to":"[X]"}` {
			t.Fatalf("deltas %q %q", text.String(), args.String())
		}
		wantDone := []string{
			3:  `{"type":"response.output_text.done","sequence_number":3,"item_id":"i","output_index":0,"content_index":0,"text":"hello [X] world","logprobs":[]}`,
			4:  `{"type":"response.content_part.done","sequence_number":4,"item_id":"i","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":"hello [X] world"}}`,
			5:  `{"type":"response.output_item.done","sequence_number":5,"output_index":0,"item":{"id":"i","type":"message","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"hello [X] world"}]}}`,
			8:  `{"type":"response.function_call_arguments.done","sequence_number":8,"item_id":"f","output_index":1,"arguments":"{\"to\":\"[X]\"}"}`,
			9:  `{"type":"response.output_item.done","sequence_number":9,"output_index":1,"item":{"id":"f","type":"function_call","name":"send","arguments":"{\"to\":\"[X]\"}","call_id":"c"}}`,
			10: `{"type":"response.completed","sequence_number":10,"response":{"id":"r","status":"completed","output":[{"id":"i","type":"message","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"hello [X] world"}]},{"id":"f","type":"function_call","name":"send","arguments":"{\"to\":\"[X]\"}","call_id":"c"}],"usage":{"output_tokens":5}}}`,
		}
		for i, w := range wantDone {
			if w != "" && out[i].data != w {
				t.Fatalf("event %d:\n%s\nwant\n%s", i, out[i].data, w)
			}
		}
	}
}

// TestNativeResponsesReasoningUnsupported: reasoning text is repeated next
// to its encrypted content, so it is never rewritten.
func TestNativeResponsesReasoningUnsupported(t *testing.T) {
	evs := []nev{
		{"response.reasoning_summary_text.delta", `{"type":"response.reasoning_summary_text.delta","sequence_number":1,"output_index":0,"summary_index":0,"delta":"so forbidden"}`},
		{"response.reasoning_summary_text.done", `{"type":"response.reasoning_summary_text.done","sequence_number":2,"output_index":0,"summary_index":0,"text":"so forbidden"}`},
	}
	out, d, e := runNative(t, NativeResponses, maskStage(nil), evs)
	if d != Pass || hitsString(e.Outcome.Enforced) != "pii:mask_unsupported" || out[0] != evs[0] || out[1] != evs[1] {
		t.Fatalf("%d %v %v", d, e.Outcome.Enforced, out)
	}
}

// nativeAllocStream is a Messages and a Responses stream with no mask hit.
var nativeAllocStream = []struct {
	f   NativeFormat
	evs []nev
}{
	{NativeMessages, []nev{
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		msgDelta("hello there, this is an answer that goes on"), msgDelta(" for a while so that the window slides more than once "),
		msgDelta("and a bit more text to be sure of it, with a tail"), {"ping", `{"type":"ping"}`},
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"message_stop", `{"type":"message_stop"}`},
	}},
	{NativeResponses, []nev{
		{"response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":1,"output_index":0,"content_index":0,"delta":"hello there, this is an answer"}`},
		{"response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":2,"output_index":0,"content_index":0,"delta":" that goes on for a while"}`},
		{"response.output_text.done", `{"type":"response.output_text.done","sequence_number":3,"output_index":0,"content_index":0,"text":"hello there, this is an answer that goes on for a while"}`},
		{"response.completed", `{"type":"response.completed","sequence_number":4,"response":{"output":[]}}`},
	}},
}

func relayNative(s *NativeStream, e *Exec, stages []*Stage, f NativeFormat, evs [][2][]byte) int {
	s.Reset(context.Background(), e, "m", stages, f)
	n := 0
	for _, ev := range evs {
		s.Push(ev[0], ev[1])
		for _, _, ok := s.Next(); ok; _, _, ok = s.Next() {
			n++
		}
	}
	s.End()
	for _, _, ok := s.Next(); ok; _, _, ok = s.Next() {
		n++
	}
	return n
}

func byteEvents(evs []nev) [][2][]byte {
	out := make([][2][]byte, len(evs))
	for i, ev := range evs {
		out[i] = [2][]byte{[]byte(ev.name), []byte(ev.data)}
	}
	return out
}

// TestNativeStreamAllocs: a stream without a mask hit is relayed without
// allocating once warm (pooled stream), byte for byte.
func TestNativeStreamAllocs(t *testing.T) {
	stages := maskStage(smallWindow)
	for _, tc := range nativeAllocStream {
		evs := byteEvents(tc.evs)
		var s NativeStream
		var e Exec
		if n := relayNative(&s, &e, stages, tc.f, evs); n != len(evs) {
			t.Fatalf("%d events", n)
		}
		if a := testing.AllocsPerRun(50, func() { e.Reset(); relayNative(&s, &e, stages, tc.f, evs) }); a != 0 {
			t.Fatalf("format %d: %.1f allocs per stream", tc.f, a)
		}
		out, d, _ := runNative(t, tc.f, stages, tc.evs)
		for i := range tc.evs {
			if d != Pass || out[i] != tc.evs[i] {
				t.Fatalf("event %d changed: %v", i, out[i])
			}
		}
	}
}

// BenchmarkNativeStream: one event through the output policy (no hit, and
// every text event masked).
func BenchmarkNativeStream(b *testing.B) {
	for _, mask := range []bool{false, true} {
		for _, tc := range nativeAllocStream {
			name := "messages"
			if tc.f == NativeResponses {
				name = "responses"
			}
			if mask {
				name += "/mask"
			}
			b.Run(name, func(b *testing.B) {
				ck := &wordChecker{word: "zzz-none", mask: true}
				if mask {
					ck.word = "e"
				}
				stages := []*Stage{stage("pii", ck, smallWindow)}
				evs := byteEvents(tc.evs)
				var s NativeStream
				var e Exec
				b.ReportAllocs()
				for b.Loop() {
					e.Reset()
					relayNative(&s, &e, stages, tc.f, evs)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
			})
		}
	}
}

// TestNativeMaskMalformed: a masked channel's .done event gw cannot edit
// never passes with the unmasked text: only its type does.
func TestNativeMaskMalformed(t *testing.T) {
	evs := []nev{
		{"response.output_text.delta", `{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"a forbidden b"}`},
		{"response.output_text.done", `{"type":"response.output_text.done","output_index":0,"content_index":0,"text":"a forbidden b","x":}`},
	}
	out, d, _ := runNative(t, NativeResponses, maskStage(nil), evs)
	if d != Pass || len(out) != 2 || out[0].data != `{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"a [X] b"}` ||
		out[1].data != `{"type":"response.output_text.done"}` {
		t.Fatalf("responses: %d %v", d, out)
	}
}
