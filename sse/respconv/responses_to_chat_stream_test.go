package respconv_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"gw/sse"
	"gw/sse/respconv"
	"gw/sse/transcode"
)

// splitStreams cuts concatenated Responses streams at each response.created.
func splitStreams(tb testing.TB, stream []byte) [][]byte {
	var out [][]byte
	for _, ev := range parseSSE(tb, stream, nil) {
		if ev.Name == "response.created" {
			out = append(out, nil)
		}
		out[len(out)-1] = sse.AppendEvent(out[len(out)-1], []byte(ev.Name), []byte(ev.Data))
	}
	return out
}

func TestResponsesToChatFixtures(t *testing.T) {
	f := func(name string, part int, finish string) {
		t.Helper()
		src := splitStreams(t, readFixture(t, name))[part]
		want := sourceResponses(t, src)
		want.Finish = finish
		st := respconv.NewResponsesToChatStream()
		defer respconv.ReleaseStream(st)
		for _, sizes := range splits() {
			st.Reset([]byte("alias"))
			st.(*respconv.ResponsesToChat).SetIncludeUsage(true)
			var out []byte
			for _, ev := range parseSSE(t, src, sizes) {
				var err error
				if out, err = st.Event(out, []byte(ev.Name), []byte(ev.Data)); err != nil {
					t.Fatalf("%s: %s", name, err)
				}
			}
			if !st.(*respconv.ResponsesToChat).Terminated() {
				t.Fatalf("%s: not terminated", name)
			}
			if more := st.End(nil); len(more) != 0 {
				t.Fatalf("%s: End after [DONE] wrote %q", name, more)
			}
			got := checkChat(t, out, sizes)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s/%d %v:\ngot  %+v\nwant %+v\n%s", name, part, sizes, got, want, out)
			}
			if !strings.Contains(string(out), `"model":"alias"`) || strings.Contains(string(out), `"model":"gpt`) {
				t.Fatalf("%s: the alias must replace the model:\n%s", name, out)
			}
			u, ok := st.Usage()
			if !ok || u.Prompt != want.Usage["input"] || u.Completion != want.Usage["output"] || u.Reasoning != want.Usage["reasoning"] || u.Total != want.Usage["total"] {
				t.Fatalf("%s: Usage() = %+v; want %v", name, u, want.Usage)
			}
		}
	}
	f("openai_responses_text.sse", 0, "stop")
	f("openai_responses_function_call_legacy_no_seq.sse", 0, "tool_calls")
	f("openai_responses_reasoning_then_function_call.sse", 0, "tool_calls")
	for part := range 4 {
		finish := "tool_calls"
		if part == 3 {
			finish = "stop"
		}
		f("openai_responses_reasoning_summary_multi_request.jsonl", part, finish)
	}
}

func TestResponsesToChatJSONLines(t *testing.T) {
	// Events without `event:` lines are typed by their JSON type.
	src := readFixture(t, "openai_responses_text.sse")
	var nameless []byte
	for _, ev := range parseSSE(t, src, nil) {
		nameless = sse.AppendData(nameless, []byte(ev.Data))
	}
	st := respconv.NewResponsesToChatStream()
	defer respconv.ReleaseStream(st)
	out, err := runStream(t, st, "a", nameless, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := checkChat(t, out, nil); got.Text != "streamed" || got.Finish != "stop" || got.Usage != nil {
		t.Fatalf("got %+v", got)
	}
}

func TestResponsesToChatErrors(t *testing.T) {
	f := func(name, stream, wantCode, wantMsg string) {
		t.Helper()
		st := respconv.NewResponsesToChatStream()
		defer respconv.ReleaseStream(st)
		out, err := runStream(t, st, "a", []byte(stream), nil)
		if !errors.Is(err, respconv.ErrUpstreamFailed) {
			t.Fatalf("%s: err = %v", name, err)
		}
		if more := st.End(nil); len(more) != 0 {
			t.Fatalf("%s: End after the error wrote %q", name, more)
		}
		got := checkChat(t, out, nil)
		if got.ErrCode != wantCode || got.ErrMsg != wantMsg || got.Finish != "" {
			t.Fatalf("%s: got %+v\n%s", name, got, out)
		}
		if bytes.Contains(out, []byte("[DONE]")) {
			t.Fatalf("%s: [DONE] after an error", name)
		}
	}
	src := readFixture(t, "openai_responses_error_then_failed.jsonl")
	f("recorded error then failed", string(src), "insufficient_quota",
		"You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.")
	created := "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"created_at\":1}}\n\n"
	f("flat error event", created+"event: error\ndata: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"slow down\",\"param\":null}\n\n",
		"rate_limit_exceeded", "slow down")
	f("response.failed alone", created+"event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"oops\"}}}\n\n",
		"server_error", "oops")
	f("error without code", "event: error\ndata: {\"type\":\"error\",\"message\":\"x\"}\n\n", "server_error", "x")

	// Fail after content: error frame, no [DONE].
	st := respconv.NewResponsesToChatStream()
	defer respconv.ReleaseStream(st)
	st.Reset(nil)
	out, _ := st.Event(nil, []byte("response.output_text.delta"), []byte(`{"type":"response.output_text.delta","delta":"hi"}`))
	out = st.Fail(out, transcode.CodeTimeout, "stalled")
	if got := checkChat(t, out, nil); got.Text != "hi" || got.ErrCode != "stream_timeout" || got.ErrMsg != "stalled" {
		t.Fatalf("got %+v", got)
	}
}

func TestResponsesToChatMappings(t *testing.T) {
	ev := func(typ, body string) string {
		return "event: " + typ + "\ndata: {\"type\":\"" + typ + "\"," + body + "}\n\n"
	}
	created := ev("response.created", `"response":{"id":"resp_abc","created_at":7,"model":"up"}`)
	usage := `"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":4},"output_tokens":6,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":16}`
	f := func(name, stream string, includeUsage bool, want transcript) {
		t.Helper()
		st := respconv.NewResponsesToChatStream()
		defer respconv.ReleaseStream(st)
		st.Reset([]byte("alias"))
		st.(*respconv.ResponsesToChat).SetIncludeUsage(includeUsage)
		var out []byte
		for _, e := range parseSSE(t, []byte(stream), nil) {
			var err error
			if out, err = st.Event(out, []byte(e.Name), []byte(e.Data)); err != nil {
				t.Fatalf("%s: %s", name, err)
			}
		}
		out = st.End(out)
		if got := checkChat(t, out, nil); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\ngot  %+v\nwant %+v\n%s", name, got, want, out)
		}
	}
	f("text, refusal, reasoning with two summary parts, usage chunk",
		created+
			ev("response.reasoning_summary_part.added", `"summary_index":0`)+
			ev("response.reasoning_summary_text.delta", `"item_id":"rs_1","summary_index":0,"delta":"a"`)+
			ev("response.reasoning_summary_part.added", `"summary_index":1`)+
			ev("response.reasoning_summary_text.delta", `"item_id":"rs_1","summary_index":1,"delta":"b"`)+
			ev("response.output_text.delta", `"delta":"Hi \"x\""`)+
			ev("response.refusal.delta", `"delta":"no"`)+
			ev("response.web_search_call.searching", `"item_id":"ws"`)+
			ev("response.completed", `"response":{"status":"completed",`+usage+`}`),
		true, transcript{Text: `Hi "x"`, Refusal: "no", Reasoning: "a\n\nb", Finish: "stop",
			Usage: map[string]int64{"input": 10, "output": 6, "total": 16, "cached": 4, "reasoning": 2}})
	f("no usage chunk unless asked",
		created+ev("response.output_text.delta", `"delta":"x"`)+ev("response.completed", `"response":{"status":"completed",`+usage+`}`),
		false, transcript{Text: "x", Finish: "stop"})
	f("parallel calls, arguments only in .done or item.done",
		created+
			ev("response.output_item.added", `"output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"a","arguments":""}`)+
			ev("response.function_call_arguments.delta", `"item_id":"fc_1","output_index":0,"delta":"{\"x\":"`)+
			ev("response.function_call_arguments.delta", `"item_id":"fc_1","output_index":0,"delta":"1}"`)+
			ev("response.function_call_arguments.done", `"item_id":"fc_1","output_index":0,"arguments":"{\"x\":1}"`)+
			ev("response.output_item.added", `"output_index":1,"item":{"type":"function_call","id":"fc_2","call_id":"call_2","name":"b","arguments":""}`)+
			ev("response.function_call_arguments.done", `"item_id":"fc_2","output_index":1,"arguments":"{\"y\":2}"`)+
			ev("response.output_item.done", `"output_index":2,"item":{"type":"function_call","id":"fc_3","call_id":"call_3","name":"c","arguments":"{}"}`)+
			ev("response.completed", `"response":{"status":"completed"}`),
		false, transcript{Calls: []callRec{{"call_1", "a", `{"x":1}`}, {"call_2", "b", `{"y":2}`}, {"call_3", "c", `{}`}}, Finish: "tool_calls"})
	f("incomplete: max_output_tokens",
		created+ev("response.output_text.delta", `"delta":"x"`)+ev("response.incomplete", `"response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}`),
		false, transcript{Text: "x", Finish: "length"})
	f("incomplete: content_filter",
		created+ev("response.incomplete", `"response":{"status":"incomplete","incomplete_details":{"reason":"content_filter"}}`),
		false, transcript{Finish: "content_filter"})
	f("nothing streamed: the final output is replayed",
		created+ev("response.completed", `"response":{"status":"completed","output":[{"type":"reasoning","summary":[]},{"type":"message","content":[{"type":"output_text","text":"whole"}]},{"type":"function_call","id":"fc_9","call_id":"call_9","name":"z","arguments":"{}"}]}`),
		false, transcript{Text: "whole", Calls: []callRec{{"call_9", "z", "{}"}}, Finish: "tool_calls"})
	f("cut off without a terminal event: End finishes", created+ev("response.output_text.delta", `"delta":"x"`),
		false, transcript{Text: "x", Finish: "stop"})
	f("no events at all", "", false, transcript{Finish: "stop"})
}

func TestResponsesToChatMalformed(t *testing.T) {
	st := respconv.NewResponsesToChatStream()
	defer respconv.ReleaseStream(st)
	st.Reset(nil)
	for _, c := range []struct{ name, data string }{
		{"response.output_text.delta", `{"delta":`}, {"", `{"type":1}`}, {"", `[]`},
		{"response.completed", `nope`}, {"error", `"e"`},
	} {
		out, err := st.Event([]byte("keep"), []byte(c.name), []byte(c.data))
		if !errors.Is(err, respconv.ErrInvalid) || string(out) != "keep" {
			t.Fatalf("Event(%q, %q) = %q, %v; want ErrInvalid", c.name, c.data, out, err)
		}
	}
	// Invalid strings are skipped.
	out, err := st.Event(nil, []byte("response.output_text.delta"), []byte(`{"delta":"a\u00"}`))
	if err != nil || len(out) != 0 {
		t.Fatalf("got %q, %v", out, err)
	}
}

// Round trips through both streams keep text, reasoning and calls.
func TestRoundTrip(t *testing.T) {
	for _, name := range []string{"openai_chat_text.sse", "openai_chat_parallel_tool_calls_include_usage.sse", "azure_openai_chat_text_content_filter.sse"} {
		src := readFixture(t, name)
		want := sourceChat(t, src)
		c2r := respconv.NewChatToResponsesStream()
		mid, err := runStream(t, c2r, "alias", src, []int{5, 77})
		respconv.ReleaseStream(c2r)
		if err != nil {
			t.Fatal(err)
		}
		r2c := respconv.NewResponsesToChatStream()
		back, err := runStream(t, r2c, "alias", mid, []int{9, 1, 300}, includeUsage)
		respconv.ReleaseStream(r2c)
		if err != nil {
			t.Fatal(err)
		}
		got := checkChat(t, back, nil)
		if got.Text != want.Text || !reflect.DeepEqual(got.Calls, want.Calls) || !reflect.DeepEqual(got.Usage, want.Usage) {
			t.Fatalf("%s:\ngot  %+v\nwant %+v", name, got, want)
		}
	}
	for _, name := range []string{"openai_responses_text.sse", "openai_responses_function_call_legacy_no_seq.sse", "openai_responses_reasoning_then_function_call.sse"} {
		src := readFixture(t, name)
		want := sourceResponses(t, src)
		r2c := respconv.NewResponsesToChatStream()
		mid, err := runStream(t, r2c, "alias", src, nil, includeUsage)
		respconv.ReleaseStream(r2c)
		if err != nil {
			t.Fatal(err)
		}
		c2r := respconv.NewChatToResponsesStream()
		back, err := runStream(t, c2r, "alias", mid, nil)
		respconv.ReleaseStream(c2r)
		if err != nil {
			t.Fatal(err)
		}
		got := checkResponses(t, back, nil)
		if got.Text != want.Text || !reflect.DeepEqual(got.Calls, want.Calls) || !reflect.DeepEqual(got.Usage, want.Usage) {
			t.Fatalf("%s:\ngot  %+v\nwant %+v", name, got, want)
		}
	}
}
