// Anthropic thinking through a Responses caller.
//
// An Anthropic upstream's thinking travels through
// a Responses caller: each thinking block the chat form carries in
// thinking_blocks (see package msgconv) becomes one reasoning item whose
// summary holds the thinking text and whose encrypted_content is
// ThinkingPrefix followed by the block's signature; a redacted_thinking
// block becomes a reasoning item without summary whose encrypted_content is
// RedactedPrefix followed by its data. Sent back in the next request's
// input, the items turn into the assistant message's thinking_blocks again
// (ResponsesRequestToChat), and the Anthropic adapter restores the blocks.
// The prefixes tell these apart from an OpenAI-issued encrypted_content,
// which has no chat form and is dropped as before.

package respconv

import (
	"bytes"

	"gw/sse/rawjson"
)

// ThinkingPrefix and RedactedPrefix start the encrypted_content of a
// reasoning item that carries a thinking block's signature or a
// redacted_thinking block's data.
const (
	ThinkingPrefix = "thinking:"
	RedactedPrefix = "redacted_thinking:"
)

var thinkingKeys = []string{"type", "thinking", "signature", "data"}

// thinkingBlock reads one thinking_blocks element: the thinking text (a
// string literal, nil when empty or absent), the prefix and the escaped
// body of the encrypted_content to write for it. ok is false for blocks
// with nothing to carry (no signature, no data, unknown type).
func thinkingBlock(b []byte) (text []byte, prefix string, enc []byte, ok bool) {
	var v [4][]byte
	if rawjson.ScanTop(b, thinkingKeys, v[:]) != nil {
		return nil, "", nil, false
	}
	switch {
	case rawjson.StringEquals(v[0], "thinking") && nonEmptyStr(v[2]):
		if nonEmptyStr(v[1]) {
			text = v[1]
		}
		return text, ThinkingPrefix, strBody(v[2]), true
	case rawjson.StringEquals(v[0], "redacted_thinking") && nonEmptyStr(v[3]):
		return nil, RedactedPrefix, strBody(v[3]), true
	}
	return nil, "", nil, false
}

// appendEncrypted appends `,"encrypted_content":"<prefix><enc>"`.
func appendEncrypted(dst []byte, prefix string, enc []byte) []byte {
	dst = append(dst, `,"encrypted_content":"`...)
	dst = append(dst, prefix...)
	dst = append(dst, enc...)
	return append(dst, '"')
}

var reasoningItemKeys = []string{"summary", "content", "encrypted_content"}

// appendThinkingBlock appends the thinking_blocks element a reasoning input
// item carries (see EncryptedThinking), comma-separated after n earlier
// ones, and reports whether it wrote one.
func appendThinkingBlock(dst, item []byte, n int) ([]byte, bool) {
	var v [3][]byte
	if rawjson.ScanTop(item, reasoningItemKeys, v[:]) != nil || !nonEmptyStr(v[2]) {
		return dst, false
	}
	enc := strBody(v[2])
	if data, ok := bytes.CutPrefix(enc, strRedactedPrefix); ok {
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"redacted_thinking","data":"`...)
		dst = append(dst, data...)
		return append(dst, `"}`...), true
	}
	sig, ok := bytes.CutPrefix(enc, strThinkingPrefix)
	if !ok {
		return dst, false // OpenAI's encrypted reasoning: no chat form
	}
	if n > 0 {
		dst = append(dst, ',')
	}
	dst = append(dst, `{"type":"thinking","thinking":"`...)
	// The text is the summary parts joined (else the reasoning_text content
	// parts): string literal bodies concatenate into one valid literal.
	if !appendTextBodies(&dst, v[0], "summary_text") {
		appendTextBodies(&dst, v[1], "reasoning_text")
	}
	dst = append(dst, `","signature":"`...)
	dst = append(dst, sig...)
	return append(dst, `"}`...), true
}

// appendTextBodies appends the bodies of the text members of the parts of
// type typ in arr, and reports whether there was one.
func appendTextBodies(dst *[]byte, arr []byte, typ string) bool {
	found := false
	_ = rawjson.ForEachElem(arr, func(_ int, p []byte, k rawjson.Kind) bool {
		if k != rawjson.Object {
			return true
		}
		var v [2][]byte
		if rawjson.ScanTop(p, textPartKeys, v[:]) != nil || !rawjson.StringEquals(v[0], typ) || !isStr(v[1]) {
			return true
		}
		*dst = append(*dst, strBody(v[1])...)
		found = true
		return true
	})
	return found
}

var (
	textPartKeys      = []string{"type", "text"}
	strThinkingPrefix = []byte(ThinkingPrefix)
	strRedactedPrefix = []byte(RedactedPrefix)
)
