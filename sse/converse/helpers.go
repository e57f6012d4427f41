package converse

import (
	"bytes"
	"strconv"
	"time"
	"unicode/utf8"

	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// nowUnix is the `created` of converted answers (Converse carries none).
func nowUnix() int64 { return time.Now().Unix() }

// scanKeys reads the top-level members of the object data into the slots
// index picks (nil when absent); on malformed input all are nil.
func scanKeys(data []byte, vals [][]byte, index func(name []byte) int) error {
	clear(vals)
	err := rawjson.ForEachKey(data, func(key, val []byte, _ rawjson.Kind) bool {
		name := key[1 : len(key)-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			return true // escaped member names are never sent by Bedrock
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

// isNonEmptyStr reports a JSON string literal other than "".
func isNonEmptyStr(raw []byte) bool { return len(raw) > 2 && raw[0] == '"' }

// inner returns the content of a string literal without escapes.
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

// plainLiteral reports a string literal that can be copied as it is into
// single-line JSON: no escapes, no control bytes, valid UTF-8.
func plainLiteral(raw []byte) bool {
	n := len(raw)
	if n < 2 || raw[0] != '"' || raw[n-1] != '"' {
		return false
	}
	ascii := true
	for _, c := range raw[1 : n-1] {
		if c < 0x20 || c == '\\' || c == '"' {
			return false
		}
		if c >= 0x80 {
			ascii = false
		}
	}
	return ascii || utf8.Valid(raw[1:n-1])
}

// appendStr appends the string literal raw, normalized; false when raw is
// not a valid string literal.
func appendStr(dst, raw []byte, tmp *[]byte) ([]byte, bool) {
	if plainLiteral(raw) {
		// Fast path - copied as it is.
		return append(dst, raw...), true
	}
	// Slow path - decoded and quoted again.
	if rawjson.KindOf(raw) != rawjson.String {
		return dst, false
	}
	t, err := rawjson.AppendUnquote((*tmp)[:0], raw)
	if err != nil {
		return dst, false
	}
	*tmp = t
	return rawjson.AppendQuoteBytes(dst, t), true
}

// parseCount reads a non-negative JSON integer.
func parseCount(raw []byte) (int64, bool) {
	n, ok := rawjson.ParseInt(raw)
	if !ok || n < 0 {
		return 0, false
	}
	return n, true
}

// appendChatUsage appends a chat usage object.
func appendChatUsage(dst []byte, u *transcode.Usage) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, u.Prompt, 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, u.Completion, 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, u.Total, 10)
	dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, u.Cached, 10)
	if u.CacheCreation > 0 {
		dst = append(dst, `,"cache_write_tokens":`...)
		dst = strconv.AppendInt(dst, u.CacheCreation, 10)
	}
	return append(dst, "}}"...)
}
