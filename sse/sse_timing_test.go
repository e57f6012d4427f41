package sse_test

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"gw/sse"
)

// Sink keeps benchmark results alive.
var Sink atomic.Int64

// openAIStream builds a realistic chat stream of about 200 chunks from the
// recorded openai_chat_text.sse: its role chunk, its content chunks repeated,
// its finish chunk and [DONE].
func openAIStream(tb testing.TB) (stream []byte, events int) {
	tb.Helper()
	in, err := os.ReadFile("testdata/openai_chat_text.sse")
	if err != nil {
		tb.Fatalf("cannot read fixture: %s", err)
	}
	evs := refParse(in)
	first, content, tail := evs[0], evs[1:len(evs)-2], evs[len(evs)-2:]
	var b strings.Builder
	b.WriteString(first.Raw)
	for i := range 200 {
		b.WriteString(content[i%len(content)].Raw)
	}
	for _, ev := range tail {
		b.WriteString(ev.Raw)
	}
	return []byte(b.String()), 1 + 200 + len(tail)
}

func readStream(b *testing.B, r *sse.Reader, src io.Reader) int {
	r.Reset(src)
	n := 0
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return n
		}
		if err != nil {
			b.Fatalf("unexpected error: %s", err)
		}
		n += len(ev.Data)
	}
}

func reportPerEvent(b *testing.B, events int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
}

func BenchmarkReaderOpenAIChunks(b *testing.B) {
	stream, events := openAIStream(b)
	b.Run("serial", func(b *testing.B) {
		var r sse.Reader
		var br bytes.Reader
		b.ReportAllocs()
		b.SetBytes(int64(len(stream)))
		n := 0
		for b.Loop() {
			br.Reset(stream)
			n += readStream(b, &r, &br)
		}
		Sink.Add(int64(n))
		reportPerEvent(b, events)
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(stream)))
		b.RunParallel(func(pb *testing.PB) {
			var br bytes.Reader
			r := sse.AcquireReader(nil)
			defer sse.ReleaseReader(r)
			n := 0
			for pb.Next() {
				br.Reset(stream)
				r.Reset(&br)
				for {
					ev, err := r.Next()
					if err != nil {
						break
					}
					n += len(ev.Data)
				}
			}
			Sink.Add(int64(n))
		})
		reportPerEvent(b, events)
	})
}

// eventChunks splits stream into one piece per event, as an upstream that
// writes and flushes each event produces.
func eventChunks(stream []byte) []int {
	var sizes []int
	for len(stream) > 0 {
		i := bytes.Index(stream, []byte("\n\n"))
		sizes = append(sizes, i+2)
		stream = stream[i+2:]
	}
	return sizes
}

func BenchmarkReaderSplitReads(b *testing.B) {
	stream, events := openAIStream(b)
	f := func(name string, sizes []int) {
		b.Run(name, func(b *testing.B) {
			var r sse.Reader
			var cr chunkReader
			b.ReportAllocs()
			b.SetBytes(int64(len(stream)))
			n := 0
			for b.Loop() {
				cr.Reset(stream, sizes)
				n += readStream(b, &r, &cr)
			}
			Sink.Add(int64(n))
			reportPerEvent(b, events)
		})
	}
	f("event-per-read", eventChunks(stream))
	f("mixed-1-1400", []int{1, 7, 1400, 33, 250, 3, 512, 90})
	f("64-byte", []int{64})
	f("1-byte", []int{1})
}

// BenchmarkBaselineBufioLines is a baseline: splitting the same stream into
// lines with bufio.Reader.ReadSlice, with no SSE semantics at all.
func BenchmarkBaselineBufioLines(b *testing.B) {
	stream, events := openAIStream(b)
	var br bytes.Reader
	r := bufio.NewReaderSize(&br, 4096)
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	n := 0
	for b.Loop() {
		br.Reset(stream)
		r.Reset(&br)
		for {
			line, err := r.ReadSlice('\n')
			if err != nil {
				break
			}
			n += len(line)
		}
	}
	Sink.Add(int64(n))
	reportPerEvent(b, events)
}

func BenchmarkAppendData(b *testing.B) {
	stream, _ := openAIStream(b)
	evs := refParse(stream)
	data := []byte(evs[len(evs)/2].Data)
	multi := bytes.Repeat([]byte("line of text\n"), 8)
	f := func(name string, data []byte) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			b.RunParallel(func(pb *testing.PB) {
				var dst []byte
				for pb.Next() {
					dst = sse.AppendData(dst[:0], data)
				}
				Sink.Add(int64(len(dst)))
			})
		})
	}
	f("json-chunk", data)
	f("multi-line", multi)
}

func BenchmarkAppendEvent(b *testing.B) {
	name := []byte("content_block_delta")
	data := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	b.RunParallel(func(pb *testing.PB) {
		var dst []byte
		for pb.Next() {
			dst = sse.AppendEvent(dst[:0], name, data)
		}
		Sink.Add(int64(len(dst)))
	})
}
