package kinds

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/sse/rawjson"
)

// benchChain loads a chain of keyword (50 literals + 5 regexes) and pii
// (all nine detectors) through the real loader and compiles it with the
// real kinds. noop replaces the checkers by ones that find nothing, to
// measure the engine's own overhead.
func benchChain(b *testing.B, noop bool) *guard.Chain {
	b.Helper()
	var y strings.Builder
	y.WriteString(`_format_version: "1"
provider_keys: [{display_name: k, api_key: x, api_base: "http://127.0.0.1:1/v1"}]
api_keys: [{display_name: dev, key_env: K, allowed_models: ["*"]}]
models: [{display_name: gpt, provider: openai, model_name: m, provider_key: k}]
guardrails:
  - name: kw
    kind: keyword
    patterns:
`)
	for i := 0; i < 50; i++ {
		y.WriteString("      - {kind: literal, value: banned-term-" + strconv.Itoa(i) + "}\n")
	}
	for i := 0; i < 5; i++ {
		y.WriteString("      - {kind: regex, value: 'secret[-_]project[-_]" + strconv.Itoa(i) + "\\d+'}\n")
	}
	y.WriteString(`  - name: pii
    kind: pii
    detectors: [{name: email}, {name: china_mobile}, {name: china_id_card}, {name: bank_card}, {name: us_ssn}, {name: ip_address}, {name: api_key}, {name: jwt}, {name: private_key}]
guardrail_attachments:
  - {guardrail_id: kw, scope_type: model, scope_id: gpt}
  - {guardrail_id: pii, scope_type: model, scope_id: gpt}
`)
	res := resources.Load([]byte(y.String()), func(k string) (string, bool) { return "v", true })
	if err := res.Err(); err != nil {
		b.Fatal(err)
	}
	t := Table()
	if noop {
		t = guard.Table{"keyword": func(*resources.Guardrail) (guard.Checker, error) { return nop{}, nil },
			"pii": func(*resources.Guardrail) (guard.Checker, error) { return nop{}, nil }}
	}
	c, err := guard.Compile(res.Resources.GuardrailChains(), t)
	if err != nil {
		b.Fatal(err)
	}
	return c[resources.GuardrailScope{Type: "model", Name: "gpt"}]
}

type nop struct{}

func (nop) Check(context.Context, *guard.Request, *guard.Verdict) error { return nil }

// chat4K is a 4 KB chat request of ordinary prose: nothing matches.
func chat4K() []byte {
	var b strings.Builder
	b.WriteString(`{"model":"gpt","messages":[{"role":"system","content":"You are a helpful assistant that answers briefly."}`)
	for b.Len() < 4000 {
		b.WriteString(`,{"role":"user","content":"Tell me about the history of the printing press in Europe and how it changed the spread of ideas."}`)
		b.WriteString(`,{"role":"assistant","content":"The printing press, introduced around 1440, made books cheaper and faster to produce."}`)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// BenchmarkInputStage: the input policy on a 4 KB chat request, nothing
// matching: extraction plus the chain (engine overhead with no-op
// checkers; the full chain with keyword + pii).
func BenchmarkInputStage(b *testing.B) {
	body := chat4K()
	// Baseline on the same machine and run: one validation pass over the
	// body, which the read stage already pays for every request.
	b.Run("baseline-rawjson-valid", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if !rawjson.Valid(body) {
				b.Fatal("invalid")
			}
		}
	})
	for _, bc := range []struct {
		name string
		noop bool
	}{{"engine", true}, {"keyword50+5re+pii9", false}} {
		b.Run(bc.name, func(b *testing.B) {
			ch := benchChain(b, bc.noop)
			var e guard.Exec
			var x guard.Extractor
			var merged guard.Chain
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e.Reset()
				guard.Merge(&merged, ch, nil, nil)
				if err := x.Extract(&e, guard.ChatRequest, body); err != nil {
					b.Fatal(err)
				}
				if d := e.Judge(context.Background(), guard.Input, "gpt", merged.Input); d != guard.Pass {
					b.Fatalf("decision %d", d)
				}
			}
		})
	}
}

// BenchmarkWindowChunk: one streamed text chunk (about 20 bytes of
// content) through the chat stream's window with the full output chain,
// nothing matching; windows are judged as they fill.
func BenchmarkWindowChunk(b *testing.B) {
	for _, bc := range []struct {
		name string
		noop bool
	}{{"engine", true}, {"keyword50+5re+pii9", false}} {
		b.Run(bc.name, func(b *testing.B) {
			ch := benchChain(b, bc.noop)
			var e guard.Exec
			var s guard.ChatStream
			s.Reset(context.Background(), &e, "gpt", ch.Output)
			chunk := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" the printing press "},"finish_reason":null}]}`)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if d := s.Push(chunk); d >= guard.Blocked {
					b.Fatal(d)
				}
				for {
					if _, ok := s.Next(); !ok {
						break
					}
				}
			}
		})
	}
}
