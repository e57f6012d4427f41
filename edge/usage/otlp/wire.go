package otlp

import (
	"encoding/binary"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"gw/edge/usage"
)

// appendRequest encodes the batch as TracesData straight to protobuf wire
// bytes, the same bytes proto.Marshal(Request(batch)) gives (a test checks
// it byte for byte and field by field through the official types), without
// building the message tree: the generated types cost three allocations
// per attribute. Every length is computed before its message is written,
// so a span's attributes are written once, in place; the span is then
// copied twice (into the scope's list, then into dst), the least a
// length-prefixed encoding allows without a size pass over each span.
func appendRequest(dst []byte, batch []usage.Record, service string, sc *scratch) []byte {
	// ResourceSpans (1) { resource (1) { attributes (1) }, scope_spans (2) { scope (1) { name (1) }, spans (2)... } }
	service = valid(service)
	ss := sc.scopeSpans[:0]
	ss = protowire.AppendTag(ss, 1, protowire.BytesType)
	ss = protowire.AppendVarint(ss, uint64(strSize(ScopeName)))
	ss = appendStr(ss, 1, ScopeName)
	for i := range batch {
		sc.span = appendSpan(sc.span[:0], &batch[i])
		ss = protowire.AppendTag(ss, 2, protowire.BytesType)
		ss = protowire.AppendBytes(ss, sc.span)
	}
	sc.scopeSpans = ss
	kv := kvSize("service.name", strSize(service))
	res := 1 + protowire.SizeBytes(kv) // attributes (1)
	rs := 1 + protowire.SizeBytes(res) + 1 + protowire.SizeBytes(len(ss))
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(rs))
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(res))
	dst = appendKVHead(dst, 1, "service.name", strSize(service))
	dst = appendStr(dst, 1, service)
	dst = protowire.AppendTag(dst, 2, protowire.BytesType)
	return protowire.AppendBytes(dst, ss)
}

// scratch holds the encoder's reusable buffers.
type scratch struct {
	scopeSpans, span []byte
}

// valid returns s with each run of invalid UTF-8 replaced by U+FFFD:
// protobuf string fields must be UTF-8, and a receiver built on the
// official types (the Collector) rejects the whole request otherwise. A
// caller-supplied user name, say, could make a batch of 512 spans
// undeliverable. Allocates only for an invalid string.
func valid(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// strSize is the wire size of a string field with a one-byte tag.
func strSize(s string) int { return 1 + protowire.SizeBytes(len(s)) }

// appendStr appends string field num. A one-byte tag and length (field
// numbers below 16, strings below 128 bytes: nearly every field here) are
// written directly; protowire's general varint code was a quarter of the
// encoding.
func appendStr(dst []byte, num protowire.Number, s string) []byte {
	if num < 16 && len(s) < 128 {
		dst = append(dst, byte(num)<<3|byte(protowire.BytesType), byte(len(s)))
		return append(dst, s...)
	}
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return protowire.AppendString(dst, s)
}

// kvSize is the size of a KeyValue message body: key (1), value (2) an
// AnyValue of valSize bytes.
func kvSize(key string, valSize int) int { return strSize(key) + 1 + protowire.SizeBytes(valSize) }

// appendKVHead appends field num holding a KeyValue, up to the AnyValue's
// length; the caller appends the AnyValue body of exactly valSize bytes.
func appendKVHead(dst []byte, num protowire.Number, key string, valSize int) []byte {
	if kv := kvSize(key, valSize); num < 16 && kv < 128 {
		// Every length below 128: one byte each (see appendStr).
		dst = append(dst, byte(num)<<3|byte(protowire.BytesType), byte(kv), 1<<3|byte(protowire.BytesType), byte(len(key)))
		dst = append(dst, key...)
		return append(dst, 2<<3|byte(protowire.BytesType), byte(valSize))
	}
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(kvSize(key, valSize)))
	dst = appendStr(dst, 1, key)
	dst = protowire.AppendTag(dst, 2, protowire.BytesType)
	return protowire.AppendVarint(dst, uint64(valSize))
}

// Span attributes (9), each a KeyValue whose AnyValue is one of:
// string_value (1), bool_value (2), int_value (3), double_value (4),
// array_value (5).

func attrStr(dst []byte, key, v string) []byte {
	v = valid(v)
	dst = appendKVHead(dst, 9, key, strSize(v))
	return appendStr(dst, 1, v)
}

func attrOptStr(dst []byte, key, v string) []byte {
	if v == "" {
		return dst
	}
	return attrStr(dst, key, v)
}

func attrInt(dst []byte, key string, v int64) []byte {
	dst = appendKVHead(dst, 9, key, 1+protowire.SizeVarint(uint64(v)))
	dst = protowire.AppendTag(dst, 3, protowire.VarintType)
	return protowire.AppendVarint(dst, uint64(v))
}

func attrF64(dst []byte, key string, v float64) []byte {
	dst = appendKVHead(dst, 9, key, 9)
	dst = protowire.AppendTag(dst, 4, protowire.Fixed64Type)
	return protowire.AppendFixed64(dst, math.Float64bits(v))
}

func attrBool(dst []byte, key string, v bool) []byte {
	dst = appendKVHead(dst, 9, key, 2)
	dst = protowire.AppendTag(dst, 2, protowire.VarintType)
	return protowire.AppendVarint(dst, protowire.EncodeBool(v))
}

// attrStrings appends an array of strings: array_value (5) { values (1)
// AnyValue { string_value (1) } }. Element i is a[i], or a[i] + ":" + b[i]
// when b is given (guardrail:action), written without building the string.
func attrStrings(dst []byte, key string, n int, a, b func(int) string) []byte {
	elem := func(i int) int {
		l := len(valid(a(i)))
		if b != nil {
			l += 1 + len(valid(b(i)))
		}
		return l
	}
	arr := 0
	for i := 0; i < n; i++ {
		arr += 1 + protowire.SizeBytes(1+protowire.SizeBytes(elem(i)))
	}
	dst = appendKVHead(dst, 9, key, 1+protowire.SizeBytes(arr))
	dst = protowire.AppendTag(dst, 5, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(arr))
	for i := 0; i < n; i++ {
		l := elem(i)
		dst = protowire.AppendTag(dst, 1, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(1+protowire.SizeBytes(l)))
		dst = protowire.AppendTag(dst, 1, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(l))
		dst = append(dst, valid(a(i))...)
		if b != nil {
			dst = append(append(dst, ':'), valid(b(i))...)
		}
	}
	return dst
}

// appendSpan appends one Span message body; field order and attribute
// order follow Span().
func appendSpan(dst []byte, r *usage.Record) []byte {
	end := r.OccurredAt
	start := end.Add(-r.Latency)
	op, model := valid(genAIOperation(r.Operation)), valid(r.Model)
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
	dst = protowire.AppendVarint(dst, uint64(len(op)+1+len(model)))
	dst = append(append(append(dst, op...), ' '), model...)
	dst = protowire.AppendTag(dst, 6, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(kind))
	// proto3 leaves a zero scalar out (only at the Unix epoch here).
	if t := uint64(start.UnixNano()); t != 0 {
		dst = protowire.AppendTag(dst, 7, protowire.Fixed64Type)
		dst = protowire.AppendFixed64(dst, t)
	}
	if t := uint64(end.UnixNano()); t != 0 {
		dst = protowire.AppendTag(dst, 8, protowire.Fixed64Type)
		dst = protowire.AppendFixed64(dst, t)
	}

	dst = attrStr(dst, "gen_ai.operation.name", op)
	dst = attrStr(dst, "gen_ai.request.model", r.Model)
	dst = attrOptStr(dst, "gen_ai.response.model", r.UpstreamModel)
	dst = attrOptStr(dst, "gen_ai.provider.name", r.Provider)
	dst = attrOptStr(dst, "gen_ai.system", r.Provider)
	dst = attrInt(dst, "gen_ai.usage.input_tokens", r.PromptTokens)
	dst = attrInt(dst, "gen_ai.usage.output_tokens", r.CompletionTokens)
	dst = attrInt(dst, "http.response.status_code", int64(r.StatusCode))
	dst = attrOptStr(dst, "error.type", r.ErrorClass)
	dst = attrOptStr(dst, "user.id", r.UserID)
	dst = attrOptStr(dst, "user.name", r.UserName)
	const idLen = 36 // the 8-4-4-4-12 form
	dst = appendKVHead(dst, 9, "gw.usage.request_id", 1+protowire.SizeBytes(idLen))
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	dst = protowire.AppendVarint(dst, idLen)
	dst = r.RequestID.AppendString(dst)
	dst = attrInt(dst, "gw.usage.attempt", int64(r.Attempt))
	dst = attrStr(dst, "gw.usage.attempt_kind", r.AttemptKind)
	dst = attrOptStr(dst, "gw.usage.error_message", r.ErrorMessage)
	dst = attrOptStr(dst, "gw.usage.api_key_id", r.APIKeyID)
	dst = attrOptStr(dst, "gw.usage.api_key_name", r.APIKeyName)
	dst = attrOptStr(dst, "gw.usage.team_id", r.TeamID)
	dst = attrOptStr(dst, "gw.usage.target_model", r.TargetModel)
	dst = attrOptStr(dst, "gw.usage.provider_key", r.ProviderKey)
	dst = attrOptStr(dst, "gw.usage.provider_key_id", r.ProviderKeyID)
	if t := r.Tags; t != nil {
		dst = attrOptStr(dst, "gw.usage.telemetry_tags.kind", t.Kind)
		dst = attrBool(dst, "gw.usage.telemetry_tags.featured", t.Featured)
		dst = attrOptStr(dst, "gw.usage.telemetry_tags.branded_provider", t.BrandedProvider)
		dst = attrOptStr(dst, "gw.usage.telemetry_tags.pk_label", t.PKLabel)
		dst = attrOptStr(dst, "gw.usage.telemetry_tags.byo_label", t.BYOLabel)
	}
	dst = attrStr(dst, "gw.usage.inbound_protocol", r.InboundProtocol)
	dst = attrStr(dst, "gw.usage.operation", r.Operation)
	dst = attrStr(dst, "gw.usage.cache_status", r.CacheStatus)
	dst = attrBool(dst, "gw.usage.stream", r.Stream)
	dst = attrInt(dst, "gw.usage.reasoning_tokens", r.ReasoningTokens)
	dst = attrInt(dst, "gw.usage.cached_prompt_tokens", r.CachedPromptTokens)
	if r.TotalTokens > 0 {
		dst = attrInt(dst, "gw.usage.total_tokens", r.TotalTokens)
	}
	dst = attrF64(dst, "gw.usage.cost_usd", r.CostUSD)
	dst = attrF64(dst, "gw.usage.latency_ms", ms(r.Latency))
	if r.AudioSeconds > 0 {
		dst = attrF64(dst, "gw.usage.audio_seconds", r.AudioSeconds)
	}
	for _, d := range [...]struct {
		k string
		v time.Duration
	}{{"gw.usage.ttft_ms", r.TTFT}, {"gw.usage.upstream_latency_ms", r.UpstreamLatency}, {"gw.usage.upstream_ttft_ms", r.UpstreamTTFT}} {
		if d.v > 0 {
			dst = attrF64(dst, d.k, ms(d.v))
		}
	}
	dst = attrInt(dst, "gw.usage.request_body_bytes", r.RequestBodyBytes)
	dst = attrInt(dst, "gw.usage.response_body_bytes", r.ResponseBodyBytes)
	if g := r.AppliedGuardrails; len(g) > 0 {
		dst = attrStrings(dst, "gw.usage.applied_guardrails", len(g), func(i int) string { return g[i] }, nil)
	}
	for _, h := range [...]struct {
		k    string
		hits []usage.GuardrailHit
	}{{"gw.usage.guardrail_enforced_hits", r.GuardrailEnforcedHits}, {"gw.usage.guardrail_monitor_hits", r.GuardrailMonitorHits}} {
		if hs := h.hits; len(hs) > 0 {
			dst = attrStrings(dst, h.k, len(hs), func(i int) string { return hs[i].Guardrail }, func(i int) string { return hs[i].Action })
		}
	}
	dst = attrOptStr(dst, "gw.usage.guardrail_bypassed_reason", r.GuardrailBypassedReason)
	dst = attrBool(dst, "gw.usage.guardrail_blocked_fail_closed", r.GuardrailBlockedFailClosed)
	if r.StatusCode >= 400 { // status (15) { message (2), code (3) = STATUS_CODE_ERROR }
		msg := valid(r.ErrorMessage)
		st := 2 // code
		if msg != "" {
			st += strSize(msg)
		}
		dst = protowire.AppendTag(dst, 15, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(st))
		if msg != "" {
			dst = appendStr(dst, 2, msg)
		}
		dst = protowire.AppendTag(dst, 3, protowire.VarintType)
		dst = protowire.AppendVarint(dst, 2)
	}
	return dst
}
