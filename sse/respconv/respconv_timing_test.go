package respconv_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"gw/sse/rawjson"
	"gw/sse/respconv"
	"gw/sse/transcode"
)

// Sink keeps benchmark results alive.
var Sink atomic.Int64

type rawEvent struct{ name, data []byte }

// events pre-parses a stream so that benchmarks measure the transcoder only.
func events(tb testing.TB, stream []byte) []rawEvent {
	var out []rawEvent
	for _, ev := range parseSSE(tb, stream, nil) {
		out = append(out, rawEvent{[]byte(ev.Name), []byte(ev.Data)})
	}
	return out
}

// longChatStream is the recorded openai_chat_text.sse with its content
// chunks repeated to 200, plus its finish chunk and [DONE].
func longChatStream(tb testing.TB) []rawEvent {
	evs := events(tb, readFixture(tb, "openai_chat_text.sse"))
	first, content, tail := evs[0], evs[1:len(evs)-2], evs[len(evs)-2:]
	out := []rawEvent{first}
	for i := range 200 {
		out = append(out, content[i%len(content)])
	}
	return append(out, tail...)
}

// toolChatStream is the recorded parallel tool-call stream.
func toolChatStream(tb testing.TB) []rawEvent {
	return events(tb, readFixture(tb, "openai_chat_parallel_tool_calls_include_usage.sse"))
}

// longResponsesStream is the recorded openai_responses_text.sse with its
// text deltas repeated to 200.
func longResponsesStream(tb testing.TB) []rawEvent {
	evs := events(tb, readFixture(tb, "openai_responses_text.sse"))
	out := append([]rawEvent{}, evs[:4]...)
	for i := range 200 {
		out = append(out, evs[4+i%2])
	}
	return append(out, evs[6:]...)
}

var (
	benchAlias    = []byte("my-alias")
	benchAliasLit = []byte(`"alias"`)
)

var benchRequest = []byte(`{"model":"alias","input":"hi","tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}],"temperature":0.2}`)

func runEvents(tb testing.TB, st transcode.Stream, evs []rawEvent, dst []byte) ([]byte, int) {
	n := 0
	for _, ev := range evs {
		var err error
		dst, err = st.Event(dst[:0], ev.name, ev.data)
		if err != nil {
			tb.Fatalf("unexpected error: %s", err)
		}
		n += len(dst)
	}
	dst = st.End(dst[:0])
	return dst, n + len(dst)
}

func benchStream(b *testing.B, st transcode.Stream, evs []rawEvent, setup func(transcode.Stream)) {
	size := 0
	for _, ev := range evs {
		size += len(ev.data)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	dst := make([]byte, 0, 64<<10)
	total := 0
	for b.Loop() {
		st.Reset(benchAlias)
		if setup != nil {
			setup(st)
		}
		var n int
		dst, n = runEvents(b, st, evs, dst)
		total += n
	}
	Sink.Add(int64(total))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
}

func setRequest(st transcode.Stream) { st.(*respconv.ChatToResponses).SetRequest(benchRequest) }

func BenchmarkChatToResponsesText(b *testing.B) {
	st := respconv.NewChatToResponsesStream()
	defer respconv.ReleaseStream(st)
	benchStream(b, st, longChatStream(b), setRequest)
}

func BenchmarkChatToResponsesToolCalls(b *testing.B) {
	st := respconv.NewChatToResponsesStream()
	defer respconv.ReleaseStream(st)
	benchStream(b, st, toolChatStream(b), setRequest)
}

func BenchmarkResponsesToChatText(b *testing.B) {
	st := respconv.NewResponsesToChatStream()
	defer respconv.ReleaseStream(st)
	benchStream(b, st, longResponsesStream(b), includeUsage)
}

func BenchmarkResponsesToChatReasoningToolCall(b *testing.B) {
	st := respconv.NewResponsesToChatStream()
	defer respconv.ReleaseStream(st)
	benchStream(b, st, events(b, readFixture(b, "openai_responses_reasoning_then_function_call.sse")), includeUsage)
}

// BenchmarkChatToResponsesParallel runs one stream per goroutine, pooled.
func BenchmarkChatToResponsesParallel(b *testing.B) {
	evs := longChatStream(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		dst := make([]byte, 0, 64<<10)
		total := 0
		for pb.Next() {
			st := respconv.NewChatToResponsesStream()
			st.Reset(benchAlias)
			var n int
			dst, n = runEvents(b, st, evs, dst)
			respconv.ReleaseStream(st)
			total += n
		}
		Sink.Add(int64(total))
	})
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
}

// BenchmarkBaselinePassthroughChunk is what the same-format relay does per
// chunk (model rewritten with rawjson.Set), for comparison.
func BenchmarkBaselinePassthroughChunk(b *testing.B) {
	evs := longChatStream(b)
	alias := []byte(`"my-alias"`)
	dst := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		for _, ev := range evs {
			dst = append(dst[:0], "data: "...)
			dst, _ = rawjson.Set(dst, ev.data, "model", alias)
			dst = append(dst, "\n\n"...)
		}
	}
	Sink.Add(int64(len(dst)))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
}

var (
	benchRespReq = []byte(`{"model":"gpt-5","instructions":"Be terse.","stream":true,
 "input":[{"role":"user","content":"Weather in Oslo?"},
          {"type":"function_call","call_id":"call_a1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"},
          {"type":"function_call_output","call_id":"call_a1","output":"{\"temp_c\":4}"}],
 "tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}],
 "reasoning":{"effort":"low","summary":"auto"},"max_output_tokens":2048}`)
	benchChatReq = []byte(`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},
 "messages":[
  {"role":"developer","content":"Be terse."},
  {"role":"user","content":[{"type":"text","text":"Weather in Oslo?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO..."}}]},
  {"role":"assistant","content":null,"tool_calls":[{"id":"call_a1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
  {"role":"tool","tool_call_id":"call_a1","content":"{\"temp_c\":4}"}],
 "tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],
 "tool_choice":"auto","max_completion_tokens":512}`)
	benchChatResp = []byte(`{"id":"chatcmpl-9x","object":"chat.completion","created":1755137933,"model":"gpt-4o-2024-08-06",
 "choices":[{"index":0,"finish_reason":"tool_calls","logprobs":null,
   "message":{"role":"assistant","content":"Let me check.","refusal":null,"annotations":[],
     "tool_calls":[{"id":"call_b2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]}}],
 "usage":{"prompt_tokens":80,"completion_tokens":18,"total_tokens":98,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},
   "completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},
 "service_tier":"default","system_fingerprint":"fp_x"}`)
)

func benchBody(b *testing.B, in []byte, fn func(dst, in []byte) ([]byte, error)) {
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	dst := make([]byte, 0, 8192)
	for b.Loop() {
		var err error
		if dst, err = fn(dst[:0], in); err != nil {
			b.Fatal(err)
		}
	}
	Sink.Add(int64(len(dst)))
}

func BenchmarkResponsesRequestToChat(b *testing.B) {
	benchBody(b, benchRespReq, func(dst, in []byte) ([]byte, error) {
		return respconv.ResponsesRequestToChat(dst, in, respconv.RequestOptions{UpstreamModel: "gpt-4o"})
	})
}

func BenchmarkChatRequestToResponses(b *testing.B) {
	benchBody(b, benchChatReq, func(dst, in []byte) ([]byte, error) {
		return respconv.ChatRequestToResponses(dst, in, respconv.RequestOptions{UpstreamModel: "gpt-5"})
	})
}

func BenchmarkChatResponseToResponses(b *testing.B) {
	opt := respconv.ResponseOptions{Model: []byte("alias"), Request: benchRespReq}
	benchBody(b, benchChatResp, func(dst, in []byte) ([]byte, error) {
		dst, _, err := respconv.ChatResponseToResponses(dst, in, opt)
		return dst, err
	})
}

func BenchmarkResponsesResponseToChat(b *testing.B) {
	body := readFixture(b, "openai_responses_text.sse")
	i := strings.LastIndex(string(body), `"response":`)
	j := strings.LastIndex(string(body), `,"sequence_number"`)
	resp := body[i+len(`"response":`) : j]
	opt := respconv.ResponseOptions{Model: []byte("alias")}
	benchBody(b, resp, func(dst, in []byte) ([]byte, error) {
		dst, _, err := respconv.ResponsesResponseToChat(dst, in, opt)
		return dst, err
	})
}
