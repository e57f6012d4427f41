package load

import (
	"net"
	"strconv"
	"testing"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"gw/perf/mock"
)

// benchRunner returns a runner wired to an in-memory mock, so that a benchmark measures
// the client and the generator, not the kernel.
func benchRunner(b *testing.B, cfg Config) *runner {
	b.Helper()
	ln := fasthttputil.NewInmemoryListener()
	m := mock.New(mock.Config{RecordLimit: -1})
	go func() { _ = m.Serve(ln) }()
	b.Cleanup(func() { _ = m.Shutdown() })
	cfg.Target = "http://mock/v1"
	cfg.Connections = 1
	r, err := newRunner(cfg, func(string) (net.Conn, error) { return ln.Dial() })
	if err != nil {
		b.Fatal(err)
	}
	clk := newRealClock()
	b.Cleanup(clk.close)
	r.clk = clk
	return r
}

// BenchmarkRequest is the cost of one request through a worker (template request,
// fasthttp round trip, recording) next to a bare fasthttp round trip of the same request:
// the difference is the generator's own overhead per request.
func BenchmarkRequest(b *testing.B) {
	b.Run("fasthttp", func(b *testing.B) {
		r := benchRunner(b, Config{})
		var req fasthttp.Request
		var resp fasthttp.Response
		r.tmpl.CopyTo(&req)
		b.ReportAllocs()
		b.SetBytes(int64(len(req.Body())))
		for b.Loop() {
			if err := r.hc.Do(&req, &resp); err != nil || resp.StatusCode() != 200 {
				b.Fatal(err, resp.StatusCode())
			}
		}
	})
	b.Run("buffered", func(b *testing.B) {
		r := benchRunner(b, Config{})
		w := r.newWorker()
		defer w.release()
		b.ReportAllocs()
		b.SetBytes(int64(len(w.req.Body())))
		for b.Loop() {
			w.do(r.clk.now(), true)
		}
		if s := w.shard; s.successes != s.requests {
			b.Fatalf("%d of %d requests failed", s.requests-s.successes, s.requests)
		}
	})
	for _, format := range []Format{FormatMessages, FormatResponses} {
		b.Run("buffered/"+string(format), func(b *testing.B) {
			r := benchRunner(b, Config{Format: format})
			w := r.newWorker()
			defer w.release()
			b.ReportAllocs()
			for b.Loop() {
				w.do(r.clk.now(), true)
			}
			if s := w.shard; s.successes != s.requests {
				b.Fatalf("%d of %d requests failed", s.requests-s.successes, s.requests)
			}
		})
	}
	for _, bc := range []struct {
		format Format
		chunks int
	}{{FormatChat, 20}, {FormatChat, 200}, {FormatMessages, 200}, {FormatResponses, 200}} {
		name := "stream/chunks=" + strconv.Itoa(bc.chunks)
		if bc.format != FormatChat {
			name = "stream/" + string(bc.format) + "/chunks=" + strconv.Itoa(bc.chunks)
		}
		chunks := bc.chunks
		b.Run(name, func(b *testing.B) {
			r := benchRunner(b, Config{Format: bc.format, Stream: true, Headers: []Header{{"x-mock-chunks", strconv.Itoa(chunks)}}})
			w := r.newWorker()
			defer w.release()
			b.ReportAllocs()
			for b.Loop() {
				w.do(r.clk.now(), true)
			}
			if s := w.shard; s.successes != s.requests || s.chunks != int64(chunks)*s.requests {
				b.Fatalf("%d of %d streams failed, %d chunks", s.requests-s.successes, s.requests, s.chunks)
			}
		})
	}
}

func BenchmarkClassify(b *testing.B) {
	for _, bc := range []struct {
		name     string
		classify func([]byte) eventKind
		data     string
	}{
		{"chat", classifyChat, `{"id":"chatcmpl-C4HqHBe4xca0k0EzsCnf1t6V3YFXp","object":"chat.completion.chunk","created":1755137933,` +
			`"model":"gpt-5-nano-2025-08-07","service_tier":"default","system_fingerprint":null,` +
			`"choices":[{"index":0,"delta":{"content":" there"},"finish_reason":null}],"obfuscation":"LcdzdJdMMgDHt6"}`},
		{"messages", classifyMessages, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" there"}}`},
		{"responses", classifyResponses, `{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_68a0f1",` +
			`"output_index":0,"content_index":0,"delta":" there","logprobs":[],"obfuscation":"LcdzdJdMMgDHt6"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			data := []byte(bc.data)
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			var sink eventKind
			for b.Loop() {
				sink = bc.classify(data)
			}
			if sink != evContent {
				b.Fatal("no content")
			}
		})
	}
}

func BenchmarkDeltaHasContent(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-C4HqHBe4xca0k0EzsCnf1t6V3YFXp","object":"chat.completion.chunk","created":1755137933,` +
		`"model":"gpt-5-nano-2025-08-07","service_tier":"default","system_fingerprint":null,` +
		`"choices":[{"index":0,"delta":{"content":" there"},"finish_reason":null}],"obfuscation":"LcdzdJdMMgDHt6"}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	var sink bool
	for b.Loop() {
		sink = deltaHasContent(data)
	}
	if !sink {
		b.Fatal("no content")
	}
}
