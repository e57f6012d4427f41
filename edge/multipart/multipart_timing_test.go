package multipart

import (
	"bytes"
	"io"
	"mime/multipart"
	"testing"
)

// benchBody runs one request over an in-memory body; b.SetBytes makes the
// benchmark report MB/s of input.
func benchBody(b *testing.B, in []byte, ctype string, need ...string) {
	src := bytes.NewReader(in)
	ct := []byte(ctype)
	repl := []byte("upstream-model-name")
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		src.Reset(in)
		r, err := Acquire(src, ct, Limits{})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Prepare(need...); err != nil {
			b.Fatal(err)
		}
		if _, err := r.Replace("model", repl); err != nil {
			b.Fatal(err)
		}
		if _, err := r.WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
		Release(r)
	}
}

// BenchmarkStream: a 4 MiB audio file after the fields (Python SDK, curl
// order): streamed, no spool.
func BenchmarkStream(b *testing.B) {
	in, ct := build(b, testBoundary, text("model", "whisper-1"), text("response_format", "json"), file("file", "a.wav", payload(4<<20, 1)))
	benchBody(b, in, ct, "model")
}

// BenchmarkSpooled: the same file before model (openai-go order): the
// first 256 KiB are held in memory, the rest in a temporary file.
func BenchmarkSpooled(b *testing.B) {
	in, ct := build(b, testBoundary, file("file", "a.wav", payload(4<<20, 1)), text("model", "whisper-1"), text("response_format", "json"))
	benchBody(b, in, ct, "model")
}

// BenchmarkSmallRequest: a 20 KiB image before the fields, all in memory:
// per-request overhead.
func BenchmarkSmallRequest(b *testing.B) {
	in, ct := build(b, testBoundary, file("image[]", "a.png", payload(20<<10, 1)), text("model", "gpt-image-1"), text("prompt", "add a hat"), text("size", "1024x1024"))
	benchBody(b, in, ct, "model", "prompt")
}

// BenchmarkManyParts: 200 small parts; allocations must not grow with parts.
func BenchmarkManyParts(b *testing.B) {
	fields := []field{text("model", "m")}
	for i := 0; i < 100; i++ {
		fields = append(fields, text("k", "v"), file("image[]", "x.png", payload(100, uint64(i))))
	}
	in, ct := build(b, testBoundary, fields...)
	benchBody(b, in, ct, "model")
}

// BenchmarkStdlibReader is the baseline: mime/multipart reading the same
// 4 MiB body part by part (no rewrite, no output).
func BenchmarkStdlibReader(b *testing.B) {
	in, _ := build(b, testBoundary, text("model", "whisper-1"), text("response_format", "json"), file("file", "a.wav", payload(4<<20, 1)))
	src := bytes.NewReader(in)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		src.Reset(in)
		mr := multipart.NewReader(src, testBoundary)
		for {
			p, err := mr.NextRawPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, p); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkUpload200MB: a 200 MiB synthetic upload in both orders. B/op is
// what the whole request allocated (the RSS bound), far below 200 MiB.
func BenchmarkUpload200MB(b *testing.B) {
	for _, tc := range []struct {
		name       string
		modelFirst bool
	}{{"streamed", true}, {"spooled", false}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(200 << 20)
			b.ReportAllocs()
			for b.Loop() {
				streamUpload(b, tc.modelFirst, 200<<20, Limits{})
			}
		})
	}
}
