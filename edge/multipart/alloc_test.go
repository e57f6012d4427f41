//go:build !race

package multipart

import (
	"bytes"
	"io"
	"testing"
)

// TestAllocs: a steady-state request with pooled state allocates nothing,
// however many parts it has, when the first pass stays in memory (fields
// first, or a file before model smaller than Limits.SpoolMemBytes).
func TestAllocs(t *testing.T) {
	img := payload(100<<10, 3)
	many := []field{text("model", "m")}
	for i := 0; i < 100; i++ {
		many = append(many, text("f", "v"), file("image[]", "x.png", img[:1000]))
	}
	cases := []struct {
		name   string
		fields []field
	}{
		{"model first, 100 KiB file", []field{text("model", "alias"), text("prompt", "p"), file("file", "a.wav", img)}},
		{"file first, in spool memory", []field{file("image[]", "a.png", img), text("model", "alias"), text("prompt", "p")}},
		{"201 parts", many},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, ctype := build(t, testBoundary, tc.fields...)
			src := bytes.NewReader(in)
			ct := []byte(ctype)
			repl := []byte("upstream-model")
			var prompt []byte
			f := func() {
				src.Reset(in)
				r, err := Acquire(src, ct, Limits{})
				if err != nil {
					t.Fatal(err)
				}
				if err := r.Prepare("model"); err != nil {
					t.Fatal(err)
				}
				prompt = r.AppendValues(prompt[:0], "prompt")
				if _, err := r.Replace("model", repl); err != nil {
					t.Fatal(err)
				}
				if _, err := r.WriteTo(io.Discard); err != nil {
					t.Fatal(err)
				}
				Release(r)
			}
			f()
			if n := testing.AllocsPerRun(50, f); n != 0 {
				t.Fatalf("%v allocations per request; want 0", n)
			}
		})
	}
}
