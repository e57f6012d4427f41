//go:build !race

package sse_test

import (
	"io"
	"testing"

	"gw/sse"
)

func TestReaderAllocs(t *testing.T) {
	stream, _ := openAIStream(t)
	// Multi-line data and CRLF exercise the scratch buffer and CR handling.
	var multi []byte
	for range 100 {
		multi = sse.AppendEvent(multi, []byte("delta"), []byte("line one\nline two\nline three"))
		multi = append(multi, "data: x\r\n\r\n"...)
	}

	f := func(name string, stream []byte, sizes []int) {
		t.Helper()
		var r sse.Reader
		var cr chunkReader
		n := testing.AllocsPerRun(100, func() {
			cr.Reset(stream, sizes)
			r.Reset(&cr)
			for {
				if _, err := r.Next(); err != nil {
					if err != io.EOF {
						t.Fatalf("unexpected error: %s", err)
					}
					return
				}
			}
		})
		if n != 0 {
			t.Fatalf("%s: got %v allocs per stream; want 0", name, n)
		}
	}
	f("openai whole", stream, nil)
	f("openai split", stream, []int{1, 7, 1400, 33, 250, 3, 512, 90})
	f("multi-line whole", multi, nil)
	f("multi-line 1-byte", multi, []int{1})
}

func TestWriterAllocs(t *testing.T) {
	data := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`)
	multi := []byte("a\nb\r\nc")
	name := []byte("content_block_delta")
	dst := make([]byte, 0, 1024)
	n := testing.AllocsPerRun(100, func() {
		dst = sse.AppendData(dst[:0], data)
		dst = sse.AppendData(dst, multi)
		dst = sse.AppendEvent(dst, name, data)
		dst = sse.AppendDone(dst)
		dst = sse.AppendComment(dst, multi)
		if sse.IsDone(data) {
			t.Fatalf("IsDone(%q) = true", data)
		}
	})
	if n != 0 {
		t.Fatalf("got %v allocs per run; want 0", n)
	}
}
