package remote

import (
	"sync"

	"gw/sse/rawjson"
)

// Buffer is per-check scratch: the request body being built and the
// answer read back. Take one with GetBuffer, return it with PutBuffer.
type Buffer struct {
	Req  []byte
	Resp []byte
	// Aux is free scratch for a kind (an unquoted string, a second body).
	Aux []byte
}

var bufPool = sync.Pool{New: func() any { return new(Buffer) }}

// maxPooled keeps one huge answer from pinning memory in the pool.
const maxPooled = 1 << 20

// GetBuffer returns an empty Buffer.
func GetBuffer() *Buffer { return bufPool.Get().(*Buffer) }

// PutBuffer returns b to the pool; b must not be used afterwards.
func PutBuffer(b *Buffer) {
	if cap(b.Req) > maxPooled || cap(b.Resp) > maxPooled || cap(b.Aux) > maxPooled {
		return
	}
	b.Req, b.Resp, b.Aux = b.Req[:0], b.Resp[:0], b.Aux[:0]
	bufPool.Put(b)
}

// AppendString appends s as a JSON string (quotes and escapes).
func AppendString(dst, s []byte) []byte { return rawjson.AppendQuoteBytes(dst, s) }

// AppendStringS appends s as a JSON string.
func AppendStringS(dst []byte, s string) []byte { return rawjson.AppendQuote(dst, s) }

// AppendFloat appends f as a JSON number.
func AppendFloat(dst []byte, f float64) []byte { return rawjson.AppendFloat(dst, f) }

// Kind is the type of a JSON value (rawjson's), told by its first byte.
type Kind = rawjson.Kind

// JSON kinds, re-exported so kinds need not import rawjson for a switch.
const (
	KindString = rawjson.String
	KindNumber = rawjson.Number
	KindObject = rawjson.Object
	KindArray  = rawjson.Array
	KindTrue   = rawjson.True
	KindFalse  = rawjson.False
	KindNull   = rawjson.Null
)

// Get returns the value at keys (nested objects) in the JSON document
// data, its raw span and kind; ok false when absent or data malformed.
func Get(data []byte, keys ...string) (val []byte, kind Kind, ok bool) {
	return rawjson.GetPath(data, keys...)
}

// Bool reads a JSON boolean span.
func Bool(raw []byte, kind Kind) (v, ok bool) {
	switch kind {
	case rawjson.True:
		return true, true
	case rawjson.False:
		return false, true
	}
	return false, false
}

// Float reads a JSON number span.
func Float(raw []byte) (float64, bool) { return rawjson.ParseFloat(raw) }

// Int reads a JSON integer span.
func Int(raw []byte) (int64, bool) { return rawjson.ParseInt(raw) }

// Valid reports whether data is one well-formed JSON value (strings
// valid UTF-8 without raw control characters): a kind that copies a span
// of an answer into a request of its own checks that span first (Get and
// EachElem do not look inside strings).
func Valid(data []byte) bool { return rawjson.Valid(data) }

// Unquote appends the decoded JSON string raw (with its quotes) to dst.
func Unquote(dst, raw []byte) ([]byte, error) { return rawjson.AppendUnquote(dst, raw) }

// StringEquals reports whether the JSON string raw decodes to s.
func StringEquals(raw []byte, s string) bool { return rawjson.StringEquals(raw, s) }

// EachElem calls fn for each element of the JSON array arr; an error when
// arr is not a well-formed array.
func EachElem(arr []byte, fn func(i int, val []byte, kind Kind) bool) error {
	return rawjson.ForEachElem(arr, fn)
}

// EachKey calls fn for each member of the JSON object obj (key raw, with
// quotes); an error when obj is not a well-formed object.
func EachKey(obj []byte, fn func(key, val []byte, kind Kind) bool) error {
	return rawjson.ForEachKey(obj, fn)
}
