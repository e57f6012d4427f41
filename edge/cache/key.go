package cache

// The exact key. Two requests share a key when they come from the same
// caller format, name the same alias and their bodies agree on every
// top-level field that can change the answer, whatever the fields' order
// and the whitespace between tokens. Left out:
//
//	model             the alias is keyed instead (the value is the alias anyway)
//	stream            a stream is never looked up; stream:false equals no field
//	stream_options    transport only
//	user, metadata, safety_identifier
//	                  caller attribution; the answer does not depend on it
//	store, prompt_cache_key, prompt_cache_retention
//	                  provider-side storage and prompt caching hints
//
// Everything else counts, byte for byte inside strings: "temperature":0.7
// and "temperature":0.70 are different requests. The key is computed
// without decoding the body: one pass of rawjson.Cursor over the top-level
// members, a sort of at most MaxMembers of them, and a copy of their bytes
// without insignificant whitespace into a reused buffer.

import (
	"bytes"

	"github.com/cespare/xxhash/v2"
	"github.com/zeebo/xxh3"

	"gw/sse/rawjson"
)

// MaxMembers bounds the top-level fields of a keyed body; a body with more
// is not cached (Bypass). Real requests have a dozen.
const MaxMembers = 64

// ignored are the raw (quoted) top-level keys left out of the key.
var ignored = [...]string{`"model"`, `"stream"`, `"stream_options"`, `"user"`, `"metadata"`, `"safety_identifier"`,
	`"store"`, `"prompt_cache_key"`, `"prompt_cache_retention"`}

// Key is the 128-bit exact key and a second, independent 64-bit hash of
// the same canonical bytes. Stores compare Check too, so two different
// requests must collide in both xxh3-128 and xxhash64 to share an answer.
type Key struct {
	Hi, Lo    uint64
	Check     uint64
	Namespace string // the policy's namespace (also hashed); Redis keys name it
}

type member struct{ k, v []byte }

// AppendCanonical appends the canonical form of a request of caller format
// format for alias to dst. It reports false when body is not a JSON object
// of at most MaxMembers members. It does not allocate when dst has room.
func AppendCanonical(dst []byte, format, alias string, body []byte) ([]byte, bool) {
	dst, _, ok := appendCanon(dst, nil, format, alias, body, "")
	return dst, ok
}

// appendCanon is AppendCanonical; with a prompt field pf (a raw key), it
// is AppendScope: that member's value goes through appendScopeValue and
// the prompt's text is appended to txt.
func appendCanon(dst, txt []byte, format, alias string, body []byte, pf string) ([]byte, []byte, bool) {
	var ms [MaxMembers]member
	n := 0
	var c rawjson.Cursor
	c.Reset(body)
	if c.Kind() != rawjson.Object || !c.Begin() {
		return dst, txt, false
	}
	for c.More() {
		k, _ := c.Key()
		v, _, _ := c.Value()
		if k == nil || v == nil {
			return dst, txt, false
		}
		if isIgnored(k) {
			continue
		}
		if n == MaxMembers {
			return dst, txt, false
		}
		ms[n] = member{k, v}
		n++
	}
	if c.End() != nil {
		return dst, txt, false
	}
	// Insertion sort: n is small and the members often arrive sorted.
	for i := 1; i < n; i++ {
		for j := i; j > 0 && bytes.Compare(ms[j].k, ms[j-1].k) < 0; j-- {
			ms[j], ms[j-1] = ms[j-1], ms[j]
		}
	}
	if pf == "" {
		dst = append(dst, "gwc1\x00"...)
	} else {
		dst = append(dst, "gws1\x00"...) // a scope never equals an exact key's bytes
	}
	dst = append(dst, format...)
	dst = append(dst, 0)
	dst = append(dst, alias...)
	dst = append(dst, 0, '{')
	found := false
	for i := 0; i < n; i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, ms[i].k...)
		dst = append(dst, ':')
		if pf != "" && string(ms[i].k) == pf {
			var ok bool
			if dst, txt, ok = appendScopeValue(dst, txt, ms[i].v); !ok {
				return dst, txt, false
			}
			found = true
			continue
		}
		dst = appendCompact(dst, ms[i].v)
	}
	if pf != "" && !found {
		return dst, txt, false
	}
	return append(dst, '}'), txt, true
}

func isIgnored(k []byte) bool {
	for _, s := range ignored {
		if string(k) == s {
			return true
		}
	}
	return false
}

// appendCompact appends v without whitespace outside strings. v is a
// value the cursor has scanned; strings are copied as they are, found by
// their closing quote with bytes.IndexByte (most of a request is text).
func appendCompact(dst, v []byte) []byte {
	start := 0
	for i := 0; i < len(v); {
		switch v[i] {
		case '"':
			j := i + 1
			for {
				q := bytes.IndexByte(v[j:], '"')
				if q < 0 {
					return append(dst, v[start:]...) // unterminated: the cursor rejects it anyway
				}
				j += q
				n := 0 // backslashes before the quote: odd escapes it
				for k := j - 1; k > i && v[k] == '\\'; k-- {
					n++
				}
				if n%2 == 0 {
					break
				}
				j++
			}
			i = j + 1
		case ' ', '\t', '\n', '\r':
			dst = append(dst, v[start:i]...)
			i++
			start = i
		default:
			i++
		}
	}
	return append(dst, v[start:]...)
}

// Sum hashes canonical bytes (AppendCanonical) of namespace ns.
func Sum(ns string, canon []byte) Key {
	// The namespace seeds the main hash: the canonical bytes stay the
	// same across policies, the keys do not.
	h := xxh3.Hash128Seed(canon, xxh3.HashString(ns))
	return Key{Hi: h.Hi, Lo: h.Lo, Check: xxhash.Sum64(canon) ^ xxhash.Sum64String(ns), Namespace: ns}
}

// AppendHex appends k's 128 bits as 32 lowercase hex digits.
func (k *Key) AppendHex(dst []byte) []byte {
	const hex = "0123456789abcdef"
	for _, w := range [2]uint64{k.Hi, k.Lo} {
		for s := 60; s >= 0; s -= 4 {
			dst = append(dst, hex[(w>>uint(s))&15])
		}
	}
	return dst
}
