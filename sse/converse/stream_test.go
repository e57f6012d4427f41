package converse

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"

	"gw/sse"
	"gw/sse/eventstream"
	"gw/sse/respconv"
	"gw/sse/transcode"
)

const fixture = "../testdata/bedrock_converse_stream_text_then_tool_use.eventstream"

func frame(dst []byte, typ, payload string) []byte {
	return eventstream.AppendMessage(dst, []eventstream.Header{
		{Name: ":event-type", Value: typ}, {Name: ":content-type", Value: "application/json"}, {Name: ":message-type", Value: "event"},
	}, []byte(payload))
}

func exception(dst []byte, typ, payload string) []byte {
	return eventstream.AppendMessage(dst, []eventstream.Header{
		{Name: ":exception-type", Value: typ}, {Name: ":content-type", Value: "application/json"}, {Name: ":message-type", Value: "exception"},
	}, []byte(payload))
}

// convert runs a binary stream through Source and ToChatStream as the edge
// does (End after a clean end, nothing after an exception).
func convert(t *testing.T, body []byte) (string, *ToChatStream) {
	t.Helper()
	src := AcquireSource(bytes.NewReader(body))
	defer ReleaseSource(src)
	s := AcquireToChatStream([]byte("alias"))
	var out []byte
	for {
		ev, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if out, err = s.Event(out, ev.Name, ev.Data); err != nil {
			t.Fatal(err)
		}
	}
	if s.Err() == nil {
		out = s.End(out)
	}
	return generated(string(out)), s
}

func generated(s string) string {
	for {
		i := strings.Index(s, "chatcmpl-gw")
		if i < 0 {
			return s
		}
		j := i + len("chatcmpl-gw")
		k := j
		for k < len(s) && strings.IndexByte("0123456789abcdef", s[k]) >= 0 {
			k++
		}
		s = s[:i] + "ID" + s[k:]
	}
}

func TestStreamReasoningAndUsage(t *testing.T) {
	var b []byte
	b = frame(b, "messageStart", `{"p":"ab","role":"assistant"}`)
	b = frame(b, "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"hmm"}}}`)
	b = frame(b, "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"sig"}}}`)
	b = frame(b, "contentBlockStop", `{"contentBlockIndex":0}`)
	b = frame(b, "contentBlockDelta", `{"contentBlockIndex":1,"delta":{"text":"Hi \u00e9"}}`)
	b = frame(b, "contentBlockStart", `{"contentBlockIndex":2,"start":{"toolUse":{"toolUseId":"t1","name":"a"}}}`)
	b = frame(b, "contentBlockStop", `{"contentBlockIndex":2}`)
	b = frame(b, "contentBlockStart", `{"contentBlockIndex":3,"start":{"toolUse":{"toolUseId":"t2","name":"b"}}}`)
	b = frame(b, "contentBlockDelta", `{"contentBlockIndex":3,"delta":{"toolUse":{"input":"{\"x\""}}}`)
	b = frame(b, "contentBlockDelta", `{"contentBlockIndex":3,"delta":{"toolUse":{"input":":1}"}}}`)
	b = frame(b, "contentBlockStop", `{"contentBlockIndex":3}`)
	b = frame(b, "contentBlockDelta", `{"contentBlockIndex":4,"delta":{"reasoningContent":{"redactedContent":"UkVE"}}}`)
	b = frame(b, "contentBlockDelta", `{"contentBlockIndex":5,"delta":{"text":"after"}}`)
	b = frame(b, "messageStop", `{"stopReason":"tool_use"}`)
	b = frame(b, "someFutureEvent", `{"x":1}`)
	b = frame(b, "metadata", `{"usage":{"inputTokens":10,"outputTokens":5,"totalTokens":15,"cacheReadInputTokens":4,"cacheWriteInputTokens":2},"metrics":{"latencyMs":1}}`)
	got, s := convert(t, b)
	for _, want := range []string{
		`"delta":{"reasoning_content":"hmm"}`,
		`"delta":{"thinking_blocks":[{"type":"thinking","thinking":"","signature":"sig"}]}`,
		`"delta":{"content":"Hi é"}`,
		`"delta":{"thinking_blocks":[{"type":"redacted_thinking","data":"UkVE"}]}`,
		`"delta":{"content":"\n\n"}`,
		`{"index":0,"id":"t1","type":"function","function":{"name":"a","arguments":""}}`,
		`{"index":0,"function":{"arguments":"{}"}}`,
		`{"index":1,"id":"t2","type":"function","function":{"name":"b","arguments":""}}`,
		`{"index":1,"function":{"arguments":"{\"x\""}}`,
		`"finish_reason":"tool_calls"`,
		`"usage":{"prompt_tokens":16,"completion_tokens":5,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":4,"cache_write_tokens":2}}`,
		"data: [DONE]\n\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %s in\n%s", want, got)
		}
	}
	if i := strings.Index(got, `"delta":{"content":"\n\n"}`); i < 0 || strings.Index(got, `"content":"after"`) < i || strings.Count(got, `"\n\n"`) != 1 {
		t.Error("the text after a tool block is not one separated paragraph")
	}
	if u, ok := s.Usage(); !ok || u != (transcode.Usage{Prompt: 16, Completion: 5, Total: 21, Cached: 4, CacheCreation: 2}) {
		t.Errorf("usage %+v %v", u, ok)
	}
	ReleaseToChatStream(s)
}

func TestStreamExceptions(t *testing.T) {
	f := func(name string, body []byte, status int, wantFrame string, started bool) {
		t.Helper()
		got, s := convert(t, body)
		defer ReleaseToChatStream(s)
		if s.Err() == nil || s.ErrStatus() != status {
			t.Fatalf("%s: err %v status %d; want status %d", name, s.Err(), s.ErrStatus(), status)
		}
		if !strings.Contains(got, wantFrame) || strings.Contains(got, "[DONE]") {
			t.Fatalf("%s: got\n%s\nwant the frame %s and no [DONE]", name, got, wantFrame)
		}
		if s.Started() != started {
			t.Fatalf("%s: Started %v", name, s.Started())
		}
	}
	start := frame(nil, "messageStart", `{"role":"assistant"}`)
	f("throttling before content", exception(bytes.Clone(start), "throttlingException", `{"message":"Too many requests, please wait before trying again."}`), 429,
		`data: {"error":{"message":"Too many requests, please wait before trying again.","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`, false)
	mid := frame(bytes.Clone(start), "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"par"}}`)
	f("model stream error mid-stream", exception(mid, "modelStreamErrorException", `{"message":"boom","originalStatusCode":500}`), 502,
		`"code":"upstream_stream_error"`, true)
	f("validation", exception(nil, "validationException", `{"message":"bad"}`), 400, `"type":"invalid_request_error"`, false)
	f("service unavailable", exception(nil, "serviceUnavailableException", `{"message":"later"}`), 503, `"code":"server_is_overloaded"`, false)
	unmodeled := eventstream.AppendMessage(nil, []eventstream.Header{
		{Name: ":message-type", Value: "error"}, {Name: ":error-code", Value: "InternalFailure"}, {Name: ":error-message", Value: "it broke"},
	}, nil)
	f("unmodeled error", unmodeled, 502, `"message":"it broke"`, false)
}

func TestStreamMalformed(t *testing.T) {
	s := AcquireToChatStream([]byte("a"))
	defer ReleaseToChatStream(s)
	if _, err := s.Event(nil, []byte("contentBlockDelta"), []byte("{not json")); !errors.Is(err, ErrMalformedEvent) {
		t.Fatalf("got %v", err)
	}
}

// TestStreamAllocs: 0 allocations per relayed event, decode and transcode.
func TestStreamAllocs(t *testing.T) {
	body, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	r := bytes.NewReader(body)
	src := AcquireSource(r)
	s := AcquireToChatStream([]byte("alias-model"))
	out := make([]byte, 0, 64<<10)
	run := func() {
		r.Reset(body)
		src.dec.Reset(r)
		s.Reset([]byte("alias-model"))
		out = out[:0]
		for {
			ev, err := src.Next()
			if err != nil {
				break
			}
			out, _ = s.Event(out, ev.Name, ev.Data)
		}
		out = s.End(out)
	}
	run()
	if a := testing.AllocsPerRun(50, run); a != 0 {
		t.Fatalf("got %v allocations per stream of 26 events; want 0", a)
	}
}

// BenchmarkDecodeTranscode is the per-event cost of a relayed Bedrock
// event, for each caller format: event-stream decode (both CRCs) and
// conversion to chat chunks; Messages and Responses callers get them on
// through the edge's second stage (msgconv, respconv), fed one chat frame
// at a time as edge/stream.go does. ns/event and cpu-ns/event are per
// Bedrock event (the figure to hold under 1 µs); cpu-ns/event is the
// process's CPU time, which on a shared machine mostly leaves out the time
// other processes hold the core.
func BenchmarkDecodeTranscode(b *testing.B) {
	body, err := os.ReadFile(fixture)
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range goldenDirections {
		b.Run(strings.TrimPrefix(d.name, "converse_to_"), func(b *testing.B) {
			benchDecodeTranscode(b, body, d.caller)
		})
	}
}

func benchDecodeTranscode(b *testing.B, body []byte, caller callerStage) {
	r := bytes.NewReader(body)
	src := AcquireSource(r)
	defer ReleaseSource(src)
	s := AcquireToChatStream([]byte(goldenAlias))
	defer ReleaseToChatStream(s)
	var conv transcode.Stream
	if caller != nil {
		c, release := caller()
		defer release()
		conv = c
	}
	alias := []byte(goldenAlias)
	chat := make([]byte, 0, 16<<10)
	out := make([]byte, 0, 64<<10)
	// feed hands the chat frames in chat to the caller stage (or keeps them).
	feed := func(out []byte) []byte {
		if conv == nil {
			return append(out, chat...)
		}
		for f := chat; len(f) > 0; {
			end := bytes.Index(f, frameSep)
			if end < 0 {
				end = len(f)
			}
			data := bytes.TrimPrefix(f[:end], dataPrefix)
			f = f[min(end+len(frameSep), len(f)):]
			out, _ = conv.Event(out, nil, data)
			if sse.IsDone(data) {
				out = conv.End(out)
			}
		}
		return out
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	events := 0
	cpu0 := cpuTime(b)
	for b.Loop() {
		r.Reset(body)
		src.dec.Reset(r)
		s.Reset(alias)
		if conv != nil {
			conv.Reset(alias)
			if rc, ok := conv.(*respconv.ChatToResponses); ok {
				rc.SetRequest(nil)
			}
		}
		out = out[:0]
		for {
			ev, err := src.Next()
			if err != nil {
				break
			}
			events++
			chat, _ = s.Event(chat[:0], ev.Name, ev.Data)
			out = feed(out)
		}
		chat = s.End(chat[:0])
		out = feed(out)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(events), "cpu-ns/event")
}

// cpuTime is the process's CPU time (user + system) in nanoseconds.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("cannot read the CPU time: %v", err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

var (
	frameSep   = []byte("\n\n")
	dataPrefix = []byte("data: ")
)
