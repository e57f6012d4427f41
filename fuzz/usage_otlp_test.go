package fuzz

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"gw/admin/resources"
	"gw/edge/usage"
	"gw/edge/usage/otlp"
)

// FuzzOTLPWire: the OTLP sink's hand-written protobuf (every length
// computed before its message is written) is byte for byte what the
// official types marshal, for any strings — lengths across the varint
// boundaries, invalid UTF-8 (replaced, so the official decoder accepts the
// batch) — and any numbers.
func FuzzOTLPWire(f *testing.F) {
	f.Add("gpt", "chat.completions", "Zoë", "upstream returned 503", "pii", "mask", int64(10), int64(30), 503, 0.05)
	f.Add(strings.Repeat("m", 127), strings.Repeat("o", 128), "caf\xc3", "\xff\xfe", "", "x", int64(-1), int64(0), 200, -1.5)
	f.Add(strings.Repeat("é", 9000), "", "", strings.Repeat("e", 16384), "kw", "would_block", int64(1)<<40, int64(1), 499, 0.0)
	s := &usage.Encoder{Sink: otlp.New(&resources.OTLPHTTPExporter{Endpoint: "http://127.0.0.1:1/v1/traces", TimeoutMS: 1000}, "gw")}
	f.Fuzz(func(t *testing.T, model, op, user, msg, guard, action string, tokens, total int64, status int, cost float64) {
		batch := []usage.Record{{OccurredAt: time.Unix(1700000000, 5), RequestID: usage.NewRequestID(), Attempt: 2, AttemptKind: usage.AttemptFinal,
			StatusCode: status, ErrorClass: op, ErrorMessage: msg, UserName: user, Model: model, Operation: op, InboundProtocol: model,
			CacheStatus: usage.CacheNone, PromptTokens: tokens, TotalTokens: total, CostUSD: cost, Latency: time.Duration(tokens),
			AppliedGuardrails:     []string{guard, action},
			GuardrailEnforcedHits: []usage.GuardrailHit{{Guardrail: guard, Action: action}},
			Tags:                  &resources.TelemetryTags{Kind: user, PKLabel: msg}},
			{OccurredAt: time.Unix(0, 0), AttemptKind: usage.AttemptFailed, Model: msg, Operation: user, StatusCode: 502}}
		wire, err := s.Encode(nil, batch)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := (proto.MarshalOptions{Deterministic: true}).Marshal(otlp.Request(batch, "gw"))
		if err != nil {
			t.Fatalf("the official types cannot marshal the reference: %v", err)
		}
		if !bytes.Equal(wire, ref) {
			t.Fatalf("wire bytes differ from proto.Marshal: %d vs %d bytes", len(wire), len(ref))
		}
	})
}
