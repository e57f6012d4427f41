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
	"gw/edge/usage/gzipdelta"
)

// appendRequest encodes the batch as TracesData straight to protobuf wire
// bytes, the same bytes proto.Marshal(Request(batch)) gives (a test checks
// it byte for byte and field by field through the official types), without
// building the message tree: the generated types cost three allocations
// per attribute. Every length is computed before its message is written,
// so a span's attributes are written once, in place, and so is the span
// (see appendScopeSpan); the scope's list is then copied into dst, which
// needs its length first.
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
	sc.crc, sc.crcAt, sc.rolled = 0, 0, 0
	return ss
}

// appendScopeSpan appends r's span to the ScopeSpans body ss (starting it
// when empty), noting where the span and each of its attributes is for
// gzipSpans. The span is written in place after two bytes kept for its
// length, enough for every span below 16 KiB; only a span whose length
// takes another number of bytes is moved.
func (sc *scratch) appendScopeSpan(ss []byte, r *usage.Record) []byte {
	if len(ss) == 0 {
		ss = sc.startScope(ss)
	}
	u0 := len(sc.units)
	tag := len(ss)
	ss = append(ss, 2<<3|byte(protowire.BytesType), 0, 0)
	sc.base, sc.u0, sc.shape = len(ss), u0, 0
	ss = sc.appendSpan(ss, r)
	n := len(ss) - sc.base
	if w := protowire.SizeVarint(uint64(n)); w != 2 {
		body := tag + 1 + w
		ss = append(ss, make([]byte, max(w-2, 0))...)
		copy(ss[body:], ss[sc.base:sc.base+n])
		ss = ss[:body+n]
	}
	protowire.AppendVarint(ss[tag+1:tag+1], uint64(n))
	sc.spans = append(sc.spans, spanRef{tag: int32(tag), body: int32(len(ss) - n), u0: int32(u0), u1: int32(len(sc.units)), shape: sc.shape, parts: sc.parts})
	sc.prev = *r
	if sc.gzip {
		sc.gzipSpan(ss, len(sc.spans)-1)
		ss = sc.roll(ss)
	}
	return ss
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
// edge/usage/gzipdelta): each attribute of a span is written against the same
// attribute of the span before it.
func appendRequestGzip(dst []byte, batch []usage.Record, service string, sc *scratch) []byte {
	sc.gzip = true
	return sc.gzipFinish(dst, sc.encodeSpans(batch), service)
}

// gzipSpan compresses span i of ss, just written (sc.gzip): in the
// cache, where a whole batch's spans compressed at its end were not (they
// were half a megabyte, written over tens of milliseconds of a loaded
// gateway's other work). The first span starts the block, after the scope
// (no span before it: literals); gzipFinish puts the head, known only at
// the end, before the block.
func (sc *scratch) gzipSpan(ss []byte, i int) {
	if i == 0 {
		sc.gzipStart(ss)
		return
	}
	z := &sc.z
	sp := &sc.spans[i]
	end := len(ss)
	sc.crc = crc32.Update(sc.crc, crc32.IEEETable, ss[sc.crcAt:])
	sc.crcAt = end
	z.Reserve(end - int(sp.tag))
	p := &sc.spans[i-1]
	if d := int(sp.tag - p.tag); d == end-int(sp.tag) && d <= gzipdelta.MaxDist && sp.shape == p.shape {
		// The span has the previous one's size and layout (nearly
		// always): the whole of it, length included, against that one.
		// A reference running on from the previous span continues.
		// (Two layouts with one shape would cost compression, not
		// correctness: any bytes may be compared.)
		// A part copied from the span before is one reference, made
		// without comparing it.
		a := int(sp.tag)
		for k := range usage.NumParts {
			b := int(sp.body) + int(sp.parts.off[k+1])
			if sp.parts.same&(1<<k) != 0 && b-a >= 4 {
				z.Match(b-a, d)
			} else {
				z.Run(ss, a, b, d)
			}
			a = b
		}
		return
	}
	z.Literals(ss[sp.tag:sp.body])
	cu, pu := sc.units[sp.u0:sp.u1], sc.units[p.u0:p.u1]
	pbody := int(p.body)
	// A run of attributes that sit at one distance from their
	// counterparts in the previous span is compared in one piece: [sa, sb)
	// against [sa-sd, ...) (sd 0: no counterpart, literals), written when
	// the run ends.
	sa, sb, sd := 0, 0, 0
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
				if ra := pbody + int(pu[m].off); a-ra <= gzipdelta.MaxDist {
					d = a - ra
				}
				break
			}
		}
		if sb == a && sd == d {
			sb = b // same distance, contiguous on both sides: one run
			continue
		}
		z.Run(ss, sa, sb, sd)
		sa, sb, sd = a, b, d
	}
	z.Run(ss, sa, sb, sd)
}

// roll keeps ss, a compressing encoder's ScopeSpans body, below
// gzipdelta.RollAt: once past it, everything before the last span (the
// next one's reference) is dropped, so the buffer stays in the cache
// instead of streaming half a megabyte a batch through it.
func (sc *scratch) roll(ss []byte) []byte {
	if len(ss) < gzipdelta.RollAt {
		return ss
	}
	last := sc.spans[len(sc.spans)-1]
	cut := int(last.tag)
	sc.rolled += cut
	sc.crcAt -= cut
	ss = ss[:copy(ss, ss[cut:])]
	u := copy(sc.units, sc.units[last.u0:last.u1])
	sc.units = sc.units[:u]
	last.tag, last.body, last.u0, last.u1 = 0, last.body-int32(cut), 0, int32(u)
	sc.spans = append(sc.spans[:0], last)
	return ss
}

// gzipFinish ends the gzip member of the request around ss, the
// ScopeSpans body whose spans gzipSpan compressed: the head, whose
// lengths are ss's, goes first as a stored block, then the spans' block.
func (sc *scratch) gzipFinish(dst, ss []byte, service string) []byte {
	if len(sc.spans) == 0 { // the scope alone
		sc.gzipStart(ss)
	}
	n := sc.rolled + len(ss) // the whole ScopeSpans body's size
	sc.head = appendHead(sc.head[:0], service, n)
	crc := gzipdelta.CRC32Combine(crc32.ChecksumIEEE(sc.head), sc.crc, n)
	dst = gzipdelta.AppendStoredHead(dst, sc.head)
	dst = append(dst, sc.z.End()...)
	return gzipdelta.AppendTrailer(dst, crc, len(sc.head)+n)
}

// gzipStart opens the spans' block with ss, the scope and the batch's
// first span if any: literals, there being nothing before to refer to.
func (sc *scratch) gzipStart(ss []byte) {
	sc.z.Open(len(ss))
	sc.z.Literals(ss)
	sc.crc, sc.crcAt = crc32.ChecksumIEEE(ss), len(ss)
}

// scratch holds the encoder's reusable buffers.
type scratch struct {
	scopeSpans, head []byte
	base             int    // where the span being written starts its body
	shape            uint64 // a hash of its units' offsets (the part's, while it is written)
	partAt           int32  // where the part being written starts in the span's body
	gzip             bool   // units are noted, spans compressed (gzipSpan)
	crc              uint32 // CRC-32 of the body up to scopeSpans[crcAt] (gzip)
	crcAt            int
	rolled           int       // bytes of the body dropped before scopeSpans[0] (see roll)
	units            []unit    // every span's attributes, in order
	spans            []spanRef // where each span is in scopeSpans
	z                gzipdelta.Writer
	u0               int          // where in units the span being written starts
	parts            spanParts    // its parts, noted as it is written
	prev             usage.Record // the record of the last span in spans (its strings held)
}

// spanParts places a span's parts (usage.PartHead to usage.PartGuard): part
// p is the span body's bytes [off[p], off[p+1]) and its units [u[p],
// u[p+1]), from the span's first, shape[p] a hash of its units' offsets
// from its start. The head is the span's own fields and the request ID; a
// later part whose fields are unchanged from the span before is a copy of
// that span's (copyPart), with bit p of same set.
type spanParts struct {
	off, u [usage.NumParts + 1]int32
	shape  [usage.NumParts]uint64
	same   uint8
}

// unit is one part of a span: the fields before the attributes, an
// attribute, or the status. off is from the start of the span's body.
type unit struct {
	off int32
	key *attrKey
}

// spanRef places one span in scopeSpans: its tag and length at tag, its
// body from body on, its units at units[u0:u1] (and their shape).
type spanRef struct {
	tag, body, u0, u1 int32
	shape             uint64
	parts             spanParts
}

// shapeMul mixes an offset into a shape (FNV-1a's 64-bit prime).
const shapeMul = 0x100000001b3

// mark notes where a unit starts, for the gzip. The units' shape (a hash
// of their offsets from their part's start) tells gzipSpans which spans
// share a layout without comparing their units.
func (sc *scratch) mark(dst []byte, key *attrKey) {
	if !sc.gzip {
		return
	}
	off := int32(len(dst) - sc.base)
	sc.units = append(sc.units, unit{off: off, key: key})
	sc.shape = sc.shape*shapeMul + uint64(off-sc.partAt)
}

// attrKey is a span attribute's key with the bytes of its KeyValue that
// do not depend on the value, built once: writing the key was the largest
// part of writing an attribute.
type attrKey struct {
	name string
	// head is, for a value of variable size, the KeyValue body up to the
	// AnyValue's length: key (1), then value (2)'s tag. For a value of
	// fixed size it is the whole attribute up to the value's own bytes.
	head string
}

// varKey is the key of an attribute whose value's size varies.
func varKey(name string) *attrKey {
	h := appendStr(nil, 1, name)
	return &attrKey{name: name, head: string(protowire.AppendTag(h, 2, protowire.BytesType))}
}

// fixedKey is the key of an attribute whose AnyValue is field num of
// type typ with a value of size bytes.
func fixedKey(name string, num protowire.Number, typ protowire.Type, size int) *attrKey {
	h := appendKVHead(nil, 9, name, 1+size)
	return &attrKey{name: name, head: string(protowire.AppendTag(h, num, typ))}
}

func f64Key(name string) *attrKey  { return fixedKey(name, 4, protowire.Fixed64Type, 8) }
func boolKey(name string) *attrKey { return fixedKey(name, 2, protowire.VarintType, 1) }

// The span's units that are not attributes.
var spanHead, spanStatus = &attrKey{}, &attrKey{}

var (
	kOperationName = varKey("gen_ai.operation.name")
	kRequestModel  = varKey("gen_ai.request.model")
	kResponseModel = varKey("gen_ai.response.model")
	kProviderName  = varKey("gen_ai.provider.name")
	kSystem        = varKey("gen_ai.system")
	kInputTokens   = varKey("gen_ai.usage.input_tokens")
	kOutputTokens  = varKey("gen_ai.usage.output_tokens")
	kStatusCode    = varKey("http.response.status_code")
	kErrorType     = varKey("error.type")
	kUserID        = varKey("user.id")
	kUserName      = varKey("user.name")
	kRequestID     = varKey("gw.usage.request_id")
	kAttempt       = varKey("gw.usage.attempt")
	kAttemptKind   = varKey("gw.usage.attempt_kind")
	kErrorMessage  = varKey("gw.usage.error_message")
	kAPIKeyID      = varKey("gw.usage.api_key_id")
	kAPIKeyName    = varKey("gw.usage.api_key_name")
	kTeamID        = varKey("gw.usage.team_id")
	kTargetModel   = varKey("gw.usage.target_model")
	kProviderKey   = varKey("gw.usage.provider_key")
	kProviderKeyID = varKey("gw.usage.provider_key_id")
	kTagKind       = varKey("gw.usage.telemetry_tags.kind")
	kTagFeatured   = boolKey("gw.usage.telemetry_tags.featured")
	kTagBranded    = varKey("gw.usage.telemetry_tags.branded_provider")
	kTagPKLabel    = varKey("gw.usage.telemetry_tags.pk_label")
	kTagBYOLabel   = varKey("gw.usage.telemetry_tags.byo_label")
	kInbound       = varKey("gw.usage.inbound_protocol")
	kOperation     = varKey("gw.usage.operation")
	kMCPServer     = varKey("gw.usage.mcp_server")
	kMCPTool       = varKey("gw.usage.mcp_tool")
	kCacheStatus   = varKey("gw.usage.cache_status")
	kStream        = boolKey("gw.usage.stream")
	kReasoning     = varKey("gw.usage.reasoning_tokens")
	kCachedPrompt  = varKey("gw.usage.cached_prompt_tokens")
	kTotalTokens   = varKey("gw.usage.total_tokens")
	kCostUSD       = f64Key("gw.usage.cost_usd")
	kLatencyMS     = f64Key("gw.usage.latency_ms")
	kAudioSeconds  = f64Key("gw.usage.audio_seconds")
	kTTFT          = f64Key("gw.usage.ttft_ms")
	kUpLatency     = f64Key("gw.usage.upstream_latency_ms")
	kUpTTFT        = f64Key("gw.usage.upstream_ttft_ms")
	kReqBytes      = varKey("gw.usage.request_body_bytes")
	kRespBytes     = varKey("gw.usage.response_body_bytes")
	kGuardrails    = varKey("gw.usage.applied_guardrails")
	kEnforcedHits  = varKey("gw.usage.guardrail_enforced_hits")
	kMonitorHits   = varKey("gw.usage.guardrail_monitor_hits")
	kBypassed      = varKey("gw.usage.guardrail_bypassed_reason")
	kFailClosed    = boolKey("gw.usage.guardrail_blocked_fail_closed")
)

// valid returns s with each run of invalid UTF-8 replaced by U+FFFD:
// protobuf string fields must be UTF-8, and a receiver built on the
// official types (the Collector) rejects the whole request otherwise. A
// caller-supplied user name, say, could make a batch of 512 spans
// undeliverable. Allocates only for an invalid string. Nearly every value
// is short ASCII, which utf8.ValidString checks byte by byte past its
// last full word.
func valid(s string) string {
	if ascii(s) || utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// ascii reports whether s is all ASCII, a word at a time; the last 4-7
// bytes as two overlapping halves.
func ascii(s string) bool {
	var or uint64
	for ; len(s) >= 8; s = s[8:] {
		or |= uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	}
	switch k := len(s); {
	case k >= 4:
		t := s[k-4:]
		or |= uint64(uint32(s[0])|uint32(s[1])<<8|uint32(s[2])<<16|uint32(s[3])<<24) |
			uint64(uint32(t[0])|uint32(t[1])<<8|uint32(t[2])<<16|uint32(t[3])<<24)
	case k > 0:
		or |= uint64(s[0] | s[k/2] | s[k-1])
	}
	return or&0x8080808080808080 == 0
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
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(kvSize(key, valSize)))
	dst = appendStr(dst, 1, key)
	dst = protowire.AppendTag(dst, 2, protowire.BytesType)
	return protowire.AppendVarint(dst, uint64(valSize))
}

// attrHead appends attribute k of a variable-size value, up to the
// AnyValue's body of valSize bytes.
func attrHead(dst []byte, k *attrKey, valSize int) []byte {
	if kv := len(k.head) + 1 + valSize; kv < 128 {
		// Every length below 128: one byte each.
		dst = append(dst, 9<<3|byte(protowire.BytesType), byte(kv))
		dst = append(dst, k.head...)
		return append(dst, byte(valSize))
	}
	return appendKVHead(dst, 9, k.name, valSize)
}

// Span attributes (9), each a KeyValue whose AnyValue is one of:
// string_value (1), bool_value (2), int_value (3), double_value (4),
// array_value (5).

func (sc *scratch) attrStr(dst []byte, k *attrKey, v string) []byte {
	sc.mark(dst, k)
	v = valid(v)
	if kv := len(k.head) + 3 + len(v); kv < 128 {
		// Every length below 128: one byte each.
		dst = append(dst, 9<<3|byte(protowire.BytesType), byte(kv))
		dst = append(dst, k.head...)
		dst = append(dst, byte(2+len(v)), 1<<3|byte(protowire.BytesType), byte(len(v)))
		return append(dst, v...)
	}
	return appendStr(attrHead(dst, k, strSize(v)), 1, v)
}

func (sc *scratch) attrOptStr(dst []byte, k *attrKey, v string) []byte {
	if v == "" {
		return dst
	}
	return sc.attrStr(dst, k, v)
}

func (sc *scratch) attrInt(dst []byte, k *attrKey, v int64) []byte {
	sc.mark(dst, k)
	if uint64(v) < 0x80 && len(k.head) < 128-4 {
		dst = append(dst, 9<<3|byte(protowire.BytesType), byte(len(k.head)+3))
		dst = append(dst, k.head...)
		return append(dst, 2, 3<<3|byte(protowire.VarintType), byte(v))
	}
	dst = attrHead(dst, k, 1+protowire.SizeVarint(uint64(v)))
	dst = protowire.AppendTag(dst, 3, protowire.VarintType)
	return protowire.AppendVarint(dst, uint64(v))
}

func (sc *scratch) attrF64(dst []byte, k *attrKey, v float64) []byte {
	sc.mark(dst, k)
	return binary.LittleEndian.AppendUint64(append(dst, k.head...), math.Float64bits(v))
}

func (sc *scratch) attrBool(dst []byte, k *attrKey, v bool) []byte {
	sc.mark(dst, k)
	return append(append(dst, k.head...), byte(protowire.EncodeBool(v)))
}

// attrStrings appends an array of strings: array_value (5) { values (1)
// AnyValue { string_value (1) } }. Element i is a[i], or a[i] + ":" + b[i]
// when b is given (guardrail:action), written without building the string.
func (sc *scratch) attrStrings(dst []byte, k *attrKey, n int, a, b func(int) string) []byte {
	sc.mark(dst, k)
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
	dst = attrHead(dst, k, 1+protowire.SizeBytes(arr))
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
// order follow Span(). A part of the span whose fields equal the span
// before's (the same caller, route, tokens or guardrails, as most records
// of a gateway have) is copied from that span instead of encoded.
func (sc *scratch) appendSpan(dst []byte, r *usage.Record) []byte {
	sc.partAt, sc.parts.same = 0, 0
	sc.mark(dst, spanHead)
	end := r.OccurredAt
	start := end.Add(-r.Latency)
	op, model := valid(genAIOperation(r.Operation)), valid(r.Model)
	kind := byte(2) // SPAN_KIND_SERVER
	if r.AttemptKind == usage.AttemptFailed {
		kind, start = 3, end // SPAN_KIND_CLIENT, a point in time
	}
	var b [20]byte
	copy(b[:], r.RequestID[:])
	binary.LittleEndian.PutUint32(b[16:], uint32(r.Attempt))
	// trace_id (1), span_id (2), name (5), kind (6)
	dst = append(dst, 1<<3|byte(protowire.BytesType), 16)
	dst = append(dst, r.RequestID[:]...)
	dst = append(dst, 2<<3|byte(protowire.BytesType), 8)
	dst = binary.BigEndian.AppendUint64(dst, xxhash.Sum64(b[:]))
	dst = protowire.AppendTag(dst, 5, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(len(op)+1+len(model)))
	dst = append(append(append(dst, op...), ' '), model...)
	dst = append(dst, 6<<3|byte(protowire.VarintType), kind)
	// proto3 leaves a zero scalar out (only at the Unix epoch here).
	if t := uint64(start.UnixNano()); t != 0 {
		dst = binary.LittleEndian.AppendUint64(append(dst, 7<<3|byte(protowire.Fixed64Type)), t)
	}
	if t := uint64(end.UnixNano()); t != 0 {
		dst = binary.LittleEndian.AppendUint64(append(dst, 8<<3|byte(protowire.Fixed64Type)), t)
	}
	const idLen = 36 // the 8-4-4-4-12 form
	sc.mark(dst, kRequestID)
	dst = attrHead(dst, kRequestID, 2+idLen)
	dst = append(dst, 1<<3|byte(protowire.BytesType), idLen)
	dst = r.RequestID.AppendString(dst)

	var prev *spanRef
	if len(sc.spans) > 0 {
		prev = &sc.spans[len(sc.spans)-1]
	}
	for p := usage.PartHead + 1; ; p++ {
		// Part p-1 ends here.
		sc.parts.shape[p-1], sc.shape = sc.shape, 0
		sc.partAt = int32(len(dst) - sc.base)
		sc.parts.off[p], sc.parts.u[p] = sc.partAt, int32(len(sc.units)-sc.u0)
		if p == usage.NumParts {
			break
		}
		if prev != nil && samePart(p, r, &sc.prev) {
			dst = sc.copyPart(dst, prev, p)
			sc.shape = prev.parts.shape[p]
			sc.parts.same |= 1 << p
			continue
		}
		switch p {
		case usage.PartCall:
			dst = sc.appendCall(dst, r, op, model)
		case usage.PartTokens:
			dst = sc.appendTokens(dst, r)
		case usage.PartTimes:
			dst = sc.appendTimes(dst, r)
		default:
			dst = sc.appendGuard(dst, r)
		}
	}
	// The span's shape, from its parts'.
	for p := range usage.NumParts {
		sc.shape = (sc.shape*shapeMul+uint64(sc.parts.off[p]))*shapeMul + sc.parts.shape[p]
	}
	return dst
}

// samePart is usage.SamePart for a span, whose last part also holds the
// span's status (from the status code and error message).
func samePart(p int, a, b *usage.Record) bool {
	return usage.SamePart(p, a, b) && (p != usage.PartGuard || a.StatusCode == b.StatusCode && a.ErrorMessage == b.ErrorMessage)
}

// copyPart appends part p of span prev, the one before (its units too,
// moved to where the copy is, for gzipSpan).
func (sc *scratch) copyPart(dst []byte, prev *spanRef, p int) []byte {
	from, to := prev.parts.off[p], prev.parts.off[p+1]
	if sc.gzip {
		shift, n := int32(len(dst)-sc.base)-from, len(sc.units)
		sc.units = append(sc.units, sc.units[prev.u0+prev.parts.u[p]:prev.u0+prev.parts.u[p+1]]...)
		for k := n; k < len(sc.units); k++ {
			sc.units[k].off += shift
		}
	}
	return append(dst, dst[prev.body+from:prev.body+to]...)
}

// appendCall appends the attributes of the attempt, caller, route and
// classification (usage.PartCall); op and model are the valid forms of
// the record's.
func (sc *scratch) appendCall(dst []byte, r *usage.Record, op, model string) []byte {
	dst = sc.attrStr(dst, kOperationName, op)
	dst = sc.attrStr(dst, kRequestModel, model)
	dst = sc.attrOptStr(dst, kResponseModel, r.UpstreamModel)
	dst = sc.attrOptStr(dst, kProviderName, r.Provider)
	dst = sc.attrOptStr(dst, kSystem, r.Provider)
	dst = sc.attrInt(dst, kStatusCode, int64(r.StatusCode))
	dst = sc.attrOptStr(dst, kErrorType, r.ErrorClass)
	dst = sc.attrOptStr(dst, kUserID, r.UserID)
	dst = sc.attrOptStr(dst, kUserName, r.UserName)
	dst = sc.attrInt(dst, kAttempt, int64(r.Attempt))
	dst = sc.attrStr(dst, kAttemptKind, r.AttemptKind)
	dst = sc.attrOptStr(dst, kErrorMessage, r.ErrorMessage)
	dst = sc.attrOptStr(dst, kAPIKeyID, r.APIKeyID)
	dst = sc.attrOptStr(dst, kAPIKeyName, r.APIKeyName)
	dst = sc.attrOptStr(dst, kTeamID, r.TeamID)
	dst = sc.attrOptStr(dst, kTargetModel, r.TargetModel)
	dst = sc.attrOptStr(dst, kProviderKey, r.ProviderKey)
	dst = sc.attrOptStr(dst, kProviderKeyID, r.ProviderKeyID)
	if t := r.Tags; t != nil {
		dst = sc.attrOptStr(dst, kTagKind, t.Kind)
		dst = sc.attrBool(dst, kTagFeatured, t.Featured)
		dst = sc.attrOptStr(dst, kTagBranded, t.BrandedProvider)
		dst = sc.attrOptStr(dst, kTagPKLabel, t.PKLabel)
		dst = sc.attrOptStr(dst, kTagBYOLabel, t.BYOLabel)
	}
	dst = sc.attrStr(dst, kInbound, r.InboundProtocol)
	dst = sc.attrStr(dst, kOperation, r.Operation)
	dst = sc.attrOptStr(dst, kMCPServer, r.MCPServer)
	dst = sc.attrOptStr(dst, kMCPTool, r.MCPTool)
	dst = sc.attrStr(dst, kCacheStatus, r.CacheStatus)
	return sc.attrBool(dst, kStream, r.Stream)
}

// appendTokens appends the tokens, cost and audio seconds (usage.PartTokens).
func (sc *scratch) appendTokens(dst []byte, r *usage.Record) []byte {
	dst = sc.attrInt(dst, kInputTokens, r.PromptTokens)
	dst = sc.attrInt(dst, kOutputTokens, r.CompletionTokens)
	dst = sc.attrInt(dst, kReasoning, r.ReasoningTokens)
	dst = sc.attrInt(dst, kCachedPrompt, r.CachedPromptTokens)
	if r.TotalTokens > 0 {
		dst = sc.attrInt(dst, kTotalTokens, r.TotalTokens)
	}
	dst = sc.attrF64(dst, kCostUSD, r.CostUSD)
	if r.AudioSeconds > 0 {
		dst = sc.attrF64(dst, kAudioSeconds, r.AudioSeconds)
	}
	return dst
}

// appendTimes appends the latencies and body sizes (usage.PartTimes).
func (sc *scratch) appendTimes(dst []byte, r *usage.Record) []byte {
	dst = sc.attrF64(dst, kLatencyMS, ms(r.Latency))
	for _, d := range [...]struct {
		k *attrKey
		v time.Duration
	}{{kTTFT, r.TTFT}, {kUpLatency, r.UpstreamLatency}, {kUpTTFT, r.UpstreamTTFT}} {
		if d.v > 0 {
			dst = sc.attrF64(dst, d.k, ms(d.v))
		}
	}
	dst = sc.attrInt(dst, kReqBytes, r.RequestBodyBytes)
	return sc.attrInt(dst, kRespBytes, r.ResponseBodyBytes)
}

// appendGuard appends the guardrail outcome and the span's status
// (usage.PartGuard).
func (sc *scratch) appendGuard(dst []byte, r *usage.Record) []byte {
	if g := r.AppliedGuardrails; len(g) > 0 {
		dst = sc.attrStrings(dst, kGuardrails, len(g), func(i int) string { return g[i] }, nil)
	}
	for _, h := range [...]struct {
		k    *attrKey
		hits []usage.GuardrailHit
	}{{kEnforcedHits, r.GuardrailEnforcedHits}, {kMonitorHits, r.GuardrailMonitorHits}} {
		if hs := h.hits; len(hs) > 0 {
			dst = sc.attrStrings(dst, h.k, len(hs), func(i int) string { return hs[i].Guardrail }, func(i int) string { return hs[i].Action })
		}
	}
	dst = sc.attrOptStr(dst, kBypassed, r.GuardrailBypassedReason)
	dst = sc.attrBool(dst, kFailClosed, r.GuardrailBlockedFailClosed)
	if r.StatusCode >= 400 { // status (15) { message (2), code (3) = STATUS_CODE_ERROR }
		msg := valid(r.ErrorMessage)
		st := 2 // code
		if msg != "" {
			st += strSize(msg)
		}
		sc.mark(dst, spanStatus)
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
