//go:build !race

package rawjson_test

import (
	"strings"
	"testing"

	"gw/sse/rawjson"
)

// TestAllocs guards the zero-allocation contract of the hot-path functions.
func TestAllocs(t *testing.T) {
	body := []byte(chatRequest)
	chunk := []byte(chatChunk)
	escaped := []byte(`{"mod\u0065l":"gpt-4o","\u043a\u043b\u044e\u0447":1,"stream":true}`)
	dst := make([]byte, 0, 4096)
	keys := []string{"model", "stream", "stream_options", "messages"}
	vals := make([][]byte, len(keys))
	num := []byte("1024.5e-1")
	deep := []byte(strings.Repeat("[", 100) + strings.Repeat("]", 100)) // past the one-word stack
	f := func(name string, fn func()) {
		t.Helper()
		if n := testing.AllocsPerRun(100, fn); n != 0 {
			t.Fatalf("%s: %v allocs/op; want 0", name, n)
		}
	}
	f("Get", func() { rawjson.Get(body, "model") })
	f("Get escaped key", func() { rawjson.Get(escaped, "model") })
	f("Get unicode key", func() { rawjson.Get(escaped, "ключ") })
	f("GetPath", func() { rawjson.GetPath(body, "stream_options", "include_usage") })
	f("ScanTop", func() { _ = rawjson.ScanTop(body, keys, vals) })
	f("Set", func() { dst, _ = rawjson.Set(dst[:0], body, "model", []byte(`"gpt-4o-mini"`)) })
	f("Set absent", func() { dst, _ = rawjson.Set(dst[:0], chunk, "usage", []byte(`null`)) })
	f("SetString", func() { dst, _ = rawjson.SetString(dst[:0], chunk, "model", "gpt-4o") })
	f("SetIfAbsent", func() { dst, _ = rawjson.SetIfAbsent(dst[:0], body, "n", []byte(`1`)) })
	f("Delete", func() { dst, _ = rawjson.Delete(dst[:0], body, "metadata") })
	f("Rename", func() { dst, _ = rawjson.Rename(dst[:0], body, "max_tokens", "max_completion_tokens") })
	f("ForEachKey", func() {
		n := 0
		_ = rawjson.ForEachKey(body, func(key, val []byte, kind rawjson.Kind) bool {
			n += len(val)
			return true
		})
	})
	f("ForEachElem roles", func() {
		msgs, _, _ := rawjson.Get(body, "messages")
		users := 0
		_ = rawjson.ForEachElem(msgs, func(i int, val []byte, kind rawjson.Kind) bool {
			if role, _, _ := rawjson.Get(val, "role"); rawjson.StringEquals(role, "user") {
				users++
			}
			return true
		})
	})
	f("StringEquals", func() { rawjson.StringEquals([]byte(`"us\u0065r"`), "user") })
	f("AppendUnquote", func() { dst, _ = rawjson.AppendUnquote(dst[:0], []byte(`"a\ud83d\ude00\n\u00e9"`)) })
	f("AppendQuote", func() { dst = rawjson.AppendQuote(dst[:0], "a\"b\n\xffé") })
	f("Valid", func() { rawjson.Valid(body) })
	f("Valid deep", func() { rawjson.Valid(deep) })
	f("ParseFloat", func() { rawjson.ParseFloat(num) })
	f("ParseInt", func() { rawjson.ParseInt([]byte("4096")) })
	long := []byte("0.12345678901234567890123456789012345678") // past strconv's stack buffer
	if n := testing.AllocsPerRun(100, func() { rawjson.ParseFloat(long) }); n > 1 {
		t.Fatalf("ParseFloat(long): %v allocs/op; want <= 1", n)
	}
	f("AppendFloat", func() { dst = rawjson.AppendFloat(dst[:0], 0.25) })
}
