// Package otlp exports usage records as OTLP/HTTP protobuf traces: one span
// per record, ending at occurred_at, named and attributed after the
// OpenTelemetry GenAI semantic conventions where they have a name, with
// every other record field under gw.usage.*.
package otlp

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"time"

	"github.com/cespare/xxhash/v2"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	resource "go.opentelemetry.io/proto/otlp/resource/v1"
	trace "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"

	"gw/admin/resources"
	"gw/edge/usage"
)

// ScopeName is the instrumentation scope of the exported spans.
const ScopeName = "gw/usage"

// Sink sends batches to one OTLP/HTTP traces endpoint.
type Sink struct {
	cfg     *resources.OTLPHTTPExporter
	client  *http.Client
	service string
	sc      scratch
}

var _ usage.Sink = (*Sink)(nil)

// New builds the sink of one otlp_http exporter.
func New(cfg *resources.OTLPHTTPExporter, service string) *Sink {
	s := &Sink{cfg: cfg, client: &http.Client{Transport: usage.Transport(), Timeout: time.Duration(cfg.TimeoutMS) * time.Millisecond}, service: service}
	s.sc.gzip = cfg.Compression == resources.OTLPCompressionGzip
	return s
}

// AppendRecord appends r's span to body, the batch's ScopeSpans body.
func (s *Sink) AppendRecord(body []byte, r *usage.Record) []byte {
	return s.sc.appendScopeSpan(body, r)
}

// Finish marshals the ExportTraceServiceRequest around the batch's spans.
func (s *Sink) Finish(dst, body []byte, _ int) ([]byte, error) {
	if len(body) == 0 {
		body = s.sc.startScope(body)
	}
	if s.cfg.Compression == resources.OTLPCompressionGzip {
		return s.sc.gzipFinish(dst, body, s.service), nil
	}
	return append(appendHead(dst, s.service, len(body)), body...), nil
}

// Send posts one batch. Per the OTLP/HTTP spec only 429, 502, 503 and 504
// are retryable; a partial success counts its rejected spans.
func (s *Sink) Send(ctx context.Context, b *usage.Batch) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.Endpoint, bytes.NewReader(b.Payload))
	if err != nil {
		return &usage.SendError{Permanent: true, Msg: "cannot build request: invalid endpoint"}
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if s.cfg.Compression == resources.OTLPCompressionGzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	for _, h := range s.cfg.Headers {
		req.Header.Set(h.Name, h.Value.Reveal())
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return &usage.SendError{Msg: "cannot reach the OTLP endpoint: " + usage.NetReason(err)}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		if rejected, msg := PartialSuccess(body); rejected > 0 {
			// Accepted in part: resending would duplicate the accepted spans.
			return &usage.SendError{Status: resp.StatusCode, Permanent: true, Rejected: int(rejected),
				Msg: "partial success: " + usage.ErrorSnippet(msg)}
		}
		return nil
	case resp.StatusCode == 429 || resp.StatusCode == 502 || resp.StatusCode == 503 || resp.StatusCode == 504:
		return &usage.SendError{Status: resp.StatusCode, RetryAfter: usage.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()), Msg: usage.ErrorSnippet(body)}
	default:
		return &usage.SendError{Status: resp.StatusCode, Permanent: true, Msg: usage.ErrorSnippet(body)}
	}
}

// PartialSuccess reads an ExportTraceServiceResponse body:
// partial_success (1) { rejected_spans (1) int64, error_message (2) string }.
// The collector package's generated type would pull in gRPC, so the two
// fields are read with protowire. A malformed body reads as full success.
func PartialSuccess(body []byte) (rejected int64, msg []byte) {
	ps := field(body, 1, protowire.BytesType)
	if ps == nil {
		return 0, nil
	}
	for b := ps; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, nil
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return 0, nil
			}
			rejected, b = int64(v), b[m:]
		case num == 2 && typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return 0, nil
			}
			msg, b = v, b[m:]
		default:
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return 0, nil
			}
			b = b[m:]
		}
	}
	return rejected, msg
}

// field returns the last value of a length-delimited field num in b.
func field(b []byte, want protowire.Number, wantType protowire.Type) []byte {
	var out []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		if num == want && typ == wantType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil
			}
			out, b = v, b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return nil
		}
		b = b[m:]
	}
	return out
}

// Request builds the OTLP request of a batch with the official types; the
// sink encodes the same message straight to wire bytes (appendRequest). TracesData has the same wire
// form as ExportTraceServiceRequest (field 1, repeated ResourceSpans): the
// OTLP spec defines it for exactly this use outside gRPC.
func Request(batch []usage.Record, service string) *trace.TracesData {
	spans := make([]*trace.Span, len(batch))
	for i := range batch {
		spans[i] = Span(&batch[i])
	}
	return &trace.TracesData{ResourceSpans: []*trace.ResourceSpans{{
		Resource: &resource.Resource{Attributes: []*common.KeyValue{str("service.name", service)}},
		ScopeSpans: []*trace.ScopeSpans{{
			Scope: &common.InstrumentationScope{Name: ScopeName},
			Spans: spans,
		}},
	}}}
}

// SpanID derives a record's span ID from its request ID and attempt, so a
// resent record keeps its ID.
func SpanID(r *usage.Record) []byte {
	var b [20]byte
	copy(b[:], r.RequestID[:])
	binary.LittleEndian.PutUint32(b[16:], uint32(r.Attempt))
	id := make([]byte, 8)
	binary.BigEndian.PutUint64(id, xxhash.Sum64(b[:]))
	return id
}

// genAIOperation maps gw operations to gen_ai.operation.name.
func genAIOperation(op string) string {
	switch op {
	case "chat.completions", "messages", "responses":
		return "chat"
	}
	return op
}

// Span is one record as a span. Trace ID = request ID: a request's failed
// attempts and its final record share one trace.
func Span(r *usage.Record) *trace.Span {
	end := r.OccurredAt
	start := end.Add(-r.Latency)
	op := valid(genAIOperation(r.Operation))
	sp := &trace.Span{
		TraceId:           append([]byte(nil), r.RequestID[:]...),
		SpanId:            SpanID(r),
		Name:              op + " " + valid(r.Model),
		Kind:              trace.Span_SPAN_KIND_SERVER,
		StartTimeUnixNano: uint64(start.UnixNano()),
		EndTimeUnixNano:   uint64(end.UnixNano()),
	}
	if r.AttemptKind == usage.AttemptFailed {
		sp.Kind = trace.Span_SPAN_KIND_CLIENT
		sp.StartTimeUnixNano = sp.EndTimeUnixNano
	}
	if r.StatusCode >= 400 {
		sp.Status = &trace.Status{Code: trace.Status_STATUS_CODE_ERROR, Message: valid(r.ErrorMessage)}
	}
	a := make([]*common.KeyValue, 0, 48)
	// In the order of the parts appendSpan writes (usage.PartHead to
	// PartGuard); GenAI semantic-convention names where they exist, every
	// other field under the record's own JSON name.
	var id [36]byte
	a = append(a, str("gw.usage.request_id", string(r.RequestID.AppendString(id[:0]))))
	// The attempt, caller, route and classification.
	a = append(a, str("gen_ai.operation.name", op), str("gen_ai.request.model", r.Model))
	a = optStr(a, "gen_ai.response.model", r.UpstreamModel)
	a = optStr(a, "gen_ai.provider.name", r.Provider)
	a = optStr(a, "gen_ai.system", r.Provider) // the name before semconv 1.37
	a = append(a, i64("http.response.status_code", int64(r.StatusCode)))
	a = optStr(a, "error.type", r.ErrorClass)
	a = optStr(a, "user.id", r.UserID)
	a = optStr(a, "user.name", r.UserName)
	a = append(a, i64("gw.usage.attempt", int64(r.Attempt)), str("gw.usage.attempt_kind", r.AttemptKind))
	a = optStr(a, "gw.usage.error_message", r.ErrorMessage)
	a = optStr(a, "gw.usage.api_key_id", r.APIKeyID)
	a = optStr(a, "gw.usage.api_key_name", r.APIKeyName)
	a = optStr(a, "gw.usage.team_id", r.TeamID)
	a = optStr(a, "gw.usage.target_model", r.TargetModel)
	a = optStr(a, "gw.usage.provider_key", r.ProviderKey)
	a = optStr(a, "gw.usage.provider_key_id", r.ProviderKeyID)
	if t := r.Tags; t != nil {
		a = optStr(a, "gw.usage.telemetry_tags.kind", t.Kind)
		a = append(a, boolean("gw.usage.telemetry_tags.featured", t.Featured))
		a = optStr(a, "gw.usage.telemetry_tags.branded_provider", t.BrandedProvider)
		a = optStr(a, "gw.usage.telemetry_tags.pk_label", t.PKLabel)
		a = optStr(a, "gw.usage.telemetry_tags.byo_label", t.BYOLabel)
	}
	a = append(a, str("gw.usage.inbound_protocol", r.InboundProtocol), str("gw.usage.operation", r.Operation))
	a = optStr(a, "gw.usage.mcp_server", r.MCPServer)
	a = optStr(a, "gw.usage.mcp_tool", r.MCPTool)
	a = append(a, str("gw.usage.cache_status", r.CacheStatus), boolean("gw.usage.stream", r.Stream))
	// Tokens, cost and audio seconds.
	a = append(a, i64("gen_ai.usage.input_tokens", r.PromptTokens), i64("gen_ai.usage.output_tokens", r.CompletionTokens),
		i64("gw.usage.reasoning_tokens", r.ReasoningTokens), i64("gw.usage.cached_prompt_tokens", r.CachedPromptTokens))
	if r.TotalTokens > 0 {
		a = append(a, i64("gw.usage.total_tokens", r.TotalTokens))
	}
	a = append(a, f64("gw.usage.cost_usd", r.CostUSD))
	if r.AudioSeconds > 0 {
		a = append(a, f64("gw.usage.audio_seconds", r.AudioSeconds))
	}
	// Latencies and body sizes.
	a = append(a, f64("gw.usage.latency_ms", ms(r.Latency)))
	for _, d := range []struct {
		k string
		v time.Duration
	}{{"gw.usage.ttft_ms", r.TTFT}, {"gw.usage.upstream_latency_ms", r.UpstreamLatency}, {"gw.usage.upstream_ttft_ms", r.UpstreamTTFT}} {
		if d.v > 0 {
			a = append(a, f64(d.k, ms(d.v)))
		}
	}
	a = append(a, i64("gw.usage.request_body_bytes", r.RequestBodyBytes), i64("gw.usage.response_body_bytes", r.ResponseBodyBytes))
	// The guardrail outcome.
	if len(r.AppliedGuardrails) > 0 {
		vals := make([]*common.AnyValue, len(r.AppliedGuardrails))
		for i, g := range r.AppliedGuardrails {
			vals[i] = &common.AnyValue{Value: &common.AnyValue_StringValue{StringValue: valid(g)}}
		}
		a = append(a, &common.KeyValue{Key: "gw.usage.applied_guardrails", Value: &common.AnyValue{Value: &common.AnyValue_ArrayValue{ArrayValue: &common.ArrayValue{Values: vals}}}})
	}
	a = hits(a, "gw.usage.guardrail_enforced_hits", r.GuardrailEnforcedHits)
	a = hits(a, "gw.usage.guardrail_monitor_hits", r.GuardrailMonitorHits)
	a = optStr(a, "gw.usage.guardrail_bypassed_reason", r.GuardrailBypassedReason)
	a = append(a, boolean("gw.usage.guardrail_blocked_fail_closed", r.GuardrailBlockedFailClosed))
	sp.Attributes = a
	return sp
}

// hits encodes guardrail hits as an array of "guardrail:action" strings.
func hits(a []*common.KeyValue, key string, hs []usage.GuardrailHit) []*common.KeyValue {
	if len(hs) == 0 {
		return a
	}
	vals := make([]*common.AnyValue, len(hs))
	for i, h := range hs {
		vals[i] = &common.AnyValue{Value: &common.AnyValue_StringValue{StringValue: valid(h.Guardrail) + ":" + valid(h.Action)}}
	}
	return append(a, &common.KeyValue{Key: key, Value: &common.AnyValue{Value: &common.AnyValue_ArrayValue{ArrayValue: &common.ArrayValue{Values: vals}}}})
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func str(k, v string) *common.KeyValue {
	return &common.KeyValue{Key: k, Value: &common.AnyValue{Value: &common.AnyValue_StringValue{StringValue: valid(v)}}}
}

func optStr(a []*common.KeyValue, k, v string) []*common.KeyValue {
	if v == "" {
		return a
	}
	return append(a, str(k, v))
}

func i64(k string, v int64) *common.KeyValue {
	return &common.KeyValue{Key: k, Value: &common.AnyValue{Value: &common.AnyValue_IntValue{IntValue: v}}}
}

func f64(k string, v float64) *common.KeyValue {
	return &common.KeyValue{Key: k, Value: &common.AnyValue{Value: &common.AnyValue_DoubleValue{DoubleValue: v}}}
}

func boolean(k string, v bool) *common.KeyValue {
	return &common.KeyValue{Key: k, Value: &common.AnyValue{Value: &common.AnyValue_BoolValue{BoolValue: v}}}
}
