package guard

import (
	"context"
	"strings"
	"testing"

	"gw/admin/resources"
)

type nev struct{ name, data string }

func runNative(t *testing.T, f NativeFormat, stages []*Stage, evs []nev) ([]nev, Decision, *Exec) {
	t.Helper()
	var e Exec
	var s NativeStream
	s.Reset(context.Background(), &e, "m", stages, f)
	var out []nev
	drain := func() {
		for {
			n, d, ok := s.Next()
			if !ok {
				return
			}
			out = append(out, nev{string(n), string(d)})
		}
	}
	for _, ev := range evs {
		if d := s.Push([]byte(ev.name), []byte(ev.data)); d >= Blocked {
			drain()
			return out, d, &e
		}
		drain()
	}
	d := s.End()
	drain()
	return out, d, &e
}

func msgDelta(text string) nev {
	return nev{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + text + `"}}`}
}

// TestNativeMessagesStream: events pass unchanged and in order once judged;
// a split blocked word ends the stream before its bytes leave; a mask is
// unsupported.
func TestNativeMessagesStream(t *testing.T) {
	evs := []nev{
		{"message_start", `{"type":"message_start","message":{"id":"m","content":[]}}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		msgDelta("this is forb"), {"ping", `{"type":"ping"}`}, msgDelta("idden text"),
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"message_stop", `{"type":"message_stop"}`},
	}
	out, d, _ := runNative(t, NativeMessages, []*Stage{stage("kw", &wordChecker{word: "nothing-here"}, nil)}, evs)
	if d != Pass || len(out) != len(evs) {
		t.Fatalf("pass: %d %v", d, out)
	}
	for i := range evs {
		if out[i] != evs[i] {
			t.Fatalf("event %d changed: %v", i, out[i])
		}
	}
	out, d, _ = runNative(t, NativeMessages, []*Stage{stage("kw", &wordChecker{word: "forbidden"}, nil)}, evs)
	if d != Blocked {
		t.Fatalf("block: %d", d)
	}
	for _, ev := range out {
		if strings.Contains(ev.data, "forb") {
			t.Fatalf("leaked %v", ev)
		}
	}
	out, d, e := runNative(t, NativeMessages, []*Stage{stage("pii", &wordChecker{word: "forbidden", mask: true}, nil)}, evs)
	if d != Pass || hitsString(e.Outcome.Enforced) != "pii:mask" {
		t.Fatalf("mask: %d %v", d, e.Outcome.Enforced)
	}
	if got := msgText(t, evs, out); got != "this is [X] text" {
		t.Fatalf("masked text %q", got)
	}
}

func TestNativeResponsesStream(t *testing.T) {
	delta := func(seq, text string) nev {
		return nev{"response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":` + seq + `,"output_index":0,"content_index":0,"delta":"` + text + `"}`}
	}
	evs := []nev{
		{"response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"r"}}`},
		delta("1", "hello forb"), delta("2", "idden"),
		{"response.output_text.done", `{"type":"response.output_text.done","sequence_number":3,"text":"hello forbidden"}`},
	}
	out, d, _ := runNative(t, NativeResponses, []*Stage{stage("kw", &wordChecker{word: "forbidden"}, nil)}, evs)
	if d != Blocked || len(out) != 1 {
		t.Fatalf("block: %d %v", d, out)
	}
}

// TestNativeStreamUnreadableEvent: a native event that is not JSON (here a
// truncated text delta carrying a blocked word) cannot be judged, so the
// chain's fail-open rules decide: fail-closed ends the stream before it is
// released, fail-open passes it with the bypass recorded.
func TestNativeStreamUnreadableEvent(t *testing.T) {
	for _, tc := range []struct {
		f   NativeFormat
		bad nev
	}{
		{NativeMessages, nev{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"forbidden"}`}},
		{NativeResponses, nev{"response.output_text.delta", `{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"forbidden"`}},
	} {
		for _, open := range []bool{false, true} {
			st := []*Stage{stage("kw", &wordChecker{word: "forbidden"}, func(g *resources.Guardrail) { g.OutputFailOpen = open })}
			out, d, e := runNative(t, tc.f, st, []nev{tc.bad})
			switch {
			case !open && (d != Unavailable || len(out) != 0 || !e.Outcome.BlockedFailClosed):
				t.Fatalf("format %d fail-closed: decision %d, released %v, outcome %+v", tc.f, d, out, e.Outcome)
			case open && (d != Pass || len(out) != 1 || out[0] != tc.bad || e.Outcome.BypassedReason != BypassUnreadable):
				t.Fatalf("format %d fail-open: decision %d, released %v, outcome %+v", tc.f, d, out, e.Outcome)
			}
		}
	}
}
