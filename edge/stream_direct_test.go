//go:build !race

package edge

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/sse/gemini"
	"gw/sse/msgconv"
	"gw/sse/respconv"
	"gw/sse/transcode"
)

// (Built without -race, as vertexProxy: the raw-socket upstream is off
// under -race.)

// fixtureFrames splits an SSE fixture into its events, one upstream chunk
// each.
func fixtureFrames(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f [][]byte
	for _, e := range strings.SplitAfter(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n\n") {
		if strings.TrimSpace(e) != "" {
			f = append(f, []byte(e))
		}
	}
	return f
}

// streamCall runs one streaming call of path with body through p and returns
// its status and everything the caller got.
func streamCall(t *testing.T, p *Proxy, path, body string) (int, string) {
	t.Helper()
	ctx := new(fasthttp.RequestCtx)
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI(path)
	ctx.Request.Header.Set("Authorization", "Bearer caller-key")
	ctx.Request.SetBody([]byte(body))
	p.Handle(ctx)
	status := ctx.Response.StatusCode()
	if !ctx.Response.IsBodyStream() {
		return status, string(ctx.Response.Body())
	}
	var out bytes.Buffer
	if _, err := ctx.Response.BodyStream().(io.WriterTo).WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	ctx.Response.ResetBody()
	return status, out.String()
}

// unstable are the members that differ between two runs of one stream:
// timestamps, synthesised tool-call ids.
var unstable = regexp.MustCompile(`"created(_at)?":\d+|call_[0-9a-f]+|toolu_gw[0-9a-f]+`)

// TestDirectChainMatchesChained: Messages and Responses callers of a Gemini
// upstream get the same status and the same events whether the Gemini
// converter feeds the second stage directly or through chat chunks: text,
// tool calls with thought signatures, thinking and parallel calls, a
// safety finish, a blocked prompt, an error after content, an error before
// any content (answered with a status, not a stream) and an empty stream.
func TestDirectChainMatchesChained(t *testing.T) {
	streams := map[string][][]byte{
		"text":          geminiFrames(5),
		"recorded_text": fixtureFrames(t, "../sse/testdata/gemini_stream_text.sse"),
		"function_call": fixtureFrames(t, "../sse/testdata/gemini_stream_function_call.sse"),
		"thinking":      fixtureFrames(t, "../sse/gemini/testdata/synthetic_thinking_parallel_calls.sse"),
		"safety":        fixtureFrames(t, "../sse/gemini/testdata/synthetic_safety_finish.sse"),
		"blocked":       fixtureFrames(t, "../sse/gemini/testdata/synthetic_prompt_blocked.sse"),
		"error_mid":     fixtureFrames(t, "../sse/gemini/testdata/synthetic_error_mid_stream.sse"),
		"error_first":   {[]byte(`data: {"error": {"code": 429,"message": "Quota exceeded.","status": "RESOURCE_EXHAUSTED"}}` + "\n\n")},
		"no_finish":     {[]byte(`data: {"candidates": [{"content": {"parts": [{"text": "cut"}],"role": "model"}}],"responseId": "r9"}` + "\n\n")},
		"empty":         {[]byte(`data: {"candidates": [{"content": {"parts": [{"text": ""}],"role": "model"}}],"responseId": "r0"}` + "\n\n")},
	}
	callers := []struct{ path, body, want string }{
		{"/v1/messages", `{"model":"gpt","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`, "event: message_start"},
		{"/v1/responses", `{"model":"gpt","stream":true,"input":"hi"}`, "event: response.created"},
	}
	defer func() { noDirect = false }()
	for name, frames := range streams {
		p := vertexProxy(t, startRawUpstream(t, writeBurst, frames))
		for _, c := range callers {
			t.Run(name+c.path, func(t *testing.T) {
				noDirect = true
				wantStatus, want := streamCall(t, p, c.path, c.body)
				noDirect = false
				gotStatus, got := streamCall(t, p, c.path, c.body)
				if gotStatus != wantStatus || unstable.ReplaceAllString(got, "X") != unstable.ReplaceAllString(want, "X") {
					t.Fatalf("direct: %d\n%s\nchained: %d\n%s", gotStatus, got, wantStatus, want)
				}
				if name != "error_first" && name != "empty" && !strings.Contains(got, c.want) {
					t.Fatalf("not a %s stream: %d\n%s", c.path, gotStatus, got)
				}
			})
		}
	}
}

// TestDirectChainChosen: the direct chain is set up for a Gemini converter
// and a Messages or Responses second stage, and not with an output policy.
func TestDirectChainChosen(t *testing.T) {
	up := gemini.AcquireToChatStream([]byte("m"))
	defer gemini.ReleaseToChatStream(up)
	m := msgconv.AcquireChatToMessagesStream([]byte("m"))
	defer msgconv.ReleaseChatToMessagesStream(m)
	r := respconv.NewChatToResponsesStream()
	defer respconv.ReleaseStream(r)
	c := new(call)
	for _, conv := range []transcode.Stream{m, r} {
		s := &relayState{up: up, conv: conv}
		if s.directChain(c) == nil {
			t.Fatalf("no direct chain for %T", conv)
		}
		s.gs = &c.g.cs
		if s.directChain(c) != nil {
			t.Fatalf("a direct chain with an output policy (%T)", conv)
		}
	}
}

// TestGeminiDirectRelayAllocsPerEvent: the direct chain stays at 0
// allocations per relayed Gemini event for Messages and Responses callers.
func TestGeminiDirectRelayAllocsPerEvent(t *testing.T) {
	for _, c := range []struct{ path, body, want string }{
		{"/v1/messages", `{"model":"gpt","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`, `"text":"tok`},
		{"/v1/responses", `{"model":"gpt","stream":true,"input":"hi"}`, `"delta":"tok`},
	} {
		ctx := new(fasthttp.RequestCtx)
		var w countingWriter
		w.buf.Grow(256 << 10)
		once := func(p *Proxy) {
			ctx.Request.Reset()
			ctx.Response.Reset()
			ctx.Request.Header.SetMethod("POST")
			ctx.Request.SetRequestURI(c.path)
			ctx.Request.Header.Set("Authorization", "Bearer caller-key")
			ctx.Request.SetBodyString(c.body)
			w.buf.Reset()
			if !p.Handle(ctx) || ctx.Response.StatusCode() != 200 || !ctx.Response.IsBodyStream() {
				t.Fatalf("stream not committed: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
			}
			if _, err := ctx.Response.BodyStream().(io.WriterTo).WriteTo(&w); err != nil {
				t.Fatal(err)
			}
			ctx.Response.ResetBody()
		}
		perStream := func(events int) float64 {
			p := vertexProxy(t, startRawUpstream(t, writeBurst, geminiFrames(events)))
			for i := 0; i < 20; i++ {
				once(p)
			}
			if got := strings.Count(w.buf.String(), c.want); got != events {
				t.Fatalf("%s: %d text events relayed; want %d:\n%s", c.path, got, events, w.buf.String())
			}
			return testing.AllocsPerRun(100, func() { once(p) })
		}
		short, long := perStream(20), perStream(200)
		if perEvent := (long - short) / 180; perEvent > 0.02 {
			t.Fatalf("%s: a 20-event stream allocates %.1f, a 200-event one %.1f: %.3f per event; want 0", c.path, short, long, perEvent)
		}
		t.Logf("%s: allocations per stream: %.1f (20 events), %.1f (200 events)", c.path, short, long)
	}
}
