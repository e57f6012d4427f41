package edge

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"github.com/valyala/fasthttp"
)

// writeLog records every Write it receives, so the test sees the write
// boundaries the chunker produced.
type writeLog struct{ writes [][]byte }

func (w *writeLog) Write(p []byte) (int, error) {
	w.writes = append(w.writes, append([]byte(nil), p...))
	return len(p), nil
}

// chunkSeries registers n counters with long label values (about 200 bytes
// a series) so that /metrics exceeds several 256 KiB chunks, and removes
// them when the test ends.
func chunkSeries(t *testing.T, n int) map[string]string {
	t.Helper()
	pad := strings.Repeat("p", 150)
	want := make(map[string]string, n)
	for i := 0; i < n; i++ {
		name := `gw_test_chunk_series{i="` + strconv.Itoa(i) + `",pad="` + pad + `"}`
		metrics.GetOrCreateCounter(name).Set(uint64(i * 7))
		want[name] = strconv.Itoa(i * 7)
	}
	t.Cleanup(func() {
		for name := range want {
			metrics.UnregisterMetric(name)
		}
	})
	return want
}

// parseMetricLines checks every line of a Prometheus text body (a comment
// or "series value") and returns the test series it holds.
func parseMetricLines(t *testing.T, body []byte) map[string]string {
	t.Helper()
	got := map[string]string{}
	for i, line := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
		if strings.HasPrefix(line, "# ") {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp <= 0 {
			t.Fatalf("line %d is not a series: %q", i, line)
		}
		if _, err := strconv.ParseFloat(line[sp+1:], 64); err != nil {
			t.Fatalf("line %d has no numeric value: %q", i, line)
		}
		if name := line[:sp]; strings.HasPrefix(name, "gw_test_chunk_series{") {
			got[name] = line[sp+1:]
		}
	}
	return got
}

// TestMetricsChunksEndOnWholeSeries: a /metrics body of several 256 KiB
// chunks leaves in writes of at most one chunk, each ending with "\n" at a
// series end, whose concatenation is the rendering itself, and the body
// served through the handler parses line by line and holds every series
// with the value a single-shot rendering gives.
func TestMetricsChunksEndOnWholeSeries(t *testing.T) {
	want := chunkSeries(t, 6000) // ~1.2 MB: 4-5 chunks

	t.Run("write boundaries", func(t *testing.T) {
		var single bytes.Buffer
		metrics.WritePrometheus(&single, true)
		body := single.Bytes()
		if len(body) < 3*metricsChunk {
			t.Fatalf("rendering is %d bytes; want more than 3 chunks", len(body))
		}
		rec := &writeLog{}
		// A buffer smaller than any chunk: every chunk reaches rec as one Write.
		writeMetricsChunks(bufio.NewWriterSize(rec, 16), body)
		if len(rec.writes) < 4 {
			t.Fatalf("%d writes for %d bytes; want one per chunk (>= 4)", len(rec.writes), len(body))
		}
		var cat bytes.Buffer
		for i, w := range rec.writes {
			if len(w) > metricsChunk {
				t.Fatalf("write %d is %d bytes; want at most %d", i, len(w), metricsChunk)
			}
			if w[len(w)-1] != '\n' {
				t.Fatalf("write %d ends mid-series: ...%q", i, w[len(w)-40:])
			}
			if i < len(rec.writes)-1 && len(w) < metricsChunk-1024 {
				t.Fatalf("write %d is %d bytes; a chunk should be filled up to its last whole series", i, len(w))
			}
			cat.Write(w)
		}
		if !bytes.Equal(cat.Bytes(), body) {
			t.Fatal("the chunks' concatenation differs from the rendering")
		}
		if got := parseMetricLines(t, cat.Bytes()); len(got) != len(want) {
			t.Fatalf("concatenation holds %d test series; want %d", len(got), len(want))
		}
	})

	t.Run("served body", func(t *testing.T) {
		ctx := new(fasthttp.RequestCtx)
		ctx.Request.SetRequestURI("/metrics")
		if !(&Ops{}).Handle(ctx) {
			t.Fatal("/metrics not handled")
		}
		if !ctx.Response.IsBodyStream() {
			t.Fatal("a body of several chunks is not streamed")
		}
		body, err := io.ReadAll(ctx.Response.BodyStream())
		if err != nil {
			t.Fatal(err)
		}
		ctx.Response.ResetBody()
		got := parseMetricLines(t, body)
		if len(got) != len(want) {
			t.Fatalf("served body holds %d test series; want %d", len(got), len(want))
		}
		for name, v := range want {
			if got[name] != v {
				t.Fatalf("%s = %q; want %q", name[:40], got[name], v)
			}
		}
	})
}
