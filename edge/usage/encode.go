package usage

import (
	"math"
	"slices"
	"strconv"
	"time"

	"gw/edge/usage/gzipdelta"
	"gw/sse/rawjson"
)

// TimeLayout is occurred_at's format: ISO 8601, UTC, milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// AppendJSON appends r as one JSON object (no newline). Every field of the
// schema is always present; optional values are null. It runs on the
// pipeline's goroutines, never on the request path. A string value's
// opening quote is part of the key's literal before it.
func AppendJSON(dst []byte, r *Record) []byte {
	for p := range NumParts {
		dst = appendPart(dst, p, r)
	}
	return dst
}

// The parts of a record's JSON object, in order. Records of one gateway
// share most of them with the record before (the same caller, route and
// guardrails; often the same token counts), so a compressing sink copies
// a part whose fields are unchanged from the line before instead of
// encoding and comparing it again (LineEncoder). The head is new in
// every record.
const (
	PartHead   = iota // event_id, request_id, occurred_at
	PartCall          // attempt to stream: the attempt, caller, route and classification
	PartTokens        // tokens, cost, audio seconds
	PartTimes         // latencies and body sizes
	PartGuard         // the guardrail outcome, and the object's end
	NumParts
)

// appendPart appends part p of r's JSON object.
func appendPart(dst []byte, p int, r *Record) []byte {
	switch p {
	case PartHead:
		return appendHead(dst, r)
	case PartCall:
		return appendCall(dst, r)
	case PartTokens:
		return appendTokens(dst, r)
	case PartTimes:
		return appendTimes(dst, r)
	}
	return appendGuard(dst, r)
}

// SamePart reports whether part p of a and b encodes to the same bytes:
// every field it writes is equal. Each field of Record is in exactly one
// part (TestLineEncoderCopiesOnlyUnchanged, otlp's
// TestWireCopiesOnlyUnchanged).
func SamePart(p int, a, b *Record) bool {
	switch p {
	case PartCall:
		return a.Attempt == b.Attempt && a.StatusCode == b.StatusCode && a.Stream == b.Stream && a.Tags == b.Tags &&
			a.AttemptKind == b.AttemptKind && a.ErrorClass == b.ErrorClass && a.ErrorMessage == b.ErrorMessage &&
			a.APIKeyID == b.APIKeyID && a.APIKeyName == b.APIKeyName && a.TeamID == b.TeamID && a.UserID == b.UserID && a.UserName == b.UserName &&
			a.Model == b.Model && a.TargetModel == b.TargetModel && a.UpstreamModel == b.UpstreamModel &&
			a.Provider == b.Provider && a.ProviderKey == b.ProviderKey && a.ProviderKeyID == b.ProviderKeyID &&
			a.InboundProtocol == b.InboundProtocol && a.Operation == b.Operation && a.MCPServer == b.MCPServer && a.MCPTool == b.MCPTool &&
			a.CacheStatus == b.CacheStatus
	case PartTokens:
		return a.PromptTokens == b.PromptTokens && a.CompletionTokens == b.CompletionTokens && a.ReasoningTokens == b.ReasoningTokens &&
			a.CachedPromptTokens == b.CachedPromptTokens && a.TotalTokens == b.TotalTokens &&
			math.Float64bits(a.CostUSD) == math.Float64bits(b.CostUSD) && math.Float64bits(a.AudioSeconds) == math.Float64bits(b.AudioSeconds)
	case PartTimes:
		return a.Latency == b.Latency && a.TTFT == b.TTFT && a.UpstreamLatency == b.UpstreamLatency && a.UpstreamTTFT == b.UpstreamTTFT &&
			a.RequestBodyBytes == b.RequestBodyBytes && a.ResponseBodyBytes == b.ResponseBodyBytes
	case PartGuard:
		return a.GuardrailBlockedFailClosed == b.GuardrailBlockedFailClosed && a.GuardrailBypassedReason == b.GuardrailBypassedReason &&
			slices.Equal(a.AppliedGuardrails, b.AppliedGuardrails) &&
			slices.Equal(a.GuardrailEnforcedHits, b.GuardrailEnforcedHits) && slices.Equal(a.GuardrailMonitorHits, b.GuardrailMonitorHits)
	}
	return false // the head: new in every record
}

func appendHead(dst []byte, r *Record) []byte {
	dst, _, _ = appendHeadAt(dst, r)
	return dst
}

// appendHeadAt is appendHead, also returning where in dst the request ID
// is written twice (event_id's and request_id's).
func appendHeadAt(dst []byte, r *Record) (out []byte, id, req int) {
	dst = append(dst, `{"event_id":"`...)
	id = len(dst)
	dst = r.RequestID.AppendString(dst)
	dst = append(dst, '.')
	dst = appendInt(dst, int64(r.Attempt))
	dst = append(dst, `","request_id":"`...)
	req = len(dst)
	dst = append(dst, dst[id:id+idLen]...)
	dst = append(dst, `","occurred_at":"`...)
	dst = appendTime(dst, r.OccurredAt)
	return append(dst, '"'), id, req
}

// idLen is a request ID's length in the 8-4-4-4-12 form.
const idLen = 36

func appendCall(dst []byte, r *Record) []byte {
	dst = append(dst, `,"attempt":`...)
	dst = appendInt(dst, int64(r.Attempt))
	dst = appendStr(dst, `,"attempt_kind":"`, r.AttemptKind)
	dst = append(dst, `,"status_code":`...)
	dst = appendInt(dst, int64(r.StatusCode))
	dst = appendOptStr(dst, `,"error_class":"`, r.ErrorClass)
	dst = appendOptStr(dst, `,"error_message":"`, r.ErrorMessage)

	dst = appendOptStr(dst, `,"api_key_id":"`, r.APIKeyID)
	dst = appendOptStr(dst, `,"api_key_name":"`, r.APIKeyName)
	dst = appendOptStr(dst, `,"team_id":"`, r.TeamID)
	dst = appendOptStr(dst, `,"user_id":"`, r.UserID)
	dst = appendOptStr(dst, `,"user_name":"`, r.UserName)

	dst = appendStr(dst, `,"model":"`, r.Model)
	dst = appendOptStr(dst, `,"target_model":"`, r.TargetModel)
	dst = appendOptStr(dst, `,"upstream_model":"`, r.UpstreamModel)
	dst = appendOptStr(dst, `,"provider":"`, r.Provider)
	dst = appendOptStr(dst, `,"provider_key":"`, r.ProviderKey)
	dst = appendOptStr(dst, `,"provider_key_id":"`, r.ProviderKeyID)
	if t := r.Tags; t != nil {
		dst = appendOptStr(dst, `,"telemetry_tags":{"kind":"`, t.Kind)
		dst = append(dst, `,"featured":`...)
		dst = strconv.AppendBool(dst, t.Featured)
		dst = appendOptStr(dst, `,"branded_provider":"`, t.BrandedProvider)
		dst = appendOptStr(dst, `,"pk_label":"`, t.PKLabel)
		dst = appendOptStr(dst, `,"byo_label":"`, t.BYOLabel)
		dst = append(dst, '}')
	} else {
		dst = append(dst, `,"telemetry_tags":null`...)
	}

	dst = appendStr(dst, `,"inbound_protocol":"`, r.InboundProtocol)
	dst = appendStr(dst, `,"operation":"`, r.Operation)
	if r.MCPServer != "" {
		dst = appendStr(dst, `,"mcp_server":"`, r.MCPServer)
		dst = appendStr(dst, `,"mcp_tool":"`, r.MCPTool)
	}
	dst = appendStr(dst, `,"cache_status":"`, r.CacheStatus)
	dst = append(dst, `,"stream":`...)
	return strconv.AppendBool(dst, r.Stream)
}

func appendTokens(dst []byte, r *Record) []byte {
	dst = append(dst, `,"prompt_tokens":`...)
	dst = appendInt(dst, r.PromptTokens)
	dst = append(dst, `,"completion_tokens":`...)
	dst = appendInt(dst, r.CompletionTokens)
	dst = append(dst, `,"reasoning_tokens":`...)
	dst = appendInt(dst, r.ReasoningTokens)
	dst = append(dst, `,"cached_prompt_tokens":`...)
	dst = appendInt(dst, r.CachedPromptTokens)
	dst = append(dst, `,"total_tokens":`...)
	if r.TotalTokens > 0 {
		dst = appendInt(dst, r.TotalTokens)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"cost_usd":`...)
	dst = appendFloat(dst, r.CostUSD)
	dst = append(dst, `,"audio_seconds":`...)
	if r.AudioSeconds > 0 {
		return appendFloat(dst, r.AudioSeconds)
	}
	return append(dst, "null"...)
}

func appendTimes(dst []byte, r *Record) []byte {
	dst = append(dst, `,"latency_ms":`...)
	dst = appendMS(dst, r.Latency)
	dst = append(dst, `,"ttft_ms":`...)
	dst = appendOptMS(dst, r.TTFT)
	dst = append(dst, `,"upstream_latency_ms":`...)
	dst = appendOptMS(dst, r.UpstreamLatency)
	dst = append(dst, `,"upstream_ttft_ms":`...)
	dst = appendOptMS(dst, r.UpstreamTTFT)
	dst = append(dst, `,"request_body_bytes":`...)
	dst = appendInt(dst, r.RequestBodyBytes)
	dst = append(dst, `,"response_body_bytes":`...)
	return appendInt(dst, r.ResponseBodyBytes)
}

func appendGuard(dst []byte, r *Record) []byte {
	dst = append(dst, `,"applied_guardrails":[`...)
	for i, g := range r.AppliedGuardrails {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = rawjson.AppendQuote(dst, g)
	}
	dst = append(dst, `],"guardrail_enforced_hits":`...)
	dst = appendHits(dst, r.GuardrailEnforcedHits)
	dst = append(dst, `,"guardrail_monitor_hits":`...)
	dst = appendHits(dst, r.GuardrailMonitorHits)
	dst = appendOptStr(dst, `,"guardrail_bypassed_reason":"`, r.GuardrailBypassedReason)
	dst = append(dst, `,"guardrail_blocked_fail_closed":`...)
	dst = strconv.AppendBool(dst, r.GuardrailBlockedFailClosed)
	return append(dst, '}')
}

// LineEncoder writes records as NDJSON lines for a compressing sink: a
// part whose fields equal the record before's is copied from that
// record's line (a memmove instead of encoding: escaping checks, number
// formatting) and marked so that gzipdelta.Lines.AddParts refers back to
// it without comparing it. Both the encoding and the comparison of the
// unchanged parts were most of an archive line's cost.
type LineEncoder struct {
	prev  Record          // the record before (its strings held, so equal pointers mean equal text)
	parts gzipdelta.Parts // its line's parts
	ok    bool            // prev is the record of body's last line
}

// Append appends r's line to body and returns its parts. body's last line
// (ending at len(body)) must be the one Append wrote last, moved or not,
// unless body is empty: that starts afresh.
//
// The head is three of the line's parts: to the request_id value, the
// value (event_id's ID again: one reference back, not the literals of a
// new ID), and the rest; then one part for each later part of the record.
func (e *LineEncoder) Append(body []byte, r *Record) ([]byte, *gzipdelta.Parts) {
	const headParts = 3
	c := len(body)
	if c == 0 {
		e.ok = false
	}
	np := gzipdelta.Parts{N: headParts + NumParts - 1}
	body, id, req := appendHeadAt(body, r)
	np.End[0], np.End[1], np.End[2] = int32(req-c), int32(req+idLen-c), int32(len(body)-c)
	np.Back[1] = int32(req - id)
	var pl []byte // the line before
	if e.ok {
		pl = body[c-int(e.parts.End[np.N-1]) : c]
	}
	for p := PartHead + 1; p < NumParts; p++ {
		k := headParts + p - 1 // the line part
		if e.ok && SamePart(p, r, &e.prev) {
			body = append(body, pl[e.parts.End[k-1]:e.parts.End[k]]...)
			np.Same |= 1 << k
		} else {
			body = appendPart(body, p, r)
			if p == NumParts-1 {
				body = append(body, '\n')
			}
		}
		np.End[k] = int32(len(body) - c)
	}
	e.prev, e.parts, e.ok = *r, np, true
	return body, &e.parts
}

// Reset forgets the record before (and lets go of its strings).
func (e *LineEncoder) Reset() { *e = LineEncoder{} }

// AppendEventID appends the record's unique ID: "<request_id>.<attempt>".
// A receiver deduplicates resent records by it.
func AppendEventID(dst []byte, r *Record) []byte {
	dst = r.RequestID.AppendString(dst)
	dst = append(dst, '.')
	return appendInt(dst, int64(r.Attempt))
}

// AppendNDJSON appends each record as one line.
func AppendNDJSON(dst []byte, batch []Record) []byte {
	var nd NDJSON
	for i := range batch {
		dst = nd.AppendRecord(dst, &batch[i])
	}
	return dst
}

// NDJSON is the encoding of sinks whose payload is newline-delimited JSON
// records (object store, control plane): embed it for their AppendRecord
// and Finish.
type NDJSON struct{}

// AppendRecord appends r's line.
func (NDJSON) AppendRecord(body []byte, r *Record) []byte { return append(AppendJSON(body, r), '\n') }

// Finish returns the lines as they are: body itself when dst is empty,
// sparing a copy of the whole batch.
func (NDJSON) Finish(dst, body []byte, _ int) ([]byte, error) {
	if len(dst) == 0 {
		return body, nil
	}
	return append(dst, body...), nil
}

// appendStr appends key, which ends with the value's opening quote, and
// s quoted. Most values need no escaping, which a word at a time finds
// cheaper than quoting does.
func appendStr(dst []byte, key, s string) []byte {
	if !rawjson.Plain(s) {
		return rawjson.AppendQuote(append(dst, key[:len(key)-1]...), s)
	}
	dst = append(dst, key...)
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendOptStr is appendStr with null for "".
func appendOptStr(dst []byte, key, v string) []byte {
	if v == "" {
		return append(append(dst, key[:len(key)-1]...), "null"...)
	}
	return appendStr(dst, key, v)
}

func appendHits(dst []byte, hits []GuardrailHit) []byte {
	dst = append(dst, '[')
	for i, h := range hits {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"guardrail":`...)
		dst = rawjson.AppendQuote(dst, h.Guardrail)
		dst = append(dst, `,"action":`...)
		dst = rawjson.AppendQuote(dst, h.Action)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

func appendFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, '0')
	}
	return strconv.AppendFloat(dst, f, 'f', -1, 64)
}

// appendInt is strconv.AppendInt(dst, v, 10) with a record's usual
// values (non-negative, short) written directly: strconv was an eighth of
// the encoding.
func appendInt(dst []byte, v int64) []byte {
	switch u := uint64(v); {
	case u < 10:
		return append(dst, byte('0'+u))
	case u < 100:
		return append(dst, byte('0'+u/10), byte('0'+u%10))
	case u < 1000:
		return append(dst, byte('0'+u/100), byte('0'+u/10%10), byte('0'+u%10))
	case u < 1e9:
		var b [9]byte
		i := len(b)
		for ; u > 0; u /= 10 {
			i--
			b[i] = byte('0' + u%10)
		}
		return append(dst, b[i:]...)
	}
	return strconv.AppendInt(dst, v, 10)
}

// appendTime writes t as TimeLayout, the same text AppendFormat gives
// (milliseconds truncated), without parsing the layout for every record.
func appendTime(dst []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	if y < 0 || y > 9999 {
		return t.AppendFormat(dst, TimeLayout)
	}
	h, mi, s := t.Clock()
	ms := t.Nanosecond() / 1e6
	return append(dst, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+mo/10), byte('0'+mo%10), '-', byte('0'+d/10), byte('0'+d%10), 'T',
		byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10), ':', byte('0'+s/10), byte('0'+s%10), '.',
		byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

// appendMS writes d in milliseconds with three decimals (microsecond
// precision) from integers: the same text as AppendFloat(µs/1000, 'f', 3),
// which was four float formattings per record, a tenth of the encoding.
func appendMS(dst []byte, d time.Duration) []byte {
	us := d.Microseconds()
	if us < 0 {
		dst = append(dst, '-')
		us = -us
	}
	dst = appendInt(dst, us/1000)
	f := us % 1000
	return append(dst, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

func appendOptMS(dst []byte, d time.Duration) []byte {
	if d <= 0 {
		return append(dst, "null"...)
	}
	return appendMS(dst, d)
}
