package edge

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"gw/admin/snapshot"
	"gw/edge/usage"
)

// rawUpstream answers every request with head, then body, then either
// closes the connection (cut) or waits (stall).
func rawUpstream(t *testing.T, head, body string, stall time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				r := bufio.NewReader(conn)
				var req fasthttp.Request
				if req.Read(r) != nil {
					return
				}
				io.WriteString(conn, head+body)
				time.Sleep(stall)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestBinaryRelayFailures: after the commit point (the upstream's 200),
// a body the upstream cuts is recorded 502 and one that stalls past
// stream_timeout 504; the caller got the bytes that arrived.
func TestBinaryRelayFailures(t *testing.T) {
	chunk := "6\r\nAUDIO1\r\n"
	for _, tc := range []struct {
		name   string
		stall  time.Duration
		status int
	}{{"cut", 0, 502}, {"stall", 2 * time.Second, 504}} {
		t.Run(tc.name, func(t *testing.T) {
			base := rawUpstream(t, "HTTP/1.1 200 OK\r\nContent-Type: audio/mpeg\r\nTransfer-Encoding: chunked\r\n\r\n", chunk, tc.stall)
			src := `_format_version: "1"
provider_keys:
  - {display_name: oa, provider: openai, api_key: x, api_base: "${BASE}/v1"}
api_keys:
  - {display_name: caller, key_env: CALLER, allowed_models: ["*"]}
models:
  - {display_name: tts, provider: openai, model_name: tts-1, provider_key: oa, stream_timeout: 300}
`
			h := &snapshot.Holder{}
			h.Store(compileFile(t, src, map[string]string{"CALLER": "caller-key", "BASE": base}))
			sink := &collectSink{}
			us := NewUsageStream()
			us.SetSinks([]usage.SinkSpec{sink.spec()})
			defer us.Close(usageGrace)
			p := &Proxy{Holder: h, Usage: us}
			var ctx fasthttp.RequestCtx
			ctx.Request.Header.SetMethod("POST")
			ctx.Request.SetRequestURI(pathSpeech)
			ctx.Request.Header.Set("Authorization", "Bearer caller-key")
			ctx.Request.SetBody([]byte(`{"model":"tts","input":"hi","voice":"alloy"}`))
			p.Handle(&ctx)
			if ctx.Response.StatusCode() != 200 || !ctx.Response.IsBodyStream() || string(ctx.Response.Header.ContentType()) != "audio/mpeg" {
				t.Fatalf("commit: %d %s", ctx.Response.StatusCode(), ctx.Response.Header.ContentType())
			}
			var w strings.Builder
			if err := ctx.Response.BodyWriteTo(&w); err != nil {
				t.Fatal(err)
			}
			ctx.Response.Reset() // fasthttp's close of the body stream
			if w.String() != "AUDIO1" {
				t.Fatalf("caller got %q", w.String())
			}
			e := sink.wait(t, 1)[0]
			if e.StatusCode != tc.status || e.Operation != "audio.speech" || e.ResponseBodyBytes != 6 {
				t.Fatalf("record: %d %s %d bytes; want %d", e.StatusCode, e.Operation, e.ResponseBodyBytes, tc.status)
			}
		})
	}
}
