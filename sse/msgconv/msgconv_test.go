package msgconv_test

import (
	"testing"

	"gw/sse/msgconv"
)

func TestMappings(t *testing.T) {
	f := func(got, want string) {
		t.Helper()
		if got != want {
			t.Fatalf("got %q; want %q", got, want)
		}
	}
	for _, c := range [][2]string{{"end_turn", "stop"}, {"stop_sequence", "stop"}, {"pause_turn", "stop"},
		{"max_tokens", "length"}, {"model_context_window_exceeded", "length"}, {"tool_use", "tool_calls"},
		{"refusal", "content_filter"}, {"", "stop"}, {"new", "stop"}} {
		f(msgconv.FinishReason([]byte(c[0])), c[1])
	}
	for _, c := range [][2]string{{"stop", "end_turn"}, {"length", "max_tokens"}, {"tool_calls", "tool_use"},
		{"function_call", "tool_use"}, {"content_filter", "refusal"}, {"", "end_turn"}} {
		f(msgconv.StopReason([]byte(c[0])), c[1])
	}
	for _, c := range []struct {
		effort string
		budget int64
		ok     bool
	}{{"none", 0, true}, {"minimal", 1024, true}, {"low", 1024, true}, {"medium", 4096, true},
		{"high", 16384, true}, {"xhigh", 32768, true}, {"max", 32768, true}, {"High", 0, false}, {"", 0, false}} {
		if b, ok := msgconv.ThinkingBudget([]byte(c.effort)); b != c.budget || ok != c.ok {
			t.Fatalf("ThinkingBudget(%q) = %d, %v; want %d, %v", c.effort, b, ok, c.budget, c.ok)
		}
	}
	// Every effort survives effort → budget → effort except the extremes.
	for _, e := range []string{"low", "medium", "high"} {
		b, _ := msgconv.ThinkingBudget([]byte(e))
		f(msgconv.EffortForBudget(b), e)
	}
	f(msgconv.EffortForBudget(0), "low")
	f(msgconv.EffortForBudget(1<<40), "high")
}

func TestScanKeys(t *testing.T) {
	slot := func(name []byte) int {
		switch string(name) {
		case "type":
			return 0
		case "index":
			return 1
		}
		return -1
	}
	f := func(in, wantType, wantIndex string, wantErr bool) {
		t.Helper()
		var v [2][]byte
		v[0], v[1] = []byte("stale"), []byte("stale")
		err := msgconv.ScanKeys([]byte(in), v[:], slot)
		if (err != nil) != wantErr || string(v[0]) != wantType || string(v[1]) != wantIndex {
			t.Fatalf("%s: got %q %q %v", in, v[0], v[1], err)
		}
	}
	f(`{"type":"a","index":3}`, `"a"`, `3`, false)
	f(` { "index" : [1,{"type":2}] , "x":null }`, ``, `[1,{"type":2}]`, false)
	f(`{"type":"a","ty\u0070e":"b"}`, `"b"`, ``, false) // last wins, escapes decoded
	f(`{"type":"a",}`, ``, ``, true)
	f(`[]`, ``, ``, true)
	f(`{"type":"a"} x`, ``, ``, true)
}
