package respconv_test

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"gw/sse/respconv"
	"gw/sse/transcode"
)

// splits are the read sizes every fixture is streamed with: one piece, one
// byte at a time, odd sizes, and random ones.
func splits() [][]int {
	s := [][]int{nil, {1}, {7, 13, 1, 400}, {3, 1024, 2}}
	r := rand.New(rand.NewPCG(1, 2))
	for range 4 {
		var sz []int
		for range 16 {
			sz = append(sz, 1+r.IntN(300))
		}
		s = append(s, sz)
	}
	return s
}

// sourceChat reconstructs a recorded chat stream directly.
func sourceChat(tb testing.TB, stream []byte) transcript {
	tb.Helper()
	var tr transcript
	calls := map[int64]*callRec{}
	var order []int64
	for _, ev := range parseSSE(tb, stream, nil) {
		if ev.Data == "[DONE]" {
			continue
		}
		m := obj(tb, ev.Data)
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
			tr.Reasoning += str(get(d, "reasoning_content"))
			tcs, _ := get(d, "tool_calls").([]any)
			for _, tc := range tcs {
				k := num(get(tc, "index"))
				if calls[k] == nil {
					calls[k] = &callRec{}
					order = append(order, k)
				}
				if s := str(get(tc, "id")); s != "" {
					calls[k].ID = s
				}
				calls[k].Name += str(get(tc, "function", "name"))
				calls[k].Args += str(get(tc, "function", "arguments"))
			}
		}
	}
	for _, k := range order {
		tr.Calls = append(tr.Calls, *calls[k])
	}
	return tr
}

func TestChatToResponsesFixtures(t *testing.T) {
	f := func(name, finish string) {
		t.Helper()
		src := readFixture(t, name)
		want := sourceChat(t, src)
		want.Finish = finish
		st := respconv.NewChatToResponsesStream()
		defer respconv.ReleaseStream(st)
		for _, sizes := range splits() {
			out, err := runStream(t, st, "my-alias", src, sizes)
			if err != nil {
				t.Fatalf("%s %v: %s", name, sizes, err)
			}
			got := checkResponses(t, out, sizes)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s %v:\ngot  %+v\nwant %+v\n%s", name, sizes, got, want, out)
			}
			if !strings.Contains(string(out), `"model":"my-alias"`) || strings.Contains(string(out), "gpt-") {
				t.Fatalf("%s: the alias must replace the upstream model:\n%s", name, out)
			}
			u, ok := st.Usage()
			if ok != (want.Usage != nil) || (ok && (u.Prompt != want.Usage["input"] || u.Reasoning != want.Usage["reasoning"])) {
				t.Fatalf("%s: Usage() = %+v, %v; want %v", name, u, ok, want.Usage)
			}
			if !st.Started() || !st.(*respconv.ChatToResponses).Terminated() {
				t.Fatalf("%s: Started/Terminated false after a whole stream", name)
			}
			if again := st.End(nil); len(again) != 0 {
				t.Fatalf("%s: End after the terminal event wrote %q", name, again)
			}
		}
	}
	f("openai_chat_text.sse", "completed")
	f("openai_chat_parallel_tool_calls_include_usage.sse", "completed")
	f("openai_chat_include_usage_finish_length.sse", "incomplete/max_output_tokens")
	f("azure_openai_chat_text_content_filter.sse", "completed")
}

// chunk builds a chat chunk around a choice delta JSON (or a whole tail).
func chunk(delta, finish string) string {
	if finish == "" {
		finish = "null"
	} else {
		finish = `"` + finish + `"`
	}
	return `data: {"id":"chatcmpl-x1","object":"chat.completion.chunk","created":1700000000,"model":"up","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
}

func tc(index int, id, name, args string) string {
	s := `{"index":` + itoa(index)
	if id != "" {
		s += `,"id":"` + id + `","type":"function"`
	}
	s += `,"function":{`
	if name != "" {
		s += `"name":"` + name + `",`
	}
	return s + `"arguments":` + quote(args) + `}}`
}

func quote(s string) string {
	b, _ := jsonMarshal(s)
	return string(b)
}

const usageChunk = `data: {"id":"chatcmpl-x1","object":"chat.completion.chunk","created":1700000000,"model":"up","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":30,"total_tokens":80,"prompt_tokens_details":{"cached_tokens":20},"completion_tokens_details":{"reasoning_tokens":12}}}` + "\n\n"

func TestChatToResponsesMappings(t *testing.T) {
	usage := map[string]int64{"input": 50, "output": 30, "total": 80, "cached": 20, "reasoning": 12}
	f := func(name, stream string, want transcript) {
		t.Helper()
		st := respconv.NewChatToResponsesStream()
		defer respconv.ReleaseStream(st)
		for _, sizes := range splits() {
			out, err := runStream(t, st, "alias", []byte(stream), sizes)
			if err != nil {
				t.Fatalf("%s: %s", name, err)
			}
			got := checkResponses(t, out, nil)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s %v:\ngot  %+v\nwant %+v\n%s", name, sizes, got, want, out)
			}
		}
	}
	role := chunk(`{"role":"assistant","content":""}`, "")
	f("text, usage with cached and reasoning tokens",
		role+chunk(`{"content":"Hel"}`, "")+chunk(`{"content":"lo \"q\" \u00e9\n"}`, "")+chunk(`{}`, "stop")+usageChunk+"data: [DONE]\n\n",
		transcript{Text: "Hello \"q\" é\n", Finish: "completed", Usage: usage})
	f("reasoning then text",
		role+chunk(`{"reasoning_content":"Think"}`, "")+chunk(`{"reasoning_content":"ing."}`, "")+chunk(`{"content":"Answer"}`, "")+chunk(`{}`, "stop")+usageChunk+"data: [DONE]\n\n",
		transcript{Reasoning: "Thinking.", Text: "Answer", Finish: "completed", Usage: usage})
	f("reasoning as a string delta.reasoning, then a function call",
		role+chunk(`{"reasoning":"plan"}`, "")+chunk(`{"tool_calls":[`+tc(0, "call_1", "f", "")+`]}`, "")+chunk(`{"tool_calls":[`+tc(0, "", "", `{"a":1}`)+`]}`, "")+chunk(`{}`, "tool_calls")+"data: [DONE]\n\n",
		transcript{Reasoning: "plan", Calls: []callRec{{"call_1", "f", `{"a":1}`}}, Finish: "completed"})
	f("text then parallel calls, one without arguments",
		role+chunk(`{"content":"Let me check."}`, "")+
			chunk(`{"tool_calls":[`+tc(0, "call_A", "get_weather", "")+`]}`, "")+
			chunk(`{"tool_calls":[`+tc(0, "", "", `{"ci`)+`]}`, "")+
			chunk(`{"tool_calls":[`+tc(0, "", "", `ty":"Oslo"}`)+`]}`, "")+
			chunk(`{"tool_calls":[`+tc(1, "call_B", "get_time", "")+`]}`, "")+
			chunk(`{}`, "tool_calls")+usageChunk+"data: [DONE]\n\n",
		transcript{Text: "Let me check.", Calls: []callRec{{"call_A", "get_weather", `{"city":"Oslo"}`}, {"call_B", "get_time", "{}"}}, Finish: "completed", Usage: usage})
	f("all call headers first, then the arguments of each",
		role+chunk(`{"tool_calls":[`+tc(0, "call_A", "a", "")+`,`+tc(1, "call_B", "b", "")+`]}`, "")+
			chunk(`{"tool_calls":[`+tc(0, "", "", `{"x":`)+`]}`, "")+
			chunk(`{"tool_calls":[`+tc(0, "", "", `1}`)+`]}`, "")+
			chunk(`{"tool_calls":[`+tc(1, "", "", `{"y":2}`)+`]}`, "")+
			chunk(`{}`, "tool_calls")+"data: [DONE]\n\n",
		transcript{Calls: []callRec{{"call_A", "a", `{"x":1}`}, {"call_B", "b", `{"y":2}`}}, Finish: "completed"})
	f("interleaved argument fragments",
		role+chunk(`{"tool_calls":[`+tc(0, "call_A", "a", `{"x":`)+`]}`, "")+
			chunk(`{"tool_calls":[`+tc(1, "call_B", "b", `{"y":`)+`]}`, "")+
			chunk(`{"tool_calls":[`+tc(0, "", "", `1}`)+`]}`, "")+
			chunk(`{"tool_calls":[`+tc(1, "", "", `2}`)+`]}`, "")+
			chunk(`{"tool_calls":[`+tc(2, "call_C", "c", `{}`)+`]}`, "")+
			chunk(`{}`, "tool_calls")+"data: [DONE]\n\n",
		transcript{Calls: []callRec{{"call_A", "a", `{"x":1}`}, {"call_B", "b", `{"y":2}`}, {"call_C", "c", `{}`}}, Finish: "completed"})
	f("whole calls in one chunk, without index",
		role+`data: {"id":"c","choices":[{"delta":{"tool_calls":[{"id":"call_A","function":{"name":"a","arguments":"{\"q\":1}"}},{"id":"call_B","function":{"name":"b","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`+"\n\n"+"data: [DONE]\n\n",
		transcript{Calls: []callRec{{"call_A", "a", `{"q":1}`}, {"call_B", "b", `{}`}}, Finish: "completed"})
	f("refusal",
		role+chunk(`{"refusal":"I can't"}`, "")+chunk(`{"refusal":" help."}`, "")+chunk(`{}`, "stop")+"data: [DONE]\n\n",
		transcript{Refusal: "I can't help.", Finish: "completed"})
	f("finish length cuts the text",
		role+chunk(`{"content":"abc"}`, "")+chunk(`{}`, "length")+usageChunk+"data: [DONE]\n\n",
		transcript{Text: "abc", Finish: "incomplete/max_output_tokens", Usage: usage})
	f("content_filter",
		role+chunk(`{"content":"x"}`, "")+chunk(`{}`, "content_filter")+"data: [DONE]\n\n",
		transcript{Text: "x", Finish: "incomplete/content_filter"})
	f("usage on the finish chunk, no [DONE] (End closes)",
		role+chunk(`{"content":"x"}`, "")+strings.Replace(chunk(`{}`, "stop"), `]}`, `],"usage":{"prompt_tokens":5,"completion_tokens":1}}`, 1),
		transcript{Text: "x", Finish: "completed", Usage: map[string]int64{"input": 5, "output": 1, "total": 6, "cached": 0, "reasoning": 0}})
	f("keep-alive comments and unknown fields",
		": ping\n\n"+role+`data: {"id":"chatcmpl-x1","choices":[{"index":0,"delta":{"content":"a","extra":{"k":[1,2]}},"logprobs":null,"finish_reason":null}],"obfuscation":"zz"}`+"\n\n"+chunk(`{}`, "stop")+"data: [DONE]\n\n",
		transcript{Text: "a", Finish: "completed"})
	f("only [DONE]", "data: [DONE]\n\n", transcript{Finish: "completed"})
}

func TestChatToResponsesEcho(t *testing.T) {
	st := respconv.NewChatToResponsesStream()
	defer respconv.ReleaseStream(st)
	st.Reset([]byte(`"alias"`))
	req := `{"model":"m","input":"hi","instructions":"Be\nterse.",
	  "tools":[ {"type":"function","name":"f","parameters":{"type":"object"}} ],
	  "tool_choice":"required","temperature":0.5,"top_p":null,"metadata":{"k":"v"},"parallel_tool_calls":false,
	  "text":{"format":{"type":"json_object"}},"reasoning":{"effort":"low","summary":"auto"},"max_output_tokens":99,"user":"u1"}`
	st.(*respconv.ChatToResponses).SetRequest([]byte(req))
	out, _ := st.Event(nil, nil, []byte(`{"id":"chatcmpl-abc","created":5,"choices":[{"index":0,"delta":{"content":"x"}}]}`))
	out = st.End(out)
	evs := parseSSE(t, out, nil)
	r := get(obj(t, evs[len(evs)-1].Data), "response").(map[string]any)
	want := map[string]any{
		"id": "resp_abc", "model": "alias", "instructions": "Be\nterse.", "tool_choice": "required",
		"parallel_tool_calls": false, "user": "u1", "store": false, "previous_response_id": nil,
	}
	for k, v := range want {
		if !reflect.DeepEqual(r[k], v) {
			t.Fatalf("%s = %#v; want %#v", k, r[k], v)
		}
	}
	if num(r["max_output_tokens"]) != 99 || num(r["created_at"]) != 5 || str(get(r, "text", "format", "type")) != "json_object" ||
		str(get(r, "reasoning", "effort")) != "low" || str(get(r, "metadata", "k")) != "v" || get(r, "top_p").(interface{ String() string }).String() != "1.0" {
		t.Fatalf("bad echo: %v", r)
	}
	if tools := r["tools"].([]any); len(tools) != 1 || str(get(tools[0], "name")) != "f" {
		t.Fatalf("tools = %v", r["tools"])
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "data: ") {
			obj(t, line[len("data: "):]) // every event fits one data line
		}
	}
}

func TestChatToResponsesFailures(t *testing.T) {
	f := func(name, stream string, fail func(transcode.Stream, []byte) []byte, wantErr error, wantCode, wantMsg string, text string) {
		t.Helper()
		st := respconv.NewChatToResponsesStream()
		defer respconv.ReleaseStream(st)
		st.Reset([]byte("alias"))
		var out []byte
		var err error
		for _, ev := range parseSSE(t, []byte(stream), nil) {
			if out, err = st.Event(out, []byte(ev.Name), []byte(ev.Data)); err != nil {
				break
			}
		}
		if !errors.Is(err, wantErr) {
			t.Fatalf("%s: err = %v; want %v", name, err, wantErr)
		}
		if fail != nil {
			out = fail(st, out)
		}
		if more := st.Fail(nil, transcode.CodeServerError, "again"); len(more) != 0 {
			t.Fatalf("%s: Fail after the terminal event wrote %q", name, more)
		}
		got := checkResponses(t, out, nil)
		if got.Finish != "failed" || got.ErrCode != wantCode || got.ErrMsg != wantMsg || got.Text != text {
			t.Fatalf("%s: got %+v; want code %q message %q text %q\n%s", name, got, wantCode, wantMsg, text, out)
		}
	}
	role := chunk(`{"role":"assistant","content":""}`, "")
	errFrame := func(body string) string { return "data: " + body + "\n\n" }
	f("upstream context length error mid-text", role+chunk(`{"content":"par"}`, "")+
		errFrame(`{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":null,"code":null}}`),
		nil, respconv.ErrUpstreamFailed, "context_length_exceeded", "This model's maximum context length is 8192 tokens.", "par")
	f("upstream server error before any chunk", errFrame(`{"error":{"message":"boom","type":"server_error"}}`),
		nil, respconv.ErrUpstreamFailed, "server_is_overloaded", "boom", "")
	f("upstream quota", role+errFrame(`{"error":{"message":"q","type":"insufficient_quota","code":"insufficient_quota"}}`),
		nil, respconv.ErrUpstreamFailed, "insufficient_quota", "q", "")
	f("edge timeout mid-call", role+chunk(`{"tool_calls":[`+tc(0, "call_1", "f", `{"a"`)+`]}`, ""),
		func(st transcode.Stream, out []byte) []byte {
			return st.Fail(out, transcode.CodeTimeout, "the upstream stream stalled")
		}, nil, "server_is_overloaded", "the upstream stream stalled", "")
	for _, c := range []struct{ in, want string }{
		{transcode.CodeRateLimit, "rate_limit_exceeded"}, {transcode.CodeSlowDown, "slow_down"},
		{transcode.CodeInvalidPrompt, "invalid_prompt"}, {transcode.CodeOverloaded, "server_is_overloaded"},
		{transcode.CodeUpstreamStreamFail, "server_is_overloaded"},
	} {
		f("Fail "+c.in, role+chunk(`{"content":"a"}`, ""), func(st transcode.Stream, out []byte) []byte {
			return st.Fail(out, c.in, "m\n\"x\"")
		}, nil, c.want, "m\n\"x\"", "a")
	}
	f("Fail before anything", "", func(st transcode.Stream, out []byte) []byte {
		return st.Fail(out, transcode.CodeRateLimit, "slow")
	}, nil, "rate_limit_exceeded", "slow", "")
}

func TestChatToResponsesMalformed(t *testing.T) {
	st := respconv.NewChatToResponsesStream()
	defer respconv.ReleaseStream(st)
	st.Reset(nil)
	out, err := st.Event([]byte("x"), nil, []byte(`{"id":"c","choices":[{"delta":{"content":"a"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	n := len(out)
	for _, bad := range []string{``, `{`, `[1]`, `"s"`, `{"choices":[{"delta":{"content":"a}}]}`, `{"a":1}}`} {
		out2, err := st.Event(out, nil, []byte(bad))
		if bad == `{"choices":[{"delta":{"content":"a}}]}` {
			continue // lenient scan: the unterminated string makes the chunk malformed either way
		}
		if !errors.Is(err, respconv.ErrInvalid) || len(out2) != n {
			t.Fatalf("Event(%q) = %d bytes, %v; want ErrInvalid and dst unchanged", bad, len(out2)-n, err)
		}
	}
	// Invalid strings inside a valid-looking chunk are ignored.
	out, err = st.Event(out, nil, []byte(`{"choices":[{"delta":{"content":"a\x01b","refusal":"\q"}}]}`))
	if err != nil || len(out) != n {
		t.Fatalf("invalid strings: %v, %q", err, out[n:])
	}
	out = st.End(out)
	checkResponses(t, out[1:], nil)
}
