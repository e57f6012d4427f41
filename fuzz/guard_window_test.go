package fuzz

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/sse/rawjson"
)

// windowJudge blocks windows containing "BAD" and masks "pii" as "[P]".
type windowJudge struct{ out []byte }

func (j *windowJudge) JudgeWindow(text []byte) ([]byte, guard.Decision) {
	if bytes.Contains(text, []byte("BAD")) {
		return text, guard.Blocked
	}
	if bytes.Contains(text, []byte("pii")) {
		j.out = append(j.out[:0], bytes.ReplaceAll(text, []byte("pii"), []byte("[P]"))...)
		return j.out, guard.Masked
	}
	return text, guard.Pass
}

func streamWindow(size, overlap int, full bool, text []byte, cuts []byte) ([]byte, guard.Decision) {
	w := guard.Window{Size: size, Overlap: overlap, Full: full}
	j := &windowJudge{}
	var out []byte
	var d guard.Decision
	pos := 0
	for _, c := range cuts {
		n := int(c)
		if pos+n > len(text) {
			break
		}
		if out, d = w.Push(out, text[pos:pos+n], j); d >= guard.Blocked {
			return out, d
		}
		pos += n
	}
	if out, d = w.Push(out, text[pos:], j); d >= guard.Blocked {
		return out, d
	}
	if out, d = w.End(out, j); d >= guard.Blocked {
		return out, d
	}
	return out, guard.Pass
}

// FuzzGuardWindow: the window scanner gives the same verdict and releases
// the same text for any chunking of the same stream; nothing is lost or
// duplicated when nothing matches, and a blocked stream never released
// the blocked word.
func FuzzGuardWindow(f *testing.F) {
	f.Add([]byte("hello BAD world"), []byte{3, 4, 1}, uint8(16), uint8(4), false)
	f.Add([]byte("some pii and more pii here, and then a long tail of text to cross windows"), []byte{1, 2, 3, 5, 8, 13}, uint8(20), uint8(6), false)
	f.Add([]byte("héllo wörld € pii"), []byte{1, 1, 1, 1, 1, 1, 1}, uint8(17), uint8(3), true)
	f.Fuzz(func(t *testing.T, text, cuts []byte, size, overlap uint8, full bool) {
		sz := 16 + int(size)%200
		ov := int(overlap) % (sz/2 + 1)
		want, wd := streamWindow(sz, ov, full, text, nil)
		got, gd := streamWindow(sz, ov, full, text, cuts)
		if gd != wd || !bytes.Equal(got, want) {
			t.Fatalf("chunking %v changed the outcome: %d %q; want %d %q", cuts, gd, got, wd, want)
		}
		if wd == guard.Pass && !bytes.Contains(text, []byte("pii")) && !bytes.Equal(want, text) {
			t.Fatalf("released %q; want the text unchanged %q", want, text)
		}
		if wd == guard.Blocked && bytes.Contains(want, []byte("BAD")) {
			t.Fatalf("blocked stream released the word: %q", want)
		}
	})
}

// wordCheck blocks texts containing "BAD" and masks "pii" as "[P]".
type wordCheck struct{}

func (wordCheck) Check(_ context.Context, req *guard.Request, v *guard.Verdict) error {
	for i, t := range req.Texts {
		if bytes.Contains(t.Data, []byte("BAD")) {
			v.Action = guard.Block
			return nil
		}
		if bytes.Contains(t.Data, []byte("pii")) {
			v.Action = guard.Rewrite
			start := len(v.Buf)
			v.Buf = append(v.Buf, bytes.ReplaceAll(t.Data, []byte("pii"), []byte("[P]"))...)
			v.Masks = append(v.Masks, guard.Mask{Index: i, Data: v.Buf[start:]})
		}
	}
	return nil
}

func chatStages(t *testing.T, size int64) []*guard.Stage {
	g := &resources.Guardrail{Name: "w", Kind: "w", Enabled: true, HookPoint: resources.HookPointBoth, EnforcementMode: resources.EnforcementBlock,
		Stream: &resources.StreamControls{Mode: resources.StreamModeWindow, WindowSize: size, WindowOverlapSize: size / 4}}
	scope := resources.GuardrailScope{Type: "model", Name: "m"}
	c, err := guard.Compile(map[resources.GuardrailScope]*resources.GuardrailChain{scope: {Output: []*resources.Guardrail{g}}},
		guard.Table{"w": func(*resources.Guardrail) (guard.Checker, error) { return wordCheck{}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	return c[scope].Output
}

// chatContent streams text as chat chunks cut at cuts through a ChatStream
// and returns the content the caller would read and the decision.
func chatContent(t *testing.T, stages []*guard.Stage, text []byte, cuts []byte) (string, guard.Decision) {
	var e guard.Exec
	var s guard.ChatStream
	s.Reset(context.Background(), &e, "m", stages)
	var out strings.Builder
	drain := func() {
		for {
			c, ok := s.Next()
			if !ok {
				return
			}
			var v struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(c, &v); err != nil {
				t.Fatalf("released invalid JSON %q: %v", c, err)
			}
			for _, ch := range v.Choices {
				out.WriteString(ch.Delta.Content)
			}
		}
	}
	push := func(piece []byte) guard.Decision {
		chunk := append([]byte(`{"id":"x","choices":[{"index":0,"delta":{"content":`), rawjson.AppendQuoteBytes(nil, piece)...)
		chunk = append(chunk, `},"finish_reason":null}]}`...)
		d := s.Push(chunk)
		drain()
		return d
	}
	pos := 0
	for _, c := range cuts {
		n := int(c)
		if pos+n > len(text) {
			break
		}
		// A JSON string value holds whole characters: cut at rune starts.
		for pos+n < len(text) && n > 0 && !utf8.RuneStart(text[pos+n]) {
			n++
		}
		if d := push(text[pos : pos+n]); d >= guard.Blocked {
			return out.String(), d
		}
		pos += n
	}
	if d := push(text[pos:]); d >= guard.Blocked {
		return out.String(), d
	}
	d := s.End()
	drain()
	if d >= guard.Blocked {
		return out.String(), d
	}
	return out.String(), guard.Pass
}

// FuzzGuardChatStream: the chat stream filter releases the same content and
// gives the same verdict for any chunking of the same answer, and a blocked
// answer never released the blocked word.
func FuzzGuardChatStream(f *testing.F) {
	f.Add([]byte("hello BAD world and more text to fill the window up"), []byte{3, 4, 1, 9}, uint8(20))
	f.Add([]byte("pii at the start, then pii again across a window boundary pii"), []byte{1, 2, 3, 5, 8, 13}, uint8(24))
	f.Add([]byte("héllo wörld € pii \u2028 \"quoted\" \\ back"), []byte{1, 1, 1, 1, 1, 1, 1}, uint8(17))
	f.Fuzz(func(t *testing.T, text, cuts []byte, size uint8) {
		if !utf8.Valid(text) {
			return
		}
		stages := chatStages(t, 16+int64(size)%200)
		want, wd := chatContent(t, stages, text, nil)
		got, gd := chatContent(t, stages, text, cuts)
		if gd != wd || got != want {
			t.Fatalf("chunking %v changed the outcome: %d %q; want %d %q", cuts, gd, got, wd, want)
		}
		if wd == guard.Blocked && strings.Contains(want, "BAD") {
			t.Fatalf("blocked stream released the word: %q", want)
		}
		if wd == guard.Pass && !bytes.Contains(text, []byte("pii")) && want != string(text) {
			t.Fatalf("released %q; want %q", want, text)
		}
	})
}

// nativeRelease streams text as native events cut at cuts (Messages: a
// text block then the same text as a tool_use block's input; Responses:
// output_text deltas, their .done event and the final response) through a
// NativeStream and returns every released event's name and data, the
// concatenated delta text of each channel and the decision.
func nativeRelease(t *testing.T, stages []*guard.Stage, f guard.NativeFormat, text, cuts []byte) (evs, deltas []string, dec guard.Decision) {
	var e guard.Exec
	var s guard.NativeStream
	s.Reset(context.Background(), &e, "m", stages, f)
	deltas = make([]string, 2)
	drain := func() {
		for {
			name, data, ok := s.Next()
			if !ok {
				return
			}
			var v struct {
				Index int `json:"index"`
				Delta json.RawMessage
				Out   int `json:"output_index"`
			}
			if err := json.Unmarshal(data, &v); err != nil {
				t.Fatalf("released invalid JSON %q: %v", data, err)
			}
			evs = append(evs, string(name)+" "+string(data))
			var d struct {
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
			}
			switch string(name) {
			case "content_block_delta":
				if err := json.Unmarshal(v.Delta, &d); err != nil {
					t.Fatal(err)
				}
				deltas[v.Index] += d.Text + d.PartialJSON
			case "response.output_text.delta", "response.function_call_arguments.delta":
				var str string
				if err := json.Unmarshal(v.Delta, &str); err != nil {
					t.Fatal(err)
				}
				deltas[v.Out] += str
			}
		}
	}
	push := func(name string, data []byte) bool {
		dec = s.Push([]byte(name), data)
		drain()
		return dec < guard.Blocked
	}
	pieces := func(ch int) bool {
		pos := 0
		cut := func(n int) bool {
			q := rawjson.AppendQuoteBytes(nil, text[pos:pos+n])
			var data []byte
			switch {
			case f == guard.NativeMessages && ch == 0:
				data = append(append([]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`), q...), "}}"...)
				return push("content_block_delta", data)
			case f == guard.NativeMessages:
				data = append(append([]byte(`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":`), q...), "}}"...)
				return push("content_block_delta", data)
			case ch == 0:
				data = append(append([]byte(`{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":`), q...), "}"...)
				return push("response.output_text.delta", data)
			}
			data = append(append([]byte(`{"type":"response.function_call_arguments.delta","output_index":1,"delta":`), q...), "}"...)
			return push("response.function_call_arguments.delta", data)
		}
		for _, c := range cuts {
			n := int(c)
			if pos+n > len(text) {
				break
			}
			for pos+n < len(text) && n > 0 && !utf8.RuneStart(text[pos+n]) {
				n++
			}
			if !cut(n) {
				return false
			}
			pos += n
		}
		return cut(len(text) - pos)
	}
	q := string(rawjson.AppendQuoteBytes(nil, text))
	if f == guard.NativeMessages {
		if !push("content_block_start", []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)) || !pieces(0) ||
			!push("content_block_stop", []byte(`{"type":"content_block_stop","index":0}`)) || !pieces(1) ||
			!push("content_block_stop", []byte(`{"type":"content_block_stop","index":1}`)) {
			return evs, deltas, dec
		}
	} else {
		if !pieces(0) || !push("response.output_text.done", []byte(`{"type":"response.output_text.done","output_index":0,"content_index":0,"text":`+q+`}`)) ||
			!pieces(1) || !push("response.completed", []byte(`{"type":"response.completed","response":{"output":[{"type":"message","content":[{"type":"output_text","text":`+q+`}]},{"type":"function_call","arguments":`+q+`}]}}`)) {
			return evs, deltas, dec
		}
	}
	dec = s.End()
	drain()
	return evs, deltas, dec
}

// FuzzGuardNativeStream: a native stream releases the same text, the same
// closing events and the same verdict for any chunking of the same answer
// (a blocked one: the same verdict, having released a prefix without the
// word, as much as its events allowed);
// every released event is valid JSON; masked text never keeps the masked
// word and the Responses .done and final events repeat exactly the
// released deltas; a blocked answer never released the blocked word.
func FuzzGuardNativeStream(f *testing.F) {
	f.Add([]byte("hello BAD world and more text to fill the window up"), []byte{3, 4, 1, 9}, uint8(20), false)
	f.Add([]byte("pii at the start, then pii again across a window boundary pii"), []byte{1, 2, 3, 5, 8, 13}, uint8(24), true)
	f.Add([]byte("héllo wörld € pii \u2028 \"quoted\" \\ back"), []byte{1, 1, 1, 1, 1, 1, 1}, uint8(17), false)
	f.Fuzz(func(t *testing.T, text, cuts []byte, size uint8, responses bool) {
		if !utf8.Valid(text) {
			return
		}
		format := guard.NativeMessages
		if responses {
			format = guard.NativeResponses
		}
		stages := chatStages(t, 16+int64(size)%200)
		wantEvs, want, wd := nativeRelease(t, stages, format, text, nil)
		gotEvs, got, gd := nativeRelease(t, stages, format, text, cuts)
		if gd != wd {
			t.Fatalf("chunking %v changed the verdict: %d; want %d", cuts, gd, wd)
		}
		if wd == guard.Blocked {
			// Events are the unit of release, so how much was released
			// before the block depends on the chunking; never the word.
			if strings.Contains(want[0]+want[1]+got[0]+got[1], "BAD") {
				t.Fatalf("blocked stream released the word: %q %q", want, got)
			}
			return
		}
		if got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("chunking %v changed the text: %q; want %q", cuts, got, want)
		}
		// The events but the deltas are the same whatever the chunking.
		var wantEnd, gotEnd []string
		for _, ev := range wantEvs {
			if !strings.Contains(ev, "delta") {
				wantEnd = append(wantEnd, ev)
			}
		}
		for _, ev := range gotEvs {
			if !strings.Contains(ev, "delta") {
				gotEnd = append(gotEnd, ev)
			}
		}
		if strings.Join(gotEnd, "\n") != strings.Join(wantEnd, "\n") {
			t.Fatalf("chunking %v changed the closing events:\n%s\nwant\n%s", cuts, gotEnd, wantEnd)
		}
		for _, d := range want {
			if !bytes.Contains(text, []byte("pii")) && d != string(text) {
				t.Fatalf("released %q; want %q", d, text)
			}
			if strings.Contains(d, "pii") {
				t.Fatalf("masked text kept the word: %q", d)
			}
		}
		if responses {
			var done struct {
				Text     string `json:"text"`
				Response struct {
					Output []struct {
						Content []struct {
							Text string `json:"text"`
						} `json:"content"`
						Arguments string `json:"arguments"`
					} `json:"output"`
				} `json:"response"`
			}
			var final = done
			if len(wantEnd) != 2 || json.Unmarshal([]byte(strings.SplitN(wantEnd[0], " ", 2)[1]), &done) != nil ||
				json.Unmarshal([]byte(strings.SplitN(wantEnd[1], " ", 2)[1]), &final) != nil || len(final.Response.Output) != 2 {
				t.Fatalf("closing events: %s", wantEnd)
			}
			if done.Text != want[0] || final.Response.Output[0].Content[0].Text != want[0] || final.Response.Output[1].Arguments != want[1] {
				t.Fatalf("done and final events do not repeat the deltas %q: %s", want, wantEnd)
			}
		}
	})
}
