// Package usage is the usage-event pipeline: the record one model-serving
// request (or failed attempt) writes, the bounded queue between the proxy
// and the senders, per-sink queues and batches, retries and drops, and the
// encoders shared by the exporters in its sub-packages.
//
// The request path only copies a Record into a lock-free ring (Pipeline.Emit, ring.go);
// normalising, encoding and sending happen on the pipeline's goroutines.
// The JSON shape is documented in docs/USAGE.md and
// docs/usage-event.schema.json.
package usage

import (
	"encoding/binary"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"gw/admin/resources"
)

// Attempt kinds.
const (
	AttemptFailed = "failed_attempt" // a failed upstream attempt that was retried or failed over
	AttemptFinal  = "final"          // the request's last attempt (or a request answered by gw itself)
)

// Cache statuses.
const (
	CacheNone = "none" // no cache policy applies to the request
	CacheMiss = "miss"
	CacheHit  = "hit"
	// CacheBypass: a policy applies but the request was not looked up (a
	// stream, Cache-Control: no-cache / no-store); CacheError: the store
	// could not answer (served as a miss).
	CacheBypass = "bypass"
	CacheError  = "error"
)

// MaxClassLen bounds inbound_protocol, operation and cache_status; a longer
// value is truncated (on the pipeline goroutine) and a warning is logged.
const MaxClassLen = 64

// RequestID identifies one caller request; every record of the request
// (failed attempts and the final one) carries the same ID. Rendered as a
// UUIDv4 string when encoded.
type RequestID [16]byte

// Request IDs are a keyed permutation of a process-wide counter, not two
// random draws per request: one atomic add and a few multiplies instead of
// the random source (measurably cheaper on the request path). They are
// still RFC 4122 version-4 shaped and unpredictable enough for a trace ID:
//   - 64 bits come from mix64(n + idKey): mix64 is a bijection on uint64, so
//     no two requests of one process share them (for 2^64 requests). Bytes
//     0-7 carry them, except the 4 bits under the version nibble, which
//     move to byte 8;
//   - the other 54 free bits are a random per-process salt, so two processes
//     (or restarts) collide only by chance of 2^-54 per pair of IDs with the
//     same 64-bit part.
var (
	idCounter atomic.Uint64
	idKey     = rand.Uint64()
	idSalt    = rand.Uint64() &^ 0xff // bytes 9-15 of every ID (little-endian word at 8)
)

// mix64 is SplitMix64's finalizer, an invertible mixing function.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// NewRequestID returns a unique version-4 shaped ID (see above). It does
// not allocate.
func NewRequestID() RequestID {
	u := mix64(idCounter.Add(1) + idKey)
	var id RequestID
	binary.LittleEndian.PutUint64(id[0:8], u)
	moved := id[6] >> 4
	id[6] = 0x40 | id[6]&0x0f
	binary.LittleEndian.PutUint64(id[8:16], idSalt|uint64(0x80|moved))
	return id
}

// AppendString appends the canonical 8-4-4-4-12 form, eight hex digits
// per step.
func (id RequestID) AppendString(dst []byte) []byte {
	var b [36]byte
	h1, h2 := hex8(id[4:8]), hex8(id[8:12])
	binary.BigEndian.PutUint64(b[0:], hex8(id[0:4]))
	b[8] = '-'
	binary.BigEndian.PutUint32(b[9:], uint32(h1>>32))
	b[13] = '-'
	binary.BigEndian.PutUint32(b[14:], uint32(h1))
	b[18] = '-'
	binary.BigEndian.PutUint32(b[19:], uint32(h2>>32))
	b[23] = '-'
	binary.BigEndian.PutUint32(b[24:], uint32(h2))
	binary.BigEndian.PutUint64(b[28:], hex8(id[12:16]))
	return append(dst, b[:]...)
}

// hex8 is the lowercase hex of four bytes, as the eight bytes of a
// big-endian word: each nibble spread to a byte of its own, then turned
// into its digit.
func hex8(p []byte) uint64 {
	x := uint64(binary.BigEndian.Uint32(p))
	x = (x | x<<16) & 0x0000ffff0000ffff
	x = (x | x<<8) & 0x00ff00ff00ff00ff
	x = (x | x<<4) & 0x0f0f0f0f0f0f0f0f
	// 10-15 carry into bit 4 when 6 is added: they take 'a'-'0'-10 more.
	letters := (x + 0x0606060606060606) >> 4 & 0x0101010101010101
	return x + 0x3030303030303030 + letters*('a'-'0'-10)
}

func (id RequestID) String() string { return string(id.AppendString(make([]byte, 0, 36))) }

// GuardrailHit is one guardrail that acted on the request.
type GuardrailHit struct {
	Guardrail string `json:"guardrail"`
	Action    string `json:"action"` // e.g. block, mask, would_block, blocked_buffer_exceeded
}

// Record is one usage event. Strings point at snapshot-owned values (no
// copy on the request path); slices must not be changed after Emit.
// Failed attempts carry zero tokens and no cost; the final record of a
// request is its last attempt's.
type Record struct {
	OccurredAt  time.Time // UTC, encoded with millisecond precision
	RequestID   RequestID
	Attempt     int    // 1-based
	AttemptKind string // AttemptFailed or AttemptFinal

	StatusCode   int
	ErrorClass   string
	ErrorMessage string

	// Caller attribution.
	APIKeyID   string
	APIKeyName string
	TeamID     string
	UserID     string
	UserName   string

	// Routing.
	Model         string // caller-facing alias
	TargetModel   string // direct model that served the attempt
	UpstreamModel string // the provider's model name
	Provider      string // provider_keys[].provider
	ProviderKey   string // provider key display_name
	ProviderKeyID string
	Tags          *resources.TelemetryTags // the provider key's telemetry_tags; nil when none

	// Classification.
	InboundProtocol string // chat_completions, messages, responses
	Operation       string // chat.completions, messages, messages.count_tokens, responses
	CacheStatus     string // CacheNone, CacheMiss, CacheHit, CacheBypass, CacheError
	Stream          bool

	// MCP tool calls (inbound_protocol mcp): the server and the tool as the
	// server names it; empty on every other record and then not encoded.
	MCPServer string
	MCPTool   string

	// Tokens as reported by the upstream; TotalTokens 0 means absent.
	PromptTokens       int64
	CompletionTokens   int64
	ReasoningTokens    int64
	CachedPromptTokens int64
	TotalTokens        int64
	CostUSD            float64
	// AudioSeconds is the duration of the audio a transcription or
	// translation processed, as the upstream reported it; 0 when unknown.
	AudioSeconds float64

	// Latency split: downstream (what the caller saw) and upstream (time
	// waiting on the provider). A zero TTFT means no first byte.
	Latency         time.Duration
	TTFT            time.Duration
	UpstreamLatency time.Duration
	UpstreamTTFT    time.Duration

	RequestBodyBytes  int64
	ResponseBodyBytes int64

	// Guardrail outcome (filled by the guardrail stages).
	AppliedGuardrails          []string
	GuardrailEnforcedHits      []GuardrailHit
	GuardrailMonitorHits       []GuardrailHit
	GuardrailBypassedReason    string
	GuardrailBlockedFailClosed bool // a guardrail rejected because it could not evaluate
}

// Cost is the billing rule: prompt at the input price; completion at the
// output price; when prompt + completion + reasoning == total the upstream
// reported reasoning outside completion, so it is billed in full as well.
func Cost(prompt, completion, reasoning, total int64, inPer1K, outPer1K float64) float64 {
	out := completion
	if total > 0 && prompt+completion+reasoning == total {
		out += reasoning
	}
	return float64(prompt)/1000*inPer1K + float64(out)/1000*outPer1K
}

// classMessages are the error_message of final records whose failure was
// decided by gw itself (no upstream message to quote).
var classMessages = map[string]string{
	"client_gone":             "the caller closed the connection before the response ended",
	"stream_timeout":          "the upstream stream stalled longer than stream_timeout",
	"upstream_no_done":        "the upstream stream ended without its done marker",
	"upstream_stream_error":   "the upstream stream broke before it ended",
	"upstream_error_event":    "the upstream sent an error event in the stream",
	"upstream_status":         "the upstream answered with an error status",
	"upstream_failed":         "every upstream attempt failed",
	"all_targets_unavailable": "every routing target is excluded",
	"rate_limited":            "a rate limit rejected the request",
	"guardrail_blocked":       "a guardrail blocked the request or its answer",
	"guardrail_unavailable":   "a guardrail could not evaluate the content and failed closed",
	"tool_error":              "the MCP tool answered with isError",
	"upstream_rpc_error":      "the upstream MCP server answered with a JSON-RPC error",
	"conversion":              "the upstream answer could not be converted to the caller's format",
}

// ClassMessage returns the fixed message of an error class ("" for none).
// Unknown classes get a generic message naming the class.
func ClassMessage(class string) string {
	if class == "" {
		return ""
	}
	if m, ok := classMessages[class]; ok {
		return m
	}
	return "request failed: " + class
}
