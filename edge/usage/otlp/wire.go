package otlp

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/cespare/xxhash/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"gw/edge/usage"
)

// appendRequest encodes the batch as TracesData straight to protobuf wire
// bytes, the same bytes proto.Marshal(Request(batch)) gives (a test checks
// it field by field through the official types), without building the
// message tree: the generated types cost three allocations per attribute.
func appendRequest(dst []byte, batch []usage.Record, service string, sc *scratch) []byte {
	// ResourceSpans (1) { resource (1) { attributes (1) }, scope_spans (2) { scope (1) { name (1) }, spans (2)... } }
	ss := sc.scopeSpans[:0]
	ss = protowire.AppendTag(ss, 1, protowire.BytesType)
	ss = protowire.AppendBytes(ss, appendStr(sc.tmp[:0], 1, ScopeName))
	for i := range batch {
		sc.span = appendSpan(sc.span[:0], &batch[i], sc)
		ss = protowire.AppendTag(ss, 2, protowire.BytesType)
		ss = protowire.AppendBytes(ss, sc.span)
	}
	sc.scopeSpans = ss
	rs := sc.resourceSpans[:0]
	res := appendKV(sc.tmp[:0], "service.name", kindString, service, 0, 0, nil, sc)
	rs = protowire.AppendTag(rs, 1, protowire.BytesType)
	rs = protowire.AppendVarint(rs, uint64(protowire.SizeTag(1)+protowire.SizeBytes(len(res))))
	rs = protowire.AppendTag(rs, 1, protowire.BytesType)
	rs = protowire.AppendBytes(rs, res)
	rs = protowire.AppendTag(rs, 2, protowire.BytesType)
	rs = protowire.AppendBytes(rs, ss)
	sc.resourceSpans = rs
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	return protowire.AppendBytes(dst, rs)
}

// scratch holds the encoder's reusable buffers.
type scratch struct {
	resourceSpans, scopeSpans, span, attrs, kv, val, tmp []byte
}

const (
	kindString = iota
	kindInt
	kindDouble
	kindBool
	kindStrings
)

func appendStr(dst []byte, num protowire.Number, s string) []byte {
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return protowire.AppendString(dst, s)
}

// appendKV appends one KeyValue message body (key 1, value 2 AnyValue).
func appendKV(dst []byte, key string, kind int, s string, i int64, f float64, list []string, sc *scratch) []byte {
	v := sc.val[:0]
	switch kind {
	case kindString:
		v = appendStr(v, 1, s)
	case kindBool:
		v = protowire.AppendTag(v, 2, protowire.VarintType)
		v = protowire.AppendVarint(v, protowire.EncodeBool(i != 0))
	case kindInt:
		v = protowire.AppendTag(v, 3, protowire.VarintType)
		v = protowire.AppendVarint(v, uint64(i))
	case kindDouble:
		v = protowire.AppendTag(v, 4, protowire.Fixed64Type)
		v = protowire.AppendFixed64(v, math.Float64bits(f))
	case kindStrings: // array_value (5) { values (1) AnyValue { string_value (1) } }
		arr := sc.tmp[:0]
		for _, e := range list {
			arr = protowire.AppendTag(arr, 1, protowire.BytesType)
			arr = protowire.AppendVarint(arr, uint64(protowire.SizeTag(1)+protowire.SizeBytes(len(e))))
			arr = appendStr(arr, 1, e)
		}
		sc.tmp = arr
		v = protowire.AppendTag(v, 5, protowire.BytesType)
		v = protowire.AppendBytes(v, arr)
	}
	sc.val = v
	dst = appendStr(dst, 1, key)
	dst = protowire.AppendTag(dst, 2, protowire.BytesType)
	return protowire.AppendBytes(dst, v)
}

// attr appends one attributes (9) entry to the span.
func (sc *scratch) attr(key string, kind int, s string, i int64, f float64, list []string) {
	sc.kv = appendKV(sc.kv[:0], key, kind, s, i, f, list, sc)
	sc.attrs = protowire.AppendTag(sc.attrs, 9, protowire.BytesType)
	sc.attrs = protowire.AppendBytes(sc.attrs, sc.kv)
}

func (sc *scratch) str(key, v string) { sc.attr(key, kindString, v, 0, 0, nil) }
func (sc *scratch) optStr(key, v string) {
	if v != "" {
		sc.str(key, v)
	}
}
func (sc *scratch) i64(key string, v int64)   { sc.attr(key, kindInt, "", v, 0, nil) }
func (sc *scratch) f64(key string, v float64) { sc.attr(key, kindDouble, "", 0, v, nil) }
func (sc *scratch) boolean(key string, v bool) {
	var i int64
	if v {
		i = 1
	}
	sc.attr(key, kindBool, "", i, 0, nil)
}

// appendSpan appends one Span message body; field order and attribute
// order follow Span().
func appendSpan(dst []byte, r *usage.Record, sc *scratch) []byte {
	end := r.OccurredAt
	start := end.Add(-r.Latency)
	op := genAIOperation(r.Operation)
	kind := 2 // SPAN_KIND_SERVER
	if r.AttemptKind == usage.AttemptFailed {
		kind, start = 3, end // SPAN_KIND_CLIENT, a point in time
	}
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	dst = protowire.AppendBytes(dst, r.RequestID[:])
	var b [20]byte
	copy(b[:], r.RequestID[:])
	binary.LittleEndian.PutUint32(b[16:], uint32(r.Attempt))
	var id [8]byte
	binary.BigEndian.PutUint64(id[:], xxhash.Sum64(b[:]))
	dst = protowire.AppendTag(dst, 2, protowire.BytesType)
	dst = protowire.AppendBytes(dst, id[:])
	dst = protowire.AppendTag(dst, 5, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(len(op)+1+len(r.Model)))
	dst = append(append(append(dst, op...), ' '), r.Model...)
	dst = protowire.AppendTag(dst, 6, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(kind))
	dst = protowire.AppendTag(dst, 7, protowire.Fixed64Type)
	dst = protowire.AppendFixed64(dst, uint64(start.UnixNano()))
	dst = protowire.AppendTag(dst, 8, protowire.Fixed64Type)
	dst = protowire.AppendFixed64(dst, uint64(end.UnixNano()))

	sc.attrs = sc.attrs[:0]
	sc.str("gen_ai.operation.name", op)
	sc.str("gen_ai.request.model", r.Model)
	sc.optStr("gen_ai.response.model", r.UpstreamModel)
	sc.optStr("gen_ai.provider.name", r.Provider)
	sc.optStr("gen_ai.system", r.Provider)
	sc.i64("gen_ai.usage.input_tokens", r.PromptTokens)
	sc.i64("gen_ai.usage.output_tokens", r.CompletionTokens)
	sc.i64("http.response.status_code", int64(r.StatusCode))
	sc.optStr("error.type", r.ErrorClass)
	sc.optStr("user.id", r.UserID)
	sc.optStr("user.name", r.UserName)
	var rid [36]byte
	sc.str("gw.usage.request_id", string(r.RequestID.AppendString(rid[:0])))
	sc.i64("gw.usage.attempt", int64(r.Attempt))
	sc.str("gw.usage.attempt_kind", r.AttemptKind)
	sc.optStr("gw.usage.error_message", r.ErrorMessage)
	sc.optStr("gw.usage.api_key_id", r.APIKeyID)
	sc.optStr("gw.usage.api_key_name", r.APIKeyName)
	sc.optStr("gw.usage.team_id", r.TeamID)
	sc.optStr("gw.usage.target_model", r.TargetModel)
	sc.optStr("gw.usage.provider_key", r.ProviderKey)
	sc.optStr("gw.usage.provider_key_id", r.ProviderKeyID)
	if t := r.Tags; t != nil {
		sc.optStr("gw.usage.telemetry_tags.kind", t.Kind)
		sc.boolean("gw.usage.telemetry_tags.featured", t.Featured)
		sc.optStr("gw.usage.telemetry_tags.branded_provider", t.BrandedProvider)
		sc.optStr("gw.usage.telemetry_tags.pk_label", t.PKLabel)
		sc.optStr("gw.usage.telemetry_tags.byo_label", t.BYOLabel)
	}
	sc.str("gw.usage.inbound_protocol", r.InboundProtocol)
	sc.str("gw.usage.operation", r.Operation)
	sc.str("gw.usage.cache_status", r.CacheStatus)
	sc.boolean("gw.usage.stream", r.Stream)
	sc.i64("gw.usage.reasoning_tokens", r.ReasoningTokens)
	sc.i64("gw.usage.cached_prompt_tokens", r.CachedPromptTokens)
	if r.TotalTokens > 0 {
		sc.i64("gw.usage.total_tokens", r.TotalTokens)
	}
	sc.f64("gw.usage.cost_usd", r.CostUSD)
	if r.AudioSeconds > 0 {
		sc.f64("gw.usage.audio_seconds", r.AudioSeconds)
	}
	sc.f64("gw.usage.latency_ms", ms(r.Latency))
	for _, d := range [...]struct {
		k string
		v time.Duration
	}{{"gw.usage.ttft_ms", r.TTFT}, {"gw.usage.upstream_latency_ms", r.UpstreamLatency}, {"gw.usage.upstream_ttft_ms", r.UpstreamTTFT}} {
		if d.v > 0 {
			sc.f64(d.k, ms(d.v))
		}
	}
	sc.i64("gw.usage.request_body_bytes", r.RequestBodyBytes)
	sc.i64("gw.usage.response_body_bytes", r.ResponseBodyBytes)
	if len(r.AppliedGuardrails) > 0 {
		sc.attr("gw.usage.applied_guardrails", kindStrings, "", 0, 0, r.AppliedGuardrails)
	}
	for _, h := range [...]struct {
		k    string
		hits []usage.GuardrailHit
	}{{"gw.usage.guardrail_enforced_hits", r.GuardrailEnforcedHits}, {"gw.usage.guardrail_monitor_hits", r.GuardrailMonitorHits}} {
		if len(h.hits) > 0 {
			list := make([]string, len(h.hits)) // rare: only requests a guardrail acted on
			for i, x := range h.hits {
				list[i] = x.Guardrail + ":" + x.Action
			}
			sc.attr(h.k, kindStrings, "", 0, 0, list)
		}
	}
	sc.optStr("gw.usage.guardrail_bypassed_reason", r.GuardrailBypassedReason)
	sc.boolean("gw.usage.guardrail_blocked_fail_closed", r.GuardrailBlockedFailClosed)
	dst = append(dst, sc.attrs...)
	if r.StatusCode >= 400 { // status (15) { message (2), code (3) = STATUS_CODE_ERROR }
		st := appendStr(sc.tmp[:0], 2, r.ErrorMessage)
		if r.ErrorMessage == "" {
			st = st[:0]
		}
		st = protowire.AppendTag(st, 3, protowire.VarintType)
		st = protowire.AppendVarint(st, 2)
		sc.tmp = st
		dst = protowire.AppendTag(dst, 15, protowire.BytesType)
		dst = protowire.AppendBytes(dst, st)
	}
	return dst
}
