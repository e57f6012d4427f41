//go:build !race

package respconv_test

import (
	"testing"

	"gw/sse/respconv"
	"gw/sse/transcode"
)

// Steady state: once a pooled stream's buffers have grown, whole streams —
// every event, the terminal event, Reset and SetRequest — allocate nothing.
func TestStreamAllocs(t *testing.T) {
	f := func(name string, st transcode.Stream, evs []rawEvent, setup func(transcode.Stream)) {
		t.Helper()
		dst := make([]byte, 0, 64<<10)
		run := func() {
			st.Reset(benchAliasLit)
			if setup != nil {
				setup(st)
			}
			dst, _ = runEvents(t, st, evs, dst)
			if _, ok := st.Usage(); !ok && name != "chat text" {
				t.Fatalf("%s: no usage", name)
			}
		}
		run() // warm up the buffers
		if n := testing.AllocsPerRun(50, run); n != 0 {
			t.Fatalf("%s: got %v allocs per stream; want 0", name, n)
		}
	}
	c2r := respconv.NewChatToResponsesStream()
	defer respconv.ReleaseStream(c2r)
	r2c := respconv.NewResponsesToChatStream()
	defer respconv.ReleaseStream(r2c)
	f("chat text", c2r, longChatStream(t), setRequest)
	f("chat tool calls", c2r, toolChatStream(t), setRequest)
	f("chat length", c2r, events(t, readFixture(t, "openai_chat_include_usage_finish_length.sse")), nil)
	f("responses text", r2c, longResponsesStream(t), includeUsage)
	f("responses reasoning and call", r2c, events(t, readFixture(t, "openai_responses_reasoning_then_function_call.sse")), includeUsage)
	f("responses legacy", r2c, events(t, readFixture(t, "openai_responses_function_call_legacy_no_seq.sse")), includeUsage)
	for part, stream := range splitStreams(t, readFixture(t, "openai_responses_reasoning_summary_multi_request.jsonl")) {
		f("responses multi "+itoa(part), r2c, events(t, stream), includeUsage)
	}
}

func TestFailAllocs(t *testing.T) {
	c2r := respconv.NewChatToResponsesStream()
	defer respconv.ReleaseStream(c2r)
	evs := toolChatStream(t)[:4]
	dst := make([]byte, 0, 16<<10)
	run := func() {
		c2r.Reset(nil)
		for _, ev := range evs {
			dst, _ = c2r.Event(dst[:0], ev.name, ev.data)
		}
		dst = c2r.Fail(dst[:0], transcode.CodeTimeout, "the upstream stream stalled")
	}
	run()
	if n := testing.AllocsPerRun(50, run); n != 0 {
		t.Fatalf("got %v allocs; want 0", n)
	}
}
