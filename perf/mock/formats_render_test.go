package mock

import (
	"bufio"
	"testing"
)

const (
	renderMessagesBody = `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,` +
		`"messages":[{"role":"user","content":"Say hi"}]}`
	renderMessagesToolsBody = `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"x"}],` +
		`"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]}`
	renderResponsesBody      = `{"model":"gpt-4.1","stream":true,"input":[{"role":"user","content":"Say hi"}]}`
	renderResponsesToolsBody = `{"model":"gpt-4.1","stream":true,"input":"x",` +
		`"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`
)

// renderMessagesStream parses body and drives the whole Anthropic answer into w, as a
// stream job does.
func renderMessagesStream(s *Server, k *Knobs, w *bufio.Writer, body []byte) {
	a := acquireMessagesAnswer()
	if err := a.req.parse(body, false); err != nil {
		panic(err)
	}
	if msg := a.prepare(s, k, len(body)); msg != "" {
		panic(msg)
	}
	s.drive(w, &a.k, a)
	a.release()
}

func renderMessagesBuffered(s *Server, k *Knobs, dst, body []byte) []byte {
	a := acquireMessagesAnswer()
	if err := a.req.parse(body, false); err != nil {
		panic(err)
	}
	a.prepare(s, k, len(body))
	dst = a.appendMessage(dst[:0])
	a.release()
	return dst
}

// renderResponsesStream parses body and drives the whole Responses answer into w.
func renderResponsesStream(s *Server, k *Knobs, w *bufio.Writer, body []byte) {
	a := acquireResponsesAnswer()
	if err := a.req.parse(body); err != nil {
		panic(err)
	}
	if msg := a.prepare(s, k, len(body)); msg != "" {
		panic(msg)
	}
	s.drive(w, &a.k, a)
	a.release()
}

func renderResponsesBuffered(s *Server, k *Knobs, dst, body []byte) []byte {
	a := acquireResponsesAnswer()
	if err := a.req.parse(body); err != nil {
		panic(err)
	}
	a.prepare(s, k, len(body))
	dst = a.appendResponse(dst[:0], respCompleted)
	a.release()
	return dst
}

func BenchmarkRenderMessages(b *testing.B) {
	benchRender(b, "stream", renderMessagesBody, func(k *Knobs) {}, renderMessagesStream)
	benchRender(b, "stream/chunks=50", renderMessagesBody, func(k *Knobs) { k.Chunks = 50 }, renderMessagesStream)
	benchRender(b, "stream/tool_calls=2", renderMessagesToolsBody, func(k *Knobs) { k.ToolCalls = 2 }, renderMessagesStream)
	b.Run("buffered", func(b *testing.B) {
		s := New(Config{RecordLimit: -1})
		body := []byte(renderMessagesBody)
		dst := renderMessagesBuffered(s, &s.defaults, nil, body)
		b.SetBytes(int64(len(dst)))
		b.ReportAllocs()
		for b.Loop() {
			dst = renderMessagesBuffered(s, &s.defaults, dst, body)
		}
	})
}

func BenchmarkRenderResponses(b *testing.B) {
	benchRender(b, "stream", renderResponsesBody, func(k *Knobs) {}, renderResponsesStream)
	benchRender(b, "stream/chunks=50", renderResponsesBody, func(k *Knobs) { k.Chunks = 50 }, renderResponsesStream)
	benchRender(b, "stream/tool_calls=2", renderResponsesToolsBody, func(k *Knobs) { k.ToolCalls = 2 }, renderResponsesStream)
	b.Run("buffered", func(b *testing.B) {
		s := New(Config{RecordLimit: -1})
		body := []byte(renderResponsesBody)
		dst := renderResponsesBuffered(s, &s.defaults, nil, body)
		b.SetBytes(int64(len(dst)))
		b.ReportAllocs()
		for b.Loop() {
			dst = renderResponsesBuffered(s, &s.defaults, dst, body)
		}
	})
}

func benchRender(b *testing.B, name, body string, edit func(k *Knobs), render func(*Server, *Knobs, *bufio.Writer, []byte)) {
	b.Run(name, func(b *testing.B) {
		s := New(Config{RecordLimit: -1})
		k := s.defaults
		edit(&k)
		cw := &countingWriter{}
		w := bufio.NewWriter(cw)
		req := []byte(body)
		render(s, &k, w, req)
		b.SetBytes(cw.n)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			render(s, &k, w, req)
		}
	})
}

func BenchmarkParseMessagesRequest(b *testing.B) {
	body := []byte(renderMessagesToolsBody)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	var r MessagesRequestInfo
	for b.Loop() {
		if err := r.parse(body, false); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseResponsesRequest(b *testing.B) {
	body := []byte(renderResponsesToolsBody)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	var r ResponsesRequestInfo
	for b.Loop() {
		if err := r.parse(body); err != nil {
			b.Fatal(err)
		}
	}
}
