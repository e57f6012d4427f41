package openai

import (
	"gw/adapters"
	"gw/sse/rawjson"
)

// RewriteModel appends to dst body with every top-level `model` set to
// aliasJSON, the caller-facing alias as a JSON string literal (precompute it
// once per alias with rawjson.AppendQuote). It serves buffered bodies and
// streamed chunks alike, in one pass (rawjson.Set). A body without a
// top-level `model` gets one appended, so the edge calls it on answers only,
// not on error frames. A body that is not a JSON object is appended
// unchanged. dst must not overlap body; with enough capacity in dst it does
// not allocate.
func RewriteModel(dst, body, aliasJSON []byte) []byte {
	out, err := rawjson.Set(dst, body, "model", aliasJSON)
	if err != nil {
		return append(dst, body...)
	}
	return out
}

// IsUsageOnlyChunk reports whether the stream chunk data is the usage chunk
// an upstream sends for stream_options.include_usage: `usage` is an object
// and `choices` is an empty array, null or absent (some compatible backends
// send null or omit it). The chunk gw strips when it forced include_usage.
// Azure's leading prompt-filter chunk also has "choices":[] but no usage,
// so it is not a usage chunk.
func IsUsageOnlyChunk(data []byte) bool {
	var v [2][]byte // choices, usage
	if rawjson.ScanTop(data, chunkKeys, v[:]) != nil || rawjson.KindOf(v[1]) != rawjson.Object {
		return false
	}
	switch rawjson.KindOf(v[0]) {
	case rawjson.Invalid, rawjson.Null:
		return true
	case rawjson.Array:
		return emptyArray(v[0])
	}
	return false
}

// emptyArray reports whether the array span arr holds no element.
func emptyArray(arr []byte) bool {
	for _, c := range arr[1:] {
		switch c {
		case ' ', '\t', '\n', '\r':
		case ']':
			return true
		default:
			return false
		}
	}
	return false
}

// ExtractUsage reads the top-level `usage` object of a chat-completions body
// or chunk. ok is false when usage is absent, null or not an object; fields
// that are absent or not integers read as 0. Cached is
// usage.prompt_tokens_details.cached_tokens, Reasoning is
// usage.completion_tokens_details.reasoning_tokens.
func ExtractUsage(data []byte) (u adapters.Usage, ok bool) {
	usage, _, _ := rawjson.Get(data, "usage")
	return usageOf(usage)
}

// RewriteModelUsage is RewriteModel and ExtractUsage in one pass over body.
func RewriteModelUsage(dst, body, aliasJSON []byte) (out []byte, u adapters.Usage, ok bool) {
	if start, end, u, ok, fast := walkAnswer(body); fast {
		out = append(dst, body[:start]...)
		out = append(out, aliasJSON...)
		return append(out, body[end:]...), u, ok
	}
	out, usage, err := rawjson.SetPeek(dst, body, "model", aliasJSON, "usage")
	if err != nil {
		return append(dst, body...), u, false
	}
	u, ok = usageOf(usage)
	return out, u, ok
}

// walkAnswer reads a buffered answer in one forward walk: the span of its
// single `model` value and its usage, every byte once (SetPeek, then
// usageOf's ScanTop and Gets, read the usage object three times). fast is
// false whenever the walk cannot vouch for the same result as SetPeek and
// usageOf: model absent or repeated, a walk error, a mismatched bracket.
// Duplicate members resolve as there: the last occurrence wins.
func walkAnswer(body []byte) (start, end int, u adapters.Usage, ok, fast bool) {
	var c rawjson.Cursor
	c.Reset(body)
	if c.Kind() != rawjson.Object {
		return
	}
	c.Begin()
	models := 0
	for c.More() {
		key, esc := c.Key()
		switch {
		case rawjson.KeyIs(key, esc, `"model"`):
			models++
			start = c.Pos()
			v, _, _ := c.Value()
			end = start + len(v)
		case rawjson.KeyIs(key, esc, `"usage"`):
			if c.Kind() != rawjson.Object {
				c.Value()
				u, ok = adapters.Usage{}, false // the last occurrence wins
				break
			}
			if u, ok = walkUsage(&c); !ok {
				return
			}
		default:
			c.Value()
		}
	}
	fast = models == 1 && c.Closer() == '}' && c.End() == nil
	return
}

// walkUsage reads the usage object at the cursor (last occurrence of a
// member wins; counts that are absent or not integers read 0); false when
// the walk fails or a bracket does not match.
func walkUsage(c *rawjson.Cursor) (u adapters.Usage, ok bool) {
	c.Begin()
	for c.More() {
		key, esc := c.Key()
		switch {
		case rawjson.KeyIs(key, esc, `"prompt_tokens"`):
			u.Prompt = valueCount(c)
		case rawjson.KeyIs(key, esc, `"completion_tokens"`):
			u.Completion = valueCount(c)
		case rawjson.KeyIs(key, esc, `"total_tokens"`):
			u.Total = valueCount(c)
		case rawjson.KeyIs(key, esc, `"prompt_tokens_details"`):
			if u.Cached, ok = detailCount(c, `"cached_tokens"`); !ok {
				return u, false
			}
		case rawjson.KeyIs(key, esc, `"completion_tokens_details"`):
			if u.Reasoning, ok = detailCount(c, `"reasoning_tokens"`); !ok {
				return u, false
			}
		default:
			c.Value()
		}
	}
	return u, c.Err() == nil && c.Closer() == '}'
}

func valueCount(c *rawjson.Cursor) int64 {
	v, _, _ := c.Value()
	return tokenCount(v)
}

// detailCount reads member name (quoted, for KeyIs) of the details object
// at the cursor (0 when absent or when the value is not an object).
func detailCount(c *rawjson.Cursor, name string) (n int64, ok bool) {
	if c.Kind() != rawjson.Object {
		c.Value()
		return 0, true
	}
	c.Begin()
	for c.More() {
		key, esc := c.Key()
		if rawjson.KeyIs(key, esc, name) {
			n = valueCount(c)
		} else {
			c.Value()
		}
	}
	return n, c.Err() == nil && c.Closer() == '}'
}

// usageOf reads a chat `usage` object's raw value (nil: none) with the
// walk RewriteModelUsage uses, so both read usage the same way.
func usageOf(usage []byte) (u adapters.Usage, ok bool) {
	var c rawjson.Cursor
	c.Reset(usage)
	if c.Kind() != rawjson.Object {
		return u, false
	}
	if u, ok = walkUsage(&c); !ok || c.End() != nil {
		return adapters.Usage{}, false
	}
	return u, true
}

// tokenCount parses a JSON integer; 12.0 counts as 12, anything else as 0.
func tokenCount(raw []byte) int64 {
	if rawjson.KindOf(raw) != rawjson.Number {
		return 0
	}
	if n, ok := rawjson.ParseInt(raw); ok {
		return n
	}
	if f, ok := rawjson.ParseFloat(raw); ok && f >= 0 && f < 1<<53 && f == float64(int64(f)) {
		return int64(f)
	}
	return 0
}
