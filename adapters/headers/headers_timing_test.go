package headers

import (
	"testing"

	"github.com/valyala/fasthttp"
)

func benchClient() *fasthttp.RequestHeader {
	h := &fasthttp.RequestHeader{}
	for _, kv := range [][2]string{
		{"Host", "gw.internal:8080"}, {"Authorization", "Bearer sk-gw-caller"}, {"Content-Type", "application/json"},
		{"Accept", "application/json"}, {"User-Agent", "OpenAI/Python 1.99.0"}, {"X-Stainless-Lang", "python"},
		{"X-Stainless-Package-Version", "1.99.0"}, {"X-Stainless-Os", "Linux"}, {"X-Stainless-Retry-Count", "0"},
		{"X-Request-Id", "req-123"}, {"X-Trace-Span", "span-9"}, {"Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		{"Accept-Encoding", "gzip, deflate"}, {"Connection", "keep-alive"},
	} {
		h.Add(kv[0], kv[1])
	}
	return h
}

// BenchmarkApply: 14 client headers against a glob, two exact names and two
// default headers (one templated).
func BenchmarkApply(b *testing.B) {
	r, err := Compile(&Config{
		ForwardClientHeaders: []string{"x-trace-*", "x-request-id", "traceparent"},
		DefaultHeaders: []Template{
			{Name: "x-team", Parts: []Part{{Literal: "team-"}, {Var: VarAPIKeyTeamID}}},
			{Name: "openai-project", Parts: []Part{{Literal: "proj_123"}}},
		},
	}, []string{"authorization", "content-type", "content-length", "host", "accept-encoding"})
	if err != nil {
		b.Fatal(err)
	}
	client := benchClient()
	var vars Vars
	vars[VarAPIKeyTeamID] = "t7"
	var dst fasthttp.RequestHeader
	var scratch []byte
	b.ReportAllocs()
	for b.Loop() {
		dst.Reset()
		scratch = r.Apply(&dst, client, &vars, SlotAuthorization, scratch)
	}
}

// BenchmarkApplyNoRules is the default: nothing forwarded, no defaults.
func BenchmarkApplyNoRules(b *testing.B) {
	r, _ := Compile(&Config{}, nil)
	client := benchClient()
	var vars Vars
	var dst fasthttp.RequestHeader
	b.ReportAllocs()
	for b.Loop() {
		dst.Reset()
		r.Apply(&dst, client, &vars, 0, nil)
	}
}

var sinkBool bool

// BenchmarkForward is one decision on a glob-matched name.
func BenchmarkForward(b *testing.B) {
	r, _ := Compile(&Config{ForwardClientHeaders: []string{"x-trace-*", "x-request-id"}}, nil)
	name := []byte("X-Trace-Span")
	b.ReportAllocs()
	for b.Loop() {
		sinkBool = r.Forward(name)
	}
}
