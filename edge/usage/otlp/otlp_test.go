package otlp_test

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	trace "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"gw/admin/resources"
	"gw/edge/usage"
	"gw/edge/usage/otlp"
	"gw/edge/usage/usagetest"
)

func TestOTLPExport(t *testing.T) {
	rcv := usagetest.StartOTLP(t)
	cfg := &resources.OTLPHTTPExporter{Endpoint: rcv.URL, TimeoutMS: 5000, Compression: resources.OTLPCompressionGzip,
		Headers: []resources.UpstreamHeader{{Name: "authorization", Value: resources.NewSecret("Bearer tok")}}}
	p := usagetest.Pipeline(t, "otlp_http", 10, usage.ExporterPolicy, nil, otlp.New(cfg, "gw"))
	recs := make([]*usage.Record, 25)
	for i := range recs {
		recs[i] = usagetest.Record(i)
		p.Emit(recs[i])
	}
	usagetest.Eventually(t, 5*time.Second, "25 spans", func() bool { return len(rcv.Spans()) == 25 })
	h := rcv.Headers()[0]
	if h.Get("Authorization") != "Bearer tok" || h.Get("Content-Encoding") != "gzip" {
		t.Fatalf("headers %v", h)
	}
	byTrace := map[string]*trace.Span{}
	for _, sp := range rcv.Spans() {
		byTrace[hex.EncodeToString(sp.TraceId)] = sp
	}
	for i, r := range recs {
		sp := byTrace[hex.EncodeToString(r.RequestID[:])]
		if sp == nil {
			t.Fatalf("record %d: no span with its request ID as trace ID", i)
		}
		if sp.EndTimeUnixNano != uint64(r.OccurredAt.UnixNano()) || sp.EndTimeUnixNano-sp.StartTimeUnixNano != uint64(r.Latency) {
			t.Fatalf("span times %d..%d; want end %d", sp.StartTimeUnixNano, sp.EndTimeUnixNano, r.OccurredAt.UnixNano())
		}
		if sp.Name != "chat gpt" || len(sp.SpanId) != 8 {
			t.Fatalf("span name %q id %x", sp.Name, sp.SpanId)
		}
		for k, want := range map[string]any{
			"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt", "gen_ai.response.model": "gpt-4o",
			"gen_ai.provider.name": "openai", "gen_ai.usage.input_tokens": r.PromptTokens, "gen_ai.usage.output_tokens": int64(20),
			"http.response.status_code": int64(200), "user.name": "Ann", "gw.usage.total_tokens": r.TotalTokens,
			"gw.usage.request_id": r.RequestID.String(), "gw.usage.api_key_name": "caller", "gw.usage.cost_usd": 0.05,
			"gw.usage.ttft_ms": 40.0, "gw.usage.upstream_latency_ms": 140.0, "gw.usage.guardrail_blocked_fail_closed": false,
		} {
			if got := usagetest.Attr(sp, k); got != want {
				t.Fatalf("record %d: %s = %#v; want %#v", i, k, got, want)
			}
		}
	}
}

// TestOTLPOutage: 503 with Retry-After → the batch is resent after the
// asked delay and delivered once the receiver is back; a 400 drops the
// batch at once and counts it as a permanent error.
func TestOTLPOutage(t *testing.T) {
	rcv := usagetest.StartOTLP(t)
	rcv.FailWith(503, "1")
	cfg := &resources.OTLPHTTPExporter{Endpoint: rcv.URL, TimeoutMS: 5000}
	p := usagetest.Pipeline(t, "otlp_http", 5, usage.ExporterPolicy, nil, otlp.New(cfg, "gw"))
	for i := 0; i < 5; i++ {
		p.Emit(usagetest.Record(i))
	}
	usagetest.Eventually(t, 5*time.Second, "a failed send", func() bool { return rcv.Requests() >= 1 })
	start := time.Now()
	rcv.FailWith(0, "")
	usagetest.Eventually(t, 5*time.Second, "delivery after recovery", func() bool { return len(rcv.Spans()) == 5 })
	if time.Since(start) > 3*time.Second {
		t.Fatalf("resend waited %v; Retry-After was 1s", time.Since(start))
	}
	// The receiver holds the spans before gw has read its answer: wait for
	// the status to count the delivery.
	usagetest.Eventually(t, 5*time.Second, "the delivery counted", func() bool { return p.Status()[0].SentEvents == 5 })
	st := p.Status()[0]
	if st.FailedBatches < 1 || st.SentEvents != 5 || st.LastError == "" {
		t.Fatalf("status %+v", st)
	}

	perm := metrics.GetOrCreateCounter(`gw_otlp_fanout_drops_total{reason="permanent_error"}`)
	before := perm.Get()
	rcv.FailWith(400, "")
	for i := 0; i < 5; i++ {
		p.Emit(usagetest.Record(i))
	}
	usagetest.Eventually(t, 5*time.Second, "permanent drop", func() bool { return perm.Get() == before+5 })
	if len(rcv.Spans()) != 5 {
		t.Fatal("a refused batch was delivered")
	}
}

func TestPartialSuccess(t *testing.T) {
	// partial_success { rejected_spans: 3, error_message: "bad" }
	body := []byte{0x0a, 0x07, 0x08, 0x03, 0x12, 0x03, 'b', 'a', 'd'}
	n, msg := otlp.PartialSuccess(body)
	if n != 3 || string(msg) != "bad" {
		t.Fatalf("got %d %q", n, msg)
	}
	if n, _ := otlp.PartialSuccess([]byte{0x0a, 0xff}); n != 0 {
		t.Fatal("malformed body read as a rejection")
	}
}

// TestWireMatchesOfficialTypes: the hand-encoded request decodes, with the
// official OTLP types, to exactly the message built from them.
func TestWireMatchesOfficialTypes(t *testing.T) {
	var batch []usage.Record
	for i := 0; i < 3; i++ {
		batch = append(batch, *usagetest.Record(i))
	}
	batch[0].Tags = &resources.TelemetryTags{Kind: "byo", Featured: true, BYOLabel: "x"}
	batch[1].AttemptKind, batch[1].StatusCode, batch[1].ErrorClass, batch[1].ErrorMessage, batch[1].TotalTokens = usage.AttemptFailed, 503, "upstream_status", "upstream returned 503", 0
	batch[1].TTFT, batch[1].UpstreamTTFT = 0, 0
	batch[2].StatusCode, batch[2].ErrorClass = 499, "client_gone"
	batch[2].AppliedGuardrails = []string{"pii", "kw"}
	batch[2].GuardrailEnforcedHits = []usage.GuardrailHit{{Guardrail: "pii", Action: "mask"}}
	batch[2].GuardrailMonitorHits = []usage.GuardrailHit{{Guardrail: "kw", Action: "would_block"}}
	batch[2].GuardrailBypassedReason, batch[2].GuardrailBlockedFailClosed = "output_buffer_exceeded", true
	batch[1].AudioSeconds, batch[1].Tags = 2.5, &resources.TelemetryTags{Kind: "catalog", BrandedProvider: "openai", PKLabel: "prod"}
	wire := otlp.AppendRequest(batch, "gw")
	var got trace.TracesData
	if err := proto.Unmarshal(wire, &got); err != nil {
		t.Fatal(err)
	}
	want := otlp.Request(batch, "gw")
	if !proto.Equal(&got, want) {
		t.Fatalf("wire encoding differs:\ngot  %v\nwant %v", &got, want)
	}
	// Byte for byte too: the sizes the encoder computes ahead of each
	// message are the ones the official marshaller writes.
	if ref, err := (proto.MarshalOptions{Deterministic: true}).Marshal(want); err != nil || !bytes.Equal(wire, ref) {
		t.Fatalf("wire bytes differ from proto.Marshal (%v): %d vs %d bytes", err, len(wire), len(ref))
	}
}

// TestValid: strings pass as they are exactly when they are UTF-8, for
// every length up to two words with a non-ASCII byte at each place.
func TestValid(t *testing.T) {
	for _, ins := range []string{"\x80", "\xff", "é", "\u2028", "\xc3"} {
		for n := 0; n <= 17; n++ {
			for at := 0; at <= n; at++ {
				s := strings.Repeat("a", at) + ins + strings.Repeat("b", n-at)
				if got, want := otlp.Valid(s), strings.ToValidUTF8(s, "\uFFFD"); got != want {
					t.Fatalf("Valid(%q) = %q; want %q", s, got, want)
				}
			}
			if s := strings.Repeat("c", n); otlp.Valid(s) != s {
				t.Fatalf("Valid(%q) changed it", s)
			}
		}
	}
}

// TestWireSpanSizes: a span is written in place after two bytes kept for
// its length; spans whose length takes three or four bytes are moved, and
// still encode as proto.Marshal does, the spans after them too.
func TestWireSpanSizes(t *testing.T) {
	// Around 7.6k the message (twice in the span) crosses 16 KiB, around
	// 1 MiB 2 MiB.
	sizes := []int{0, 1<<20 - 1000, 1 << 20}
	for n := 7500; n < 7700; n += 3 {
		sizes = append(sizes, n)
	}
	for _, n := range sizes {
		var batch []usage.Record
		for i := 0; i < 3; i++ {
			r := *usagetest.Record(i)
			if i == 1 {
				r.StatusCode, r.ErrorClass, r.ErrorMessage = 502, "upstream_status", strings.Repeat("e", n)
			}
			batch = append(batch, r)
		}
		want, err := (proto.MarshalOptions{Deterministic: true}).Marshal(otlp.Request(batch, "gw"))
		if err != nil {
			t.Fatal(err)
		}
		if got := otlp.AppendRequest(batch, "gw"); !bytes.Equal(got, want) {
			t.Fatalf("message of %d bytes: wire bytes differ from proto.Marshal", n)
		}
		if got := usagetest.Gunzip(t, otlp.AppendRequestGzip(batch, "gw")); !bytes.Equal(got, want) {
			t.Fatalf("message of %d bytes: gzip inflates to other bytes", n)
		}
	}
}

// TestWireCopiesOnlyUnchanged: a span whose parts are copied from the span
// before where their fields are unchanged still encodes as proto.Marshal
// does, and its gzip inflates to those bytes, whichever single field of
// the record changes from span to span (usagetest.Variants: every field of
// Record and of its tags), back and forth.
func TestWireCopiesOnlyUnchanged(t *testing.T) {
	failed := *usagetest.Record(1)
	failed.AttemptKind, failed.StatusCode, failed.ErrorClass, failed.ErrorMessage = usage.AttemptFailed, 503, "upstream_status", "upstream returned 503"
	guarded := *usagetest.Record(2)
	guarded.StatusCode, guarded.AppliedGuardrails = 400, []string{"pii"}
	guarded.GuardrailEnforcedHits = []usage.GuardrailHit{{Guardrail: "pii", Action: "block"}}
	guarded.Tags = &resources.TelemetryTags{Kind: "byo", BYOLabel: "x"}
	for _, base := range []usage.Record{*usagetest.Record(0), failed, guarded} {
		names, vs := usagetest.Variants(t, &base)
		again := base
		again.RequestID = usage.NewRequestID()
		batch := []usage.Record{base, again}
		for i := range vs {
			batch = append(batch, vs[i], vs[i], base)
		}
		want, err := (proto.MarshalOptions{Deterministic: true}).Marshal(otlp.Request(batch, "gw"))
		if err != nil {
			t.Fatal(err)
		}
		if got := otlp.AppendRequest(batch, "gw"); !bytes.Equal(got, want) {
			// Find the first span that differs, for the message.
			for n := 1; n <= len(batch); n++ {
				w, _ := (proto.MarshalOptions{Deterministic: true}).Marshal(otlp.Request(batch[:n], "gw"))
				if !bytes.Equal(otlp.AppendRequest(batch[:n], "gw"), w) {
					t.Fatalf("span %d (%d variants of %d fields): wire bytes differ from proto.Marshal", n-1, len(vs), len(names))
				}
			}
			t.Fatal("wire bytes differ from proto.Marshal")
		}
		if got := usagetest.Gunzip(t, otlp.AppendRequestGzip(batch, "gw")); !bytes.Equal(got, want) {
			t.Fatal("gzip inflates to other bytes")
		}
	}
}
