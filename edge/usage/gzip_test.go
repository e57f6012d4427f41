package usage_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"testing"

	"gw/edge/usage"
)

// TestGzipperReuse: one Gzipper compresses batch after batch (its writer
// is reset, not rebuilt), each output a complete gzip stream of exactly
// its input, also when dst aliases src as the OTLP sink passes it.
func TestGzipperReuse(t *testing.T) {
	var g usage.Gzipper
	for _, in := range []string{"", "a", strings.Repeat(`{"model":"gpt-4o","tokens":12}`+"\n", 500), "last"} {
		src := []byte(in)
		out, err := g.Compress(src, src)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		got, err := io.ReadAll(zr)
		if err != nil || string(got) != in {
			t.Fatalf("round trip of %d bytes: got %d bytes, err %v", len(in), len(got), err)
		}
	}
}

func BenchmarkGzipper64KiB(b *testing.B) {
	src := []byte(strings.Repeat(`{"request_id":"r-1","model":"gpt-4o","prompt_tokens":12,"completion_tokens":40}`+"\n", 800))
	var g usage.Gzipper
	dst := make([]byte, 0, len(src))
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		dst, _ = g.Compress(dst, src)
	}
}
