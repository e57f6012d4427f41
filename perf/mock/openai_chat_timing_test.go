package mock_test

import (
	"bytes"
	"net"
	"testing"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"gw/perf/mock"
)

// benchClient serves cfg on an in-memory listener and returns a client dialing it. The
// figures include fasthttp's client and server, so they bound what the mock can serve per core.
func benchClient(b *testing.B, cfg mock.Config) *fasthttp.HostClient {
	b.Helper()
	ln := fasthttputil.NewInmemoryListener()
	s := mock.New(cfg)
	go s.Serve(ln)
	b.Cleanup(func() { s.Shutdown() })
	return &fasthttp.HostClient{
		Addr:                "mock",
		Dial:                func(string) (net.Conn, error) { return ln.Dial() },
		MaxConns:            1024,
		ReadBufferSize:      16 << 10,
		MaxResponseBodySize: 64 << 20,
	}
}

func benchChat(b *testing.B, body string, wantSuffix []byte, header ...string) {
	benchPost(b, "/v1/chat/completions", body, wantSuffix, header...)
}

// benchPost posts body to path from parallel clients and checks each answer's suffix.
func benchPost(b *testing.B, path, body string, wantSuffix []byte, header ...string) {
	c := benchClient(b, mock.Config{RecordLimit: -1})
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req := fasthttp.AcquireRequest()
		resp := fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI("http://mock" + path)
		req.Header.SetMethod(fasthttp.MethodPost)
		req.Header.SetContentType("application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		req.SetBodyString(body)
		var n int64
		for pb.Next() {
			if err := c.Do(req, resp); err != nil {
				b.Errorf("Do: %s", err)
				return
			}
			if resp.StatusCode() != 200 || !bytes.HasSuffix(resp.Body(), wantSuffix) {
				b.Errorf("got %d %q", resp.StatusCode(), resp.Body())
				return
			}
			n += int64(len(resp.Body()))
		}
		_ = n
	})
}

func BenchmarkBufferedChat(b *testing.B) {
	benchChat(b, chatBody, []byte(`"system_fingerprint":"fp_mock"}`))
}

func BenchmarkStreamChat(b *testing.B) {
	b.Run("chunks=5", func(b *testing.B) {
		benchChat(b, streamUsageBody, []byte("data: [DONE]\n\n"))
	})
	b.Run("chunks=50", func(b *testing.B) {
		benchChat(b, streamUsageBody, []byte("data: [DONE]\n\n"), "x-mock-chunks", "50")
	})
}
