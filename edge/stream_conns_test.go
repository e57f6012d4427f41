package edge

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"gw/admin/snapshot"
	"gw/perf/mock"
)

// countingListener counts the connections the upstream accepts: every
// accept is one dial by gw.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// startCountingMock serves the mock upstream behind a counting listener.
func startCountingMock(tb testing.TB, cfg mock.Config) (string, *countingListener) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	cfg.RecordLimit = -1
	m := mock.New(cfg)
	go m.Serve(cl)
	tb.Cleanup(func() { m.Shutdown() })
	return "http://" + ln.Addr().String(), cl
}

// connsProxy serves a chat model on an OpenAI key (chat and native
// Responses streams) and a Claude model on an Anthropic key (native
// Messages streams, and chat callers converted to messages upstream).
func connsProxy(tb testing.TB, base string) *Proxy {
	tb.Helper()
	env := map[string]string{"K": "sk-upstream", "CALLER": "caller-key", "BASE": base}
	src := `_format_version: "1"
provider_keys:
  - display_name: oa
    provider: openai
    api_key: ${K}
    api_base: ${BASE}/v1
  - display_name: an
    provider: anthropic
    api_key: ${K}
    api_base: ${BASE}/v1
api_keys:
  - display_name: caller
    key_env: CALLER
    allowed_models: ["*"]
models:
  - {display_name: gpt, provider: openai, model_name: gpt-4o, provider_key: oa}
  - {display_name: claude, provider: anthropic, model_name: claude-sonnet-4-5, provider_key: an}
`
	s := compileFile(tb, src, env)
	h := &snapshot.Holder{}
	h.Store(s)
	return &Proxy{Holder: h}
}

// TestStreamsReuseUpstreamConnections runs 1,000 sequential streams of each
// kind to one upstream the way fasthttp serves them (WriteTo, then the
// close) and counts the upstream's accepted connections: a stream that ends
// cleanly must return its connection to the keep-alive pool, so the whole
// run needs about one dial, not one per stream.
func TestStreamsReuseUpstreamConnections(t *testing.T) {
	const streams = 1000
	for _, tc := range []struct {
		name, path, body, last string
	}{
		{"chat", "/v1/chat/completions", `{"model":"gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "data: [DONE]"},
		{"chat to messages upstream", "/v1/chat/completions", `{"model":"claude","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "data: [DONE]"},
		{"native messages", "/v1/messages", `{"model":"claude","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`, "event: message_stop"},
		{"native responses", "/v1/responses", `{"model":"gpt","stream":true,"input":"hi"}`, "response.completed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, ln := startCountingMock(t, mock.Config{})
			p := connsProxy(t, base)
			var out bytes.Buffer
			w := bufio.NewWriter(&out)
			for i := 0; i < streams; i++ {
				ctx := new(fasthttp.RequestCtx)
				ctx.Request.Header.SetMethod("POST")
				ctx.Request.SetRequestURI(tc.path)
				ctx.Request.Header.Set("Authorization", "Bearer caller-key")
				ctx.Request.Header.Set("anthropic-version", "2023-06-01")
				ctx.Request.SetBodyString(tc.body)
				if !p.Handle(ctx) || ctx.Response.StatusCode() != 200 || !ctx.Response.IsBodyStream() {
					t.Fatalf("stream %d not committed: %d %s", i, ctx.Response.StatusCode(), ctx.Response.Body())
				}
				out.Reset()
				if err := ctx.Response.Write(w); err != nil { // WriteTo, then CloseWithError
					t.Fatalf("stream %d: %v", i, err)
				}
				w.Flush()
				if !strings.Contains(out.String(), tc.last) {
					t.Fatalf("stream %d incomplete:\n%s", i, out.String())
				}
			}
			if n := ln.accepted.Load(); n > 2 {
				t.Fatalf("%d streams dialled %d upstream connections; want 1 (2 at most)", streams, n)
			}
		})
	}
}

// TestAbandonedStreamClosesUpstreamConnection: a stream the caller leaves
// before its end must not return a half-read connection to the pool (the
// next request would read the rest of the old stream): its connection is
// closed and the next stream dials a new one.
func TestAbandonedStreamClosesUpstreamConnection(t *testing.T) {
	base, ln := startCountingMock(t, mock.Config{})
	p := connsProxy(t, base+"/knobs/chunks=50,chunk_delay=2ms")
	for i := 0; i < 3; i++ {
		ctx := startStream(t, p)
		if _, err := ctx.Response.BodyStream().(io.WriterTo).WriteTo(failingWriter{}); err != nil {
			t.Fatal(err)
		}
		ctx.Response.ResetBody() // fasthttp's close after the failed write
	}
	if n := ln.accepted.Load(); n != 3 {
		t.Fatalf("3 abandoned streams dialled %d connections; want 3 (none reused)", n)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

// startRawUpstream serves a keep-alive HTTP/1.1 upstream that answers
// every request with the chunked SSE stream of frames, one chunk per event
// and the terminator, written by write (all at once, or paced by the test).
func startRawUpstream(tb testing.TB, write func(w *bufio.Writer, frames [][]byte) error, frames [][]byte) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				br, bw := bufio.NewReader(conn), bufio.NewWriter(conn)
				var req fasthttp.Request
				for req.Read(br) == nil {
					bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
					if write(bw, frames) != nil {
						return
					}
					req.Reset()
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// chunk appends one chunk of the chunked encoding.
func appendChunk(w *bufio.Writer, b []byte) {
	for shift := 28; shift >= 0; shift -= 4 { // the size in hex, byte by byte: no allocation
		if d := len(b) >> shift & 0xf; d > 0 || len(b)>>shift > 0 || shift == 0 {
			w.WriteByte("0123456789abcdef"[d])
		}
	}
	w.WriteString("\r\n")
	w.Write(b)
	w.WriteString("\r\n")
}

// chatFrames is a chat stream of n content events, a finish and [DONE].
func chatFrames(n int) [][]byte {
	var f [][]byte
	for i := 0; i < n; i++ {
		f = append(f, []byte(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"tok`+strconv.Itoa(i)+` "},"finish_reason":null}]}`+"\n\n"))
	}
	f = append(f, []byte(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n"))
	return append(f, []byte("data: [DONE]\n\n"))
}

// writeBurst sends the whole stream, terminator included, in one write.
func writeBurst(w *bufio.Writer, frames [][]byte) error {
	for _, f := range frames {
		appendChunk(w, f)
	}
	w.WriteString("0\r\n\r\n")
	return w.Flush()
}

// countingWriter records the writes the relay makes to the caller.
type countingWriter struct {
	writes int
	buf    bytes.Buffer
	onW    func()
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	w.buf.Write(p)
	if w.onW != nil {
		w.onW()
	}
	return len(p), nil
}

// relayOnce runs one chat stream through p and writes its body to w.
func relayOnce(t testing.TB, p *Proxy, w io.Writer) {
	ctx := new(fasthttp.RequestCtx)
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/chat/completions")
	ctx.Request.Header.Set("Authorization", "Bearer caller-key")
	ctx.Request.SetBody(streamBody)
	if !p.Handle(ctx) || ctx.Response.StatusCode() != 200 || !ctx.Response.IsBodyStream() {
		t.Fatalf("stream not committed: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	if _, err := ctx.Response.BodyStream().(io.WriterTo).WriteTo(w); err != nil {
		t.Fatal(err)
	}
	ctx.Response.ResetBody() // fasthttp's close
}

// TestRelayCoalescesWhatArrivedTogether: a stream the upstream delivers in
// one write (22 events and the terminator) leaves gw in one write to the
// caller, not one per event.
func TestRelayCoalescesWhatArrivedTogether(t *testing.T) {
	p := proxyFor(t, startRawUpstream(t, writeBurst, chatFrames(20)))
	for i := 0; i < 20; i++ {
		var w countingWriter
		relayOnce(t, p, &w)
		if got := strings.Count(w.buf.String(), "data: "); got != 22 {
			t.Fatalf("relayed %d events; want 22:\n%s", got, w.buf.String())
		}
		if w.writes != 1 {
			t.Fatalf("22 events that arrived together took %d writes; want 1", w.writes)
		}
	}
}

// TestRelayNeverHoldsALoneEvent: an upstream that sends the next event only
// after the caller received the previous one would deadlock if the relay
// held an event back waiting for more; each event must go out as soon as
// the upstream has nothing more ready.
func TestRelayNeverHoldsALoneEvent(t *testing.T) {
	got := make(chan struct{}, 64)
	paced := func(w *bufio.Writer, frames [][]byte) error {
		for i, f := range frames {
			appendChunk(w, f)
			if i == len(frames)-1 {
				w.WriteString("0\r\n\r\n")
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if i < 2 || i == len(frames)-1 {
				continue // the prefetch reads the first events before anything is written
			}
			select {
			case <-got:
			case <-time.After(5 * time.Second):
				return io.ErrNoProgress // the relay held the event: the test fails below
			}
		}
		return nil
	}
	p := proxyFor(t, startRawUpstream(t, paced, chatFrames(10)))
	w := countingWriter{onW: func() { got <- struct{}{} }}
	done := make(chan struct{})
	go func() { relayOnce(t, p, &w); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the relay held an event back")
	}
	if n := strings.Count(w.buf.String(), "data: "); n != 12 || !strings.Contains(w.buf.String(), "[DONE]") {
		t.Fatalf("relayed %d events:\n%s", n, w.buf.String())
	}
}

// rawProxy serves "gpt" on an OpenAI key at base, with stream_timeout ms
// (0: none).
func rawProxy(tb testing.TB, base string, streamTimeoutMS int) *Proxy {
	tb.Helper()
	env := map[string]string{"K": "sk-upstream", "CALLER": "caller-key", "BASE": base}
	src := `_format_version: "1"
provider_keys:
  - {display_name: oa, api_key: "${K}", api_base: "${BASE}/v1"}
api_keys:
  - {display_name: caller, key_env: CALLER, allowed_models: ["*"]}
models:
  - {display_name: gpt, provider: openai, model_name: gpt-4o, provider_key: oa, stream_timeout: ` + strconv.Itoa(streamTimeoutMS) + `}
`
	h := &snapshot.Holder{}
	h.Store(compileFile(tb, src, env))
	return &Proxy{Holder: h}
}

// TestRelayGapTimeoutWithIdleHook: with the idle hook the connection sets
// the gap deadline only when a read waits; a stall past stream_timeout
// after content still ends the stream with the timeout frame, after the
// events before the stall were written, and closes the connection.
func TestRelayGapTimeoutWithIdleHook(t *testing.T) {
	stall := func(w *bufio.Writer, frames [][]byte) error {
		for _, f := range frames[:5] {
			appendChunk(w, f)
		}
		if err := w.Flush(); err != nil {
			return err
		}
		time.Sleep(time.Second) // past the 300 ms stream_timeout
		return io.EOF           // and hang up
	}
	p := rawProxy(t, startRawUpstream(t, stall, chatFrames(10)), 300)
	var w countingWriter
	start := time.Now()
	relayOnce(t, p, &w)
	took := time.Since(start)
	out := w.buf.String()
	if strings.Count(out, "tok") != 5 || !strings.Contains(out, "stream_timeout") || strings.Contains(out, "[DONE]") {
		t.Fatalf("want 5 events and the timeout frame:\n%s", out)
	}
	if took < 250*time.Millisecond || took > 900*time.Millisecond {
		t.Fatalf("the stall ended the stream after %s; want about 300 ms", took)
	}
}

// TestRelayLongStreamWithinGap: a stream that keeps delivering for longer
// than stream_timeout, never pausing that long, must not time out (the
// deadline of a read that does not wait is pushed back, not left to expire).
func TestRelayLongStreamWithinGap(t *testing.T) {
	paced := func(w *bufio.Writer, frames [][]byte) error {
		for _, f := range frames {
			appendChunk(w, f)
			if err := w.Flush(); err != nil {
				return err
			}
			time.Sleep(20 * time.Millisecond)
		}
		w.WriteString("0\r\n\r\n")
		return w.Flush()
	}
	p := rawProxy(t, startRawUpstream(t, paced, chatFrames(40)), 200) // ~840 ms of stream, gaps of 20 ms
	var w countingWriter
	relayOnce(t, p, &w)
	if out := w.buf.String(); strings.Count(out, "tok") != 40 || !strings.HasSuffix(out, "data: [DONE]\n\n") {
		t.Fatalf("stream cut short:\n%s", out)
	}
}

// corkConn is a caller connection that records when the relay corks it:
// the number of body writes made before each Cork.
type corkConn struct {
	net.Conn
	w     *countingWriter
	corks []int
}

func (c *corkConn) Cork() { c.corks = append(c.corks, c.w.writes) }

// TestRelayCorksTheLastBatch: the relay corks the caller's connection once,
// right before the stream's last batch, so that it leaves with fasthttp's
// chunked terminator in one write(2) (rawsock.Conn.Cork) — for a stream
// that arrived in one burst (the only batch is the last) and for a paced
// one (several batches; only the last is corked).
func TestRelayCorksTheLastBatch(t *testing.T) {
	paced := func(w *bufio.Writer, frames [][]byte) error {
		for i, f := range frames {
			appendChunk(w, f)
			if i == len(frames)-1 {
				w.WriteString("0\r\n\r\n")
			}
			if err := w.Flush(); err != nil {
				return err
			}
			time.Sleep(2 * time.Millisecond)
		}
		return nil
	}
	for _, tc := range []struct {
		name  string
		write func(*bufio.Writer, [][]byte) error
	}{{"burst", writeBurst}, {"paced", paced}} {
		t.Run(tc.name, func(t *testing.T) {
			p := proxyFor(t, startRawUpstream(t, tc.write, chatFrames(6)))
			var w countingWriter
			a, b := net.Pipe()
			defer a.Close()
			defer b.Close()
			conn := &corkConn{Conn: a, w: &w}
			ctx := new(fasthttp.RequestCtx)
			ctx.Init2(conn, nil, false)
			ctx.Request.Header.SetMethod("POST")
			ctx.Request.SetRequestURI("/v1/chat/completions")
			ctx.Request.Header.Set("Authorization", "Bearer caller-key")
			ctx.Request.SetBody(streamBody)
			if !p.Handle(ctx) || ctx.Response.StatusCode() != 200 || !ctx.Response.IsBodyStream() {
				t.Fatalf("stream not committed: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
			}
			if _, err := ctx.Response.BodyStream().(io.WriterTo).WriteTo(&w); err != nil {
				t.Fatal(err)
			}
			ctx.Response.ResetBody()
			if tc.name == "paced" && w.writes < 3 {
				t.Fatalf("a paced stream took %d writes; the test needs several", w.writes)
			}
			if len(conn.corks) != 1 || conn.corks[0] != w.writes-1 {
				t.Fatalf("corks before writes %v of %d; want one, before the last", conn.corks, w.writes)
			}
			if !strings.HasSuffix(w.buf.String(), "data: [DONE]\n\n") {
				t.Fatalf("the last write does not end the stream:\n%s", w.buf.String())
			}
		})
	}
}
