package mock

import (
	"bufio"
	"io"
	"testing"
)

const (
	renderStreamBody = `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},` +
		`"messages":[{"role":"user","content":"Say hi"}]}`
	renderToolsBody = `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"x"}],` +
		`"tools":[{"type":"function","function":{"name":"get_weather"}}]}`
	renderBufferedBody = `{"model":"gpt-4o","messages":[{"role":"user","content":"Say hi"}]}`
)

// renderStream parses body and drives the whole answer into w, as a stream job does.
func renderStream(s *Server, k *Knobs, w *bufio.Writer, body []byte) {
	a := acquireChatAnswer()
	if err := a.req.parse(body); err != nil {
		panic(err)
	}
	if msg := a.prepare(s, k, len(body)); msg != "" {
		panic(msg)
	}
	s.drive(w, &a.k, a)
	a.release()
}

func renderBuffered(s *Server, k *Knobs, dst, body []byte) []byte {
	a := acquireChatAnswer()
	a.req.parse(body)
	a.prepare(s, k, len(body))
	dst = a.appendCompletion(dst[:0])
	a.release()
	return dst
}

func BenchmarkRenderStream(b *testing.B) {
	f := func(name, body string, edit func(k *Knobs)) {
		b.Run(name, func(b *testing.B) {
			s := New(Config{RecordLimit: -1})
			k := s.defaults
			edit(&k)
			cw := &countingWriter{}
			w := bufio.NewWriter(cw)
			req := []byte(body)
			renderStream(s, &k, w, req)
			b.SetBytes(cw.n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				renderStream(s, &k, w, req)
			}
		})
	}
	f("chunks=5", renderStreamBody, func(*Knobs) {})
	f("chunks=50", renderStreamBody, func(k *Knobs) { k.Chunks = 50 })
	f("chunks=50,size=256", renderStreamBody, func(k *Knobs) { k.Chunks, k.ChunkSize = 50, 256 })
	f("tool_calls=2", renderToolsBody, func(k *Knobs) { k.ToolCalls = 2 })
}

func BenchmarkRenderBuffered(b *testing.B) {
	s := New(Config{RecordLimit: -1})
	body := []byte(renderBufferedBody)
	dst := renderBuffered(s, &s.defaults, nil, body)
	b.SetBytes(int64(len(dst)))
	b.ReportAllocs()
	for b.Loop() {
		dst = renderBuffered(s, &s.defaults, dst, body)
	}
}

func BenchmarkParseChatRequest(b *testing.B) {
	body := []byte(renderToolsBody)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	var r ChatRequestInfo
	for b.Loop() {
		if err := r.parse(body); err != nil {
			b.Fatal(err)
		}
	}
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

var _ io.Writer = (*countingWriter)(nil)
