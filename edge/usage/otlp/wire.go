package otlp

import (
	"encoding/binary"
	"hash/crc32"
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
	ss := sc.encodeSpans(batch)
	return append(appendHead(dst, service, len(ss)), ss...)
}

// encodeSpans writes ScopeSpans' body (scope, then every span) to
// sc.scopeSpans.
func (sc *scratch) encodeSpans(batch []usage.Record) []byte {
	ss := sc.startScope(sc.scopeSpans[:0])
	for i := range batch {
		ss = sc.appendScopeSpan(ss, &batch[i])
	}
	sc.scopeSpans = ss
	return ss
}

// startScope begins a ScopeSpans body in ss (empty) and forgets the spans
// of the previous one.
func (sc *scratch) startScope(ss []byte) []byte {
	// ResourceSpans (1) { resource (1) { attributes (1) }, scope_spans (2) { scope (1) { name (1) }, spans (2)... } }
	ss = protowire.AppendTag(ss, 1, protowire.BytesType)
	ss = protowire.AppendVarint(ss, uint64(strSize(ScopeName)))
	ss = appendStr(ss, 1, ScopeName)
	sc.units, sc.spans = sc.units[:0], sc.spans[:0]
	return ss
}

// appendScopeSpan appends r's span to the ScopeSpans body ss (starting it
// when empty), noting where the span and each of its attributes is for
// gzipSpans.
func (sc *scratch) appendScopeSpan(ss []byte, r *usage.Record) []byte {
	if len(ss) == 0 {
		ss = sc.startScope(ss)
	}
	u0 := len(sc.units)
	sc.span = sc.appendSpan(sc.span[:0], r)
	tag := len(ss)
	ss = protowire.AppendTag(ss, 2, protowire.BytesType)
	ss = protowire.AppendVarint(ss, uint64(len(sc.span)))
	sc.spans = append(sc.spans, spanRef{tag: int32(tag), body: int32(len(ss)), u0: int32(u0), u1: int32(len(sc.units))})
	return append(ss, sc.span...)
}

// appendHead appends what precedes a ScopeSpans body of n bytes.
func appendHead(dst []byte, service string, n int) []byte {
	service = valid(service)
	kv := kvSize("service.name", strSize(service))
	res := 1 + protowire.SizeBytes(kv) // attributes (1)
	rs := 1 + protowire.SizeBytes(res) + 1 + protowire.SizeBytes(n)
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(rs))
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(res))
	dst = appendKVHead(dst, 1, "service.name", strSize(service))
	dst = appendStr(dst, 1, service)
	dst = protowire.AppendTag(dst, 2, protowire.BytesType)
	return protowire.AppendVarint(dst, uint64(n))
}

// appendRequestGzip appends the gzip stream of appendRequest's bytes (see
// deflate.go): each attribute of a span is written against the same
// attribute of the span before it.
func appendRequestGzip(dst []byte, batch []usage.Record, service string, sc *scratch) []byte {
	return sc.gzipSpans(dst, sc.encodeSpans(batch), service)
}

// gzipSpans compresses the request around ss, the ScopeSpans body whose
// spans sc noted.
func (sc *scratch) gzipSpans(dst, ss []byte, service string) []byte {
	sc.head = appendHead(sc.head[:0], service, len(ss))
	crc := crc32.Update(crc32.ChecksumIEEE(sc.head), crc32.IEEETable, ss)
	z := &sc.z
	z.start(dst)
	z.literals(sc.head)
	first := len(ss)
	if len(sc.spans) > 0 {
		first = int(sc.spans[0].tag)
	}
	z.literals(ss[:first])
	units := sc.units
	// A run of attributes that sit at one distance from their
	// counterparts in the previous span (all lengths agreed so far) is
	// compared in one piece: [sa, sb) against [sa-sd, ...) (sd 0: no
	// counterpart, literals), written when the run ends.
	sa, sb, sd := 0, 0, 0
	for i := range sc.spans {
		sp := &sc.spans[i]
		end := len(ss)
		if i+1 < len(sc.spans) {
			end = int(sc.spans[i+1].tag)
		}
		z.run(ss, sa, sb, sd)
		z.literals(ss[sp.tag:sp.body])
		sa, sb, sd = 0, 0, 0
		var pu []unit // the previous span's units
		if i > 0 {
			pu = units[sc.spans[i-1].u0:sc.spans[i-1].u1]
		}
		pbody := 0
		if i > 0 {
			pbody = int(sc.spans[i-1].body)
		}
		cu := units[sp.u0:sp.u1]
		j := 0 // next unit of pu to look at
		for k := range cu {
			a, b := int(sp.body)+int(cu[k].off), end
			if k+1 < len(cu) {
				b = int(sp.body) + int(cu[k+1].off)
			}
			// The same attribute in the previous span: the next one there,
			// or a few further when optional attributes come and go.
			d := 0
			for m := j; m < len(pu) && m < j+8; m++ {
				if pu[m].key == cu[k].key {
					j = m + 1
					if ra := pbody + int(pu[m].off); a-ra <= maxDist {
						d = a - ra
					}
					break
				}
			}
			if sb == a && sd == d {
				sb = b // same distance, contiguous on both sides: one run
				continue
			}
			z.run(ss, sa, sb, sd)
			sa, sb, sd = a, b, d
		}
	}
	z.run(ss, sa, sb, sd)
	return z.finish(crc, len(sc.head)+len(ss))
}

// scratch holds the encoder's reusable buffers.
type scratch struct {
	scopeSpans, span, head []byte
	units                  []unit    // every span's attributes, in order
	spans                  []spanRef // where each span is in scopeSpans
	z                      deflater
}

// unit is one part of a span: the fields before the attributes (key ""),
// an attribute, or the status. off is from the start of the span's body.
type unit struct {
	off int32
	key string // a constant: equal keys compare by pointer first
}

// spanRef places one span in scopeSpans: its tag and length at tag, its
// body from body on, its units at units[u0:u1].
type spanRef struct{ tag, body, u0, u1 int32 }

func (sc *scratch) mark(dst []byte, key string) {
	sc.units = append(sc.units, unit{off: int32(len(dst)), key: key})
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

func (sc *scratch) attrStr(dst []byte, key, v string) []byte {
	sc.mark(dst, key)
	v = valid(v)
	dst = appendKVHead(dst, 9, key, strSize(v))
	return appendStr(dst, 1, v)
}

func (sc *scratch) attrOptStr(dst []byte, key, v string) []byte {
	if v == "" {
		return dst
	}
	return sc.attrStr(dst, key, v)
}

func (sc *scratch) attrInt(dst []byte, key string, v int64) []byte {
	sc.mark(dst, key)
	dst = appendKVHead(dst, 9, key, 1+protowire.SizeVarint(uint64(v)))
	dst = protowire.AppendTag(dst, 3, protowire.VarintType)
	return protowire.AppendVarint(dst, uint64(v))
}

func (sc *scratch) attrF64(dst []byte, key string, v float64) []byte {
	sc.mark(dst, key)
	dst = appendKVHead(dst, 9, key, 9)
	dst = protowire.AppendTag(dst, 4, protowire.Fixed64Type)
	return protowire.AppendFixed64(dst, math.Float64bits(v))
}

func (sc *scratch) attrBool(dst []byte, key string, v bool) []byte {
	sc.mark(dst, key)
	dst = appendKVHead(dst, 9, key, 2)
	dst = protowire.AppendTag(dst, 2, protowire.VarintType)
	return protowire.AppendVarint(dst, protowire.EncodeBool(v))
}

// attrStrings appends an array of strings: array_value (5) { values (1)
// AnyValue { string_value (1) } }. Element i is a[i], or a[i] + ":" + b[i]
// when b is given (guardrail:action), written without building the string.
func (sc *scratch) attrStrings(dst []byte, key string, n int, a, b func(int) string) []byte {
	sc.mark(dst, key)
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
func (sc *scratch) appendSpan(dst []byte, r *usage.Record) []byte {
	sc.mark(dst, "")
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

	dst = sc.attrStr(dst, "gen_ai.operation.name", op)
	dst = sc.attrStr(dst, "gen_ai.request.model", r.Model)
	dst = sc.attrOptStr(dst, "gen_ai.response.model", r.UpstreamModel)
	dst = sc.attrOptStr(dst, "gen_ai.provider.name", r.Provider)
	dst = sc.attrOptStr(dst, "gen_ai.system", r.Provider)
	dst = sc.attrInt(dst, "gen_ai.usage.input_tokens", r.PromptTokens)
	dst = sc.attrInt(dst, "gen_ai.usage.output_tokens", r.CompletionTokens)
	dst = sc.attrInt(dst, "http.response.status_code", int64(r.StatusCode))
	dst = sc.attrOptStr(dst, "error.type", r.ErrorClass)
	dst = sc.attrOptStr(dst, "user.id", r.UserID)
	dst = sc.attrOptStr(dst, "user.name", r.UserName)
	const idLen = 36 // the 8-4-4-4-12 form
	sc.mark(dst, "gw.usage.request_id")
	dst = appendKVHead(dst, 9, "gw.usage.request_id", 1+protowire.SizeBytes(idLen))
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	dst = protowire.AppendVarint(dst, idLen)
	dst = r.RequestID.AppendString(dst)
	dst = sc.attrInt(dst, "gw.usage.attempt", int64(r.Attempt))
	dst = sc.attrStr(dst, "gw.usage.attempt_kind", r.AttemptKind)
	dst = sc.attrOptStr(dst, "gw.usage.error_message", r.ErrorMessage)
	dst = sc.attrOptStr(dst, "gw.usage.api_key_id", r.APIKeyID)
	dst = sc.attrOptStr(dst, "gw.usage.api_key_name", r.APIKeyName)
	dst = sc.attrOptStr(dst, "gw.usage.team_id", r.TeamID)
	dst = sc.attrOptStr(dst, "gw.usage.target_model", r.TargetModel)
	dst = sc.attrOptStr(dst, "gw.usage.provider_key", r.ProviderKey)
	dst = sc.attrOptStr(dst, "gw.usage.provider_key_id", r.ProviderKeyID)
	if t := r.Tags; t != nil {
		dst = sc.attrOptStr(dst, "gw.usage.telemetry_tags.kind", t.Kind)
		dst = sc.attrBool(dst, "gw.usage.telemetry_tags.featured", t.Featured)
		dst = sc.attrOptStr(dst, "gw.usage.telemetry_tags.branded_provider", t.BrandedProvider)
		dst = sc.attrOptStr(dst, "gw.usage.telemetry_tags.pk_label", t.PKLabel)
		dst = sc.attrOptStr(dst, "gw.usage.telemetry_tags.byo_label", t.BYOLabel)
	}
	dst = sc.attrStr(dst, "gw.usage.inbound_protocol", r.InboundProtocol)
	dst = sc.attrStr(dst, "gw.usage.operation", r.Operation)
	dst = sc.attrStr(dst, "gw.usage.cache_status", r.CacheStatus)
	dst = sc.attrBool(dst, "gw.usage.stream", r.Stream)
	dst = sc.attrInt(dst, "gw.usage.reasoning_tokens", r.ReasoningTokens)
	dst = sc.attrInt(dst, "gw.usage.cached_prompt_tokens", r.CachedPromptTokens)
	if r.TotalTokens > 0 {
		dst = sc.attrInt(dst, "gw.usage.total_tokens", r.TotalTokens)
	}
	dst = sc.attrF64(dst, "gw.usage.cost_usd", r.CostUSD)
	dst = sc.attrF64(dst, "gw.usage.latency_ms", ms(r.Latency))
	if r.AudioSeconds > 0 {
		dst = sc.attrF64(dst, "gw.usage.audio_seconds", r.AudioSeconds)
	}
	for _, d := range [...]struct {
		k string
		v time.Duration
	}{{"gw.usage.ttft_ms", r.TTFT}, {"gw.usage.upstream_latency_ms", r.UpstreamLatency}, {"gw.usage.upstream_ttft_ms", r.UpstreamTTFT}} {
		if d.v > 0 {
			dst = sc.attrF64(dst, d.k, ms(d.v))
		}
	}
	dst = sc.attrInt(dst, "gw.usage.request_body_bytes", r.RequestBodyBytes)
	dst = sc.attrInt(dst, "gw.usage.response_body_bytes", r.ResponseBodyBytes)
	if g := r.AppliedGuardrails; len(g) > 0 {
		dst = sc.attrStrings(dst, "gw.usage.applied_guardrails", len(g), func(i int) string { return g[i] }, nil)
	}
	for _, h := range [...]struct {
		k    string
		hits []usage.GuardrailHit
	}{{"gw.usage.guardrail_enforced_hits", r.GuardrailEnforcedHits}, {"gw.usage.guardrail_monitor_hits", r.GuardrailMonitorHits}} {
		if hs := h.hits; len(hs) > 0 {
			dst = sc.attrStrings(dst, h.k, len(hs), func(i int) string { return hs[i].Guardrail }, func(i int) string { return hs[i].Action })
		}
	}
	dst = sc.attrOptStr(dst, "gw.usage.guardrail_bypassed_reason", r.GuardrailBypassedReason)
	dst = sc.attrBool(dst, "gw.usage.guardrail_blocked_fail_closed", r.GuardrailBlockedFailClosed)
	if r.StatusCode >= 400 { // status (15) { message (2), code (3) = STATUS_CODE_ERROR }
		msg := valid(r.ErrorMessage)
		st := 2 // code
		if msg != "" {
			st += strSize(msg)
		}
		sc.mark(dst, "\x00status")
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
