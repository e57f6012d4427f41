package lakera

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/remote/remotetest"
)

// fixedServer answers every request with body after delay, on loopback.
func fixedServer(b *testing.B, body string, delay time.Duration) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if delay > 0 {
			time.Sleep(delay)
		}
		ctx.SetContentType("application/json")
		ctx.SetBodyString(body)
	}}
	go s.Serve(ln)
	b.Cleanup(func() { s.Shutdown() })
	return "http://" + ln.Addr().String()
}

const benchAnswer = `{"flagged":false,"metadata":{"request_uuid":"b"},"breakdown":[{"project_id":"p","policy_id":"q","detector_id":"d","detector_type":"prompt_attack","detected":false,"message_id":0}]}`

var benchBody = []byte(`{"messages":[{"role":"user","content":"What is the weather like in Paris today? Please answer briefly."}],"breakdown":true}`)

// BenchmarkCallBare is the call itself: one fasthttp request with the same
// body to the same server, nothing around it.
func BenchmarkCallBare(b *testing.B) {
	base := fixedServer(b, benchAnswer, 0)
	hc := &fasthttp.HostClient{Addr: base[len("http://"):]}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	b.ReportAllocs()
	for b.Loop() {
		req.SetRequestURI(base + "/v2/guard")
		req.Header.SetMethod("POST")
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(benchBody)
		if err := hc.DoTimeout(req, resp, 5*time.Second); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallJudge is the same call through the engine: Exec.Judge →
// lakera Check (request built, answer parsed) → remote.Post (semaphore,
// deadline, pooled client). Its ns/op minus BenchmarkCallBare's is the
// engine overhead around a remote call (target ≤ 20 µs).
func BenchmarkCallJudge(b *testing.B) {
	base := fixedServer(b, benchAnswer, 0)
	g := remotetest.Load(b, "name: lak\n    kind: lakera\n    api_key: k\n    endpoint: "+base+"\n")
	chain := remotetest.Stage(b, g, resources.GuardrailLakera, New)
	var e guard.Exec
	ctx := context.Background()
	text := []byte("What is the weather like in Paris today? Please answer briefly.")
	b.ReportAllocs()
	for b.Loop() {
		e.Reset()
		e.AddText(guard.Text{Role: guard.RoleUser, Data: text}, false, true)
		if d := e.Judge(ctx, guard.Input, "m", chain.Input); d != guard.Pass {
			b.Fatalf("decision %d: %v", d, e.Err)
		}
	}
}

// BenchmarkChainParallel: three lakera stages on one chain, each backend
// answering after 2 ms. Run at once they take about one call's time per
// op (≈2 ms), not three (≈6 ms).
func BenchmarkChainParallel(b *testing.B) {
	base := fixedServer(b, benchAnswer, 2*time.Millisecond)
	scope := resources.GuardrailScope{Type: "model", Name: "m"}
	r := resources.Load([]byte(`_format_version: "1"
guardrails:
  - {name: a, kind: lakera, api_key: k, endpoint: "`+base+`/a"}
  - {name: b, kind: lakera, api_key: k, endpoint: "`+base+`/b"}
  - {name: c, kind: lakera, api_key: k, endpoint: "`+base+`/c"}
`), func(string) (string, bool) { return "", false })
	if err := r.Err(); err != nil {
		b.Fatal(err)
	}
	gs := r.Resources.Guardrails
	c, err := guard.Compile(map[resources.GuardrailScope]*resources.GuardrailChain{scope: {Input: gs}}, guard.Table{resources.GuardrailLakera: New})
	if err != nil {
		b.Fatal(err)
	}
	var e guard.Exec
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		e.Reset()
		e.AddText(guard.Text{Role: guard.RoleUser, Data: []byte("hello")}, false, true)
		if d := e.Judge(ctx, guard.Input, "m", c[scope].Input); d != guard.Pass {
			b.Fatalf("decision %d: %v", d, e.Err)
		}
	}
}

// BenchmarkCallPost is the remote layer alone (remote.Endpoint.Post).
func BenchmarkCallPost(b *testing.B) {
	base := fixedServer(b, benchAnswer, 0)
	g := remotetest.Load(b, "name: lak\n    kind: lakera\n    api_key: k\n    endpoint: "+base+"\n")
	ck := remotetest.Stage(b, g, resources.GuardrailLakera, New).Input[0].Checker.(*Checker)
	ctx := context.Background()
	var dst []byte
	var err error
	b.ReportAllocs()
	for b.Loop() {
		if dst, err = ck.ep.Post(ctx, benchBody, dst[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEngineOverhead interleaves the bare call (BenchmarkCallBare's)
// and the engine's call (BenchmarkCallJudge's) to the same local server
// and reports the difference of their medians as overhead-ns/op: the cost
// of the engine, the kind (request built, answer parsed) and the remote
// layer (semaphore, deadline, pooled client) around one remote call.
// Interleaving and medians keep a shared CPU's drift out of the figure.
// Target: ≤ 20000 overhead-ns/op.
func BenchmarkEngineOverhead(b *testing.B) {
	base := fixedServer(b, benchAnswer, 0)
	hc := &fasthttp.HostClient{Addr: base[len("http://"):]}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	g := remotetest.Load(b, "name: lak\n    kind: lakera\n    api_key: k\n    endpoint: "+base+"\n")
	chain := remotetest.Stage(b, g, resources.GuardrailLakera, New)
	var e guard.Exec
	ctx := context.Background()
	text := []byte("What is the weather like in Paris today? Please answer briefly.")
	var bare, judged []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		req.SetRequestURI(base + "/v2/guard")
		req.Header.SetMethod("POST")
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(benchBody)
		if err := hc.DoTimeout(req, resp, 5*time.Second); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		e.Reset()
		e.AddText(guard.Text{Role: guard.RoleUser, Data: text}, false, true)
		if d := e.Judge(ctx, guard.Input, "m", chain.Input); d != guard.Pass {
			b.Fatalf("decision %d: %v", d, e.Err)
		}
		t2 := time.Now()
		bare, judged = append(bare, t1.Sub(t0)), append(judged, t2.Sub(t1))
	}
	b.ReportMetric(float64(median(judged)-median(bare)), "overhead-ns/op")
	b.ReportMetric(float64(median(bare)), "bare-ns/op")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
