package rawjson_test

import (
	"encoding/json"
	"strings"
	"testing"

	"gw/sse/rawjson"
)

var (
	sinkBytes []byte
	sinkInt   int
	sinkBool  bool
)

func BenchmarkGet(b *testing.B) {
	body := []byte(chatRequest)
	b.Run("model", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			sinkBytes, _, _ = rawjson.Get(body, "model")
		}
	})
	b.Run("stream_options.include_usage", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			sinkBytes, _, _ = rawjson.GetPath(body, "stream_options", "include_usage")
		}
	})
	b.Run("ScanTop4", func(b *testing.B) {
		keys := []string{"model", "stream", "stream_options", "messages"}
		vals := make([][]byte, len(keys))
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			_ = rawjson.ScanTop(body, keys, vals)
		}
		sinkBytes = vals[0]
	})
	// Baseline: what a decode of the same four fields costs.
	b.Run("baseline-encoding-json", func(b *testing.B) {
		var req struct {
			Model         string          `json:"model"`
			Stream        bool            `json:"stream"`
			StreamOptions json.RawMessage `json:"stream_options"`
			Messages      []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if err := json.Unmarshal(body, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		b.RunParallel(func(pb *testing.PB) {
			n := 0
			for pb.Next() {
				v, _, _ := rawjson.Get(body, "model")
				n += len(v)
			}
			sinkInt = n
		})
	})
}

func BenchmarkSet(b *testing.B) {
	body := []byte(chatRequest)
	chunk := []byte(chatChunk)
	dst := make([]byte, 0, 2*len(body))
	b.Run("request-model", func(b *testing.B) {
		val := []byte(`"gpt-4o-mini"`)
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			dst, _ = rawjson.Set(dst[:0], body, "model", val)
		}
	})
	b.Run("chunk-model", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(chunk)))
		for b.Loop() {
			dst, _ = rawjson.SetString(dst[:0], chunk, "model", "gpt-4o")
		}
	})
	b.Run("chunk-model-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(chunk)))
		b.RunParallel(func(pb *testing.PB) {
			dst := make([]byte, 0, 512)
			for pb.Next() {
				dst, _ = rawjson.SetString(dst[:0], chunk, "model", "gpt-4o")
			}
			sinkBytes = dst
		})
	})
	b.Run("chunk-delete-usage", func(b *testing.B) {
		withUsage := []byte(chatChunk[:len(chatChunk)-1] + `,"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}`)
		b.ReportAllocs()
		b.SetBytes(int64(len(withUsage)))
		for b.Loop() {
			dst, _ = rawjson.Delete(dst[:0], withUsage, "usage")
		}
	})
	b.Run("request-stream-options-if-absent", func(b *testing.B) {
		noOpts, _ := rawjson.Delete(nil, body, "stream_options")
		val := []byte(`{"include_usage":true}`)
		b.ReportAllocs()
		b.SetBytes(int64(len(noOpts)))
		for b.Loop() {
			dst, _ = rawjson.SetIfAbsent(dst[:0], noOpts, "stream_options", val)
		}
	})
	b.Run("request-rename", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			dst, _ = rawjson.Rename(dst[:0], body, "max_tokens", "max_completion_tokens")
		}
	})
	// Baseline: decode into a map and re-encode, the naive rewrite.
	b.Run("baseline-chunk-encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(chunk)))
		for b.Loop() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(chunk, &m); err != nil {
				b.Fatal(err)
			}
			m["model"] = json.RawMessage(`"gpt-4o"`)
			sinkBytes, _ = json.Marshal(m)
		}
	})
	sinkBytes = dst
}

func BenchmarkValid(b *testing.B) {
	for _, bc := range []struct {
		name string
		data []byte
	}{
		{"chunk", []byte(chatChunk)},
		{"2KB", []byte(chatRequest)},
		{"64KB", bigRequest(64 << 10)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.data)))
			for b.Loop() {
				sinkBool = rawjson.Valid(bc.data)
			}
		})
		b.Run(bc.name+"-baseline-encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.data)))
			for b.Loop() {
				sinkBool = json.Valid(bc.data)
			}
		})
	}
}

func BenchmarkMessagesRoles(b *testing.B) {
	for _, bc := range []struct {
		name string
		data []byte
	}{
		{"2KB", []byte(chatRequest)},
		{"64KB", bigRequest(64 << 10)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.data)))
			for b.Loop() {
				msgs, _, _ := rawjson.Get(bc.data, "messages")
				users := 0
				err := rawjson.ForEachElem(msgs, func(i int, val []byte, kind rawjson.Kind) bool {
					if role, _, _ := rawjson.Get(val, "role"); rawjson.StringEquals(role, "user") {
						users++
					}
					return true
				})
				if err != nil || users == 0 {
					b.Fatalf("users=%d err=%v", users, err)
				}
				sinkInt = users
			}
		})
	}
}

func BenchmarkStrings(b *testing.B) {
	dst := make([]byte, 0, 256)
	plain := "Your order is waiting for SKU-1182, which is on backorder at our Frankfurt warehouse."
	escaped := []byte(`"Please split it \u2014 ship what you have.\nMusterstra\u00dfe 12, \"Berlin\""`)
	b.Run("AppendQuote-plain", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(plain)))
		for b.Loop() {
			dst = rawjson.AppendQuote(dst[:0], plain)
		}
	})
	b.Run("AppendUnquote-escaped", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(escaped)))
		for b.Loop() {
			dst, _ = rawjson.AppendUnquote(dst[:0], escaped)
		}
	})
	b.Run("StringEquals-role", func(b *testing.B) {
		role := []byte(`"assistant"`)
		b.ReportAllocs()
		for b.Loop() {
			sinkBool = rawjson.StringEquals(role, "assistant")
		}
	})
	sinkBytes = dst
}

func BenchmarkNumbers(b *testing.B) {
	dst := make([]byte, 0, 64)
	b.Run("ParseInt", func(b *testing.B) {
		raw := []byte("100000")
		b.ReportAllocs()
		for b.Loop() {
			n, _ := rawjson.ParseInt(raw)
			sinkInt = int(n)
		}
	})
	b.Run("ParseFloat", func(b *testing.B) {
		raw := []byte("0.2")
		b.ReportAllocs()
		for b.Loop() {
			f, _ := rawjson.ParseFloat(raw)
			sinkInt = int(f)
		}
	})
	b.Run("AppendFloat", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			dst = rawjson.AppendFloat(dst[:0], 0.7)
		}
	})
	sinkBytes = dst
}

// foldHeavy is a body of small objects whose names all differ only in
// case from nothing but need folding ("Aa", "Ab", ...): FoldConflict's
// worst shape, which must stay a small multiple of validation.
func foldHeavy(keysPer, size int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"m","x":[`)
	for first := true; b.Len() < size; first = false {
		if !first {
			b.WriteByte(',')
		}
		b.WriteByte('{')
		for k := 0; k < keysPer; k++ {
			if k > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"A` + string(rune('a'+k%26)) + string(rune('a'+k/26%26)) + `":1`)
		}
		b.WriteByte('}')
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func BenchmarkValidNames(b *testing.B) {
	for _, bc := range []struct {
		name string
		data []byte
	}{
		{"2KB-plain", []byte(chatRequest)},
		{"2KB-camel", []byte(strings.ReplaceAll(chatRequest, `"content"`, `"Content"`))},
		{"1MB-32-names-per-object", foldHeavy(32, 1<<20)},
		{"1MB-2-names-per-object", foldHeavy(2, 1<<20)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.data)))
			for b.Loop() {
				if ok, f := rawjson.ValidNames(bc.data); !ok || f != nil {
					b.Fatalf("ValidNames: %v %s", ok, f)
				}
			}
		})
	}
}
