// Package msgconv converts between OpenAI chat completions and Anthropic
// messages, in both directions: request bodies, buffered response bodies and
// SSE streams (the transcode.Stream implementations).
//
// Files are named by direction: chat_to_messages_request.go turns a chat
// request into a messages request (a chat caller in front of an Anthropic
// upstream), messages_to_chat_stream.go turns the Anthropic upstream's events
// back into chat chunks, and so on. The mapping follows protocols.md §4; the
// decisions the protocols leave open are listed here.
//
// # Decisions
//
//   - max_tokens: Anthropic requires it. A chat request without max_tokens
//     or max_completion_tokens gets RequestOptions.DefaultMaxTokens, or
//     DefaultMaxTokens (4096) when that is 0. max_completion_tokens wins
//     over max_tokens when both are present.
//   - reasoning_effort ↔ thinking budget (see ThinkingBudget and
//     EffortForBudget): minimal and low → 1024, medium → 4096, high →
//     16384, xhigh and max → 32768; none → no thinking. The budget must stay
//     below max_tokens: with max_tokens defaulted, max_tokens becomes the
//     budget plus the default; with max_tokens given and not above the
//     budget, the budget is cut to max_tokens−1, and thinking is dropped
//     when that is under Anthropic's 1024 minimum. Backwards a budget under 2048 is low,
//     under 8192 medium, anything larger high (the geometric midpoints, so
//     that low, medium and high round-trip).
//   - Prompt caching (RequestOptions.AutoCache): like LiteLLM's and
//     Portkey's auto caching, `cache_control: {type: ephemeral}` (with
//     `ttl: "1h"` for AutoCache1h) goes on the last system block and on the
//     last block of the last user turn (tool results count: they travel in
//     user turns). Breakpoints the caller already set count against
//     Anthropic's limit of 4 and are never duplicated; the system breakpoint
//     is placed first when the budget is short. Tools are not marked: the
//     system breakpoint already covers them (the cache prefix is tools,
//     system, messages).
//   - Stop reasons: end_turn, stop_sequence and pause_turn → stop;
//     max_tokens and model_context_window_exceeded → length; tool_use →
//     tool_calls; refusal → content_filter. Backwards stop → end_turn, length
//     → max_tokens, tool_calls and function_call → tool_use, content_filter
//     → refusal.
//   - Tool arguments that are not a JSON object are an error in requests
//     (ErrInvalidRequest); in a buffered chat response they are kept as
//     {"_raw": "<the arguments string>"} rather than failing the response.
//   - temperature above 1 is clamped to 1 for Anthropic; n > 1 and
//     input_audio parts are rejected; seed, logprobs, penalties and other
//     chat-only fields are dropped; tool_result is_error becomes an
//     "Error: " prefix on the tool message.
//   - Stream failures: see the Fail and Reject methods of the two streams
//     for the error frame each caller format gets.
package msgconv

import (
	"bytes"
	"errors"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"gw/sse/rawjson"
)

// DefaultMaxTokens is the Anthropic max_tokens sent when the chat request
// sets neither max_tokens nor max_completion_tokens and
// RequestOptions.DefaultMaxTokens is 0.
const DefaultMaxTokens = 4096

// Thinking budgets per chat reasoning_effort (see the package comment).
const (
	BudgetLow    = 1024
	BudgetMedium = 4096
	BudgetHigh   = 16384
	BudgetXHigh  = 32768

	// MinThinkingBudget is Anthropic's smallest budget_tokens.
	MinThinkingBudget = 1024
)

// AutoCache selects automatic prompt-cache breakpoints for requests sent to
// Anthropic.
type AutoCache uint8

const (
	// AutoCacheOff adds no breakpoints; the caller's own are kept.
	AutoCacheOff AutoCache = iota
	// AutoCache5m adds breakpoints with the default 5-minute TTL.
	AutoCache5m
	// AutoCache1h adds breakpoints with `ttl: "1h"`.
	AutoCache1h
)

// RequestOptions parameterize the request conversions.
type RequestOptions struct {
	// UpstreamModel is written as the body's model; empty keeps the
	// caller's model.
	UpstreamModel string

	// DefaultMaxTokens is the Anthropic max_tokens used when the chat
	// request sets none; 0 means DefaultMaxTokens. Chat → messages only.
	DefaultMaxTokens int

	// AutoCache adds prompt-cache breakpoints. Chat → messages only.
	AutoCache AutoCache
}

// Errors. Conversion errors wrap ErrInvalidRequest (the caller's body cannot
// be converted: answer 400) or ErrInvalidResponse (the upstream body cannot
// be converted: answer 502); compare with errors.Is.
var (
	ErrInvalidRequest  = errors.New("msgconv: invalid request")
	ErrInvalidResponse = errors.New("msgconv: invalid upstream response")

	// ErrMalformedEvent is returned by Stream.Event for an upstream event
	// whose data is not a JSON object. Nothing was appended; the stream
	// can go on, or the caller ends it with Fail.
	ErrMalformedEvent = errors.New("msgconv: malformed upstream event")
)

// convError names the field that could not be converted. Built on error
// paths only.
type convError struct {
	kind  error // ErrInvalidRequest or ErrInvalidResponse
	field string
	msg   string
}

func (e *convError) Error() string {
	return e.kind.Error() + ": `" + e.field + "`: " + e.msg
}

func (e *convError) Unwrap() error { return e.kind }

// UpstreamError is the error an upstream reported in-band: an Anthropic
// `error` event, an OpenAI error chunk, or an error envelope in place of a
// response body. Streams expose it with Err after they appended the caller's
// error frame.
type UpstreamError struct {
	Type    string // the upstream's error type, e.g. overloaded_error
	Code    string // the transcode.Code* it maps to
	Message string
}

func (e *UpstreamError) Error() string {
	return "msgconv: upstream error " + e.Type + ": " + e.Message
}

// path renders a field path such as messages[3].content[1] on error paths.
func path(name string, idx ...int) string {
	b := make([]byte, 0, 48)
	j := 0
	for i := 0; i < len(name); i++ {
		if name[i] == '#' && j < len(idx) {
			b = strconv.AppendInt(b, int64(idx[j]), 10)
			j++
			continue
		}
		b = append(b, name[i])
	}
	return string(b)
}

func reqErr(msg, field string, idx ...int) error {
	return &convError{kind: ErrInvalidRequest, field: path(field, idx...), msg: msg}
}

func respErr(msg, field string, idx ...int) error {
	return &convError{kind: ErrInvalidResponse, field: path(field, idx...), msg: msg}
}

// nowUnix is the clock of the `created` fields; tests replace it.
var nowUnix = func() int64 { return time.Now().Unix() }

// idSeq feeds fallback message ids when the upstream sent none.
var idSeq atomic.Uint64

// appendFallbackID appends a unique-enough id suffix (hex of a counter mixed
// with the start time).
func appendFallbackID(dst []byte) []byte {
	dst = append(dst, "gw"...)
	return strconv.AppendUint(dst, uint64(time.Now().UnixNano())^idSeq.Add(1)<<40, 16)
}

// inner returns the content of a JSON string literal that has no escapes,
// or nil, false.
func inner(raw []byte) ([]byte, bool) {
	n := len(raw)
	if n < 2 || raw[0] != '"' || raw[n-1] != '"' {
		return nil, false
	}
	for _, c := range raw[1 : n-1] {
		if c == '\\' || c == '"' {
			return nil, false
		}
	}
	return raw[1 : n-1], true
}

// word returns the content of a short JSON string literal used as an enum
// value (a type, a role, a reason): escapes are decoded into tmp. It returns
// nil for anything that is not a string.
func word(raw []byte, tmp *[]byte) []byte {
	if rawjson.KindOf(raw) != rawjson.String {
		return nil
	}
	if b, ok := inner(raw); ok {
		return b
	}
	t, err := rawjson.AppendUnquote((*tmp)[:0], raw)
	if err != nil {
		return nil
	}
	*tmp = t
	return t
}

// plainLiteral reports whether raw is a JSON string literal that can be
// copied as it is into single-line JSON: quoted, no escapes, no control
// bytes, valid UTF-8.
func plainLiteral(raw []byte) bool {
	n := len(raw)
	if n < 2 || raw[0] != '"' || raw[n-1] != '"' {
		return false
	}
	hi := false
	for _, c := range raw[1 : n-1] {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
		if c >= 0x80 {
			hi = true
		}
	}
	return !hi || utf8.Valid(raw[1:n-1])
}

// BlockSeparator goes between two Anthropic text blocks that another kind
// of block (tool use, server tool, thinking) separates, when they become
// one chat string: they are two paragraphs, not one sentence. Text blocks
// that follow each other directly are one passage that Anthropic split at
// citation boundaries and are joined as they are.
const BlockSeparator = "\n\n"

// appendStr appends the JSON string literal raw to dst so that the result is
// valid single-line JSON whatever raw holds: a plain literal, or a valid one
// whose escapes are all short ones (\" \\ \n ...; tool arguments are full
// of \"), is copied; anything else (\u escapes, which may be lone
// surrogates, invalid UTF-8 or escapes) is decoded into tmp and quoted
// again. It reports false, appending nothing, when raw is not a well-formed
// string literal.
func appendStr(dst, raw []byte, tmp *[]byte) ([]byte, bool) {
	if plainLiteral(raw) {
		// Fast path - no escapes to check.
		return append(dst, raw...), true
	}
	if rawjson.KindOf(raw) != rawjson.String {
		return dst, false
	}
	if bytes.IndexByte(raw, '\\') >= 0 && !bytes.Contains(raw, strUnicodeEscape) && rawjson.Valid(raw) {
		// Fast path - already valid JSON-escaped text, no re-quoting.
		return append(dst, raw...), true
	}
	// Slow path - normalize through decoding.
	t, err := rawjson.AppendUnquote((*tmp)[:0], raw)
	if err != nil {
		return dst, false
	}
	*tmp = t
	return rawjson.AppendQuoteBytes(dst, t), true
}

// appendQuoted appends b as a JSON string literal. Fast path - plain text
// is copied between quotes. Slow path - b is copied to tmp and quoted from
// there, so that b itself never reaches rawjson's generic quoter (which
// escape analysis treats as retaining its input): callers may pass a
// []byte(constant) without it being moved to the heap.
func appendQuoted(dst, b []byte, tmp *[]byte) []byte {
	plain := true
	for _, c := range b {
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		dst = append(dst, '"')
		dst = append(dst, b...)
		return append(dst, '"')
	}
	*tmp = append((*tmp)[:0], b...)
	return rawjson.AppendQuoteBytes(dst, *tmp)
}

// scanKeys reads top-level members of the object data as rawjson.ScanTop
// does (vals[i] is the last value of the member index maps to i, or nil; on
// malformed input all are nil and the error is returned), in one pass that
// picks each member's slot with index, a switch on the unescaped name,
// instead of comparing every member with every key: about twice as fast on
// a streamed chunk (BenchmarkScan).
func scanKeys(data []byte, vals [][]byte, index func(name []byte) int) error {
	clear(vals)
	err := rawjson.ForEachKey(data, func(key, val []byte, _ rawjson.Kind) bool {
		name := key[1 : len(key)-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			// Slow path - an escaped name (never seen from real upstreams).
			var buf [64]byte
			u, err := rawjson.AppendUnquote(buf[:0], key)
			if err != nil {
				return true
			}
			name = u
		}
		if i := index(name); i >= 0 {
			vals[i] = val
		}
		return true
	})
	if err != nil {
		clear(vals)
	}
	return err
}

// isEmptyStr reports whether raw is the empty string literal.
func isEmptyStr(raw []byte) bool { return len(raw) == 2 && raw[0] == '"' && raw[1] == '"' }

// isNonEmptyStr reports whether raw is a string literal with content.
func isNonEmptyStr(raw []byte) bool {
	return len(raw) > 2 && raw[0] == '"'
}

// parseCount reads a token count: a non-negative JSON integer. Anything else
// is 0, false.
func parseCount(raw []byte) (int64, bool) {
	n, ok := rawjson.ParseInt(raw)
	if !ok || n < 0 {
		return 0, false
	}
	return n, true
}

// isWS reports JSON whitespace.
func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// trimWS trims JSON whitespace.
func trimWS(b []byte) []byte {
	for len(b) > 0 && isWS(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isWS(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// isEmptyObject reports whether raw is `{}` (whitespace allowed inside).
func isEmptyObject(raw []byte) bool {
	raw = trimWS(raw)
	if len(raw) < 2 || raw[0] != '{' || raw[len(raw)-1] != '}' {
		return false
	}
	return len(trimWS(raw[1:len(raw)-1])) == 0
}

// maxKeep bounds the buffers pooled values keep, so that one huge body or
// stream does not pin its memory in a pool.
const maxKeep = 1 << 20

// keep returns b emptied, or nil when it grew past maxKeep.
func keep(b []byte) []byte {
	if cap(b) > maxKeep {
		return nil
	}
	return b[:0]
}

// noCopy makes `go vet` flag copies of pooled values.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}
