package edge

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/valyala/fasthttp"

	"gw/perf/mock"
)

// metricValue reads one series' value from the process's Prometheus
// rendering (0 when the series is not there yet).
func metricValue(t *testing.T, series string) float64 {
	t.Helper()
	var buf bytes.Buffer
	metrics.WritePrometheus(&buf, false)
	for _, line := range strings.Split(buf.String(), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", series, err)
			}
			return f
		}
	}
	return 0
}

// chatCall runs one chat call through p; a streamed one is written to out
// the way fasthttp serves it, a buffered one's body is copied to out.
func chatCall(t *testing.T, p *Proxy, body []byte, out io.Writer) {
	t.Helper()
	ctx := new(fasthttp.RequestCtx)
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/chat/completions")
	ctx.Request.Header.Set("Authorization", "Bearer caller-key")
	ctx.Request.SetBody(body)
	if !p.Handle(ctx) || ctx.Response.StatusCode() != 200 {
		t.Fatalf("call failed: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	if !ctx.Response.IsBodyStream() {
		out.Write(ctx.Response.Body())
		return
	}
	if _, err := ctx.Response.BodyStream().(io.WriterTo).WriteTo(out); err != nil {
		t.Fatal(err)
	}
	ctx.Response.ResetBody() // fasthttp's close: the stream is recorded here
}

// TestTTFTHistograms: a call through the proxy to an upstream that waits
// firstDelay before its headers (and, streaming, as long again before its
// first event) adds one observation to each TTFT
// histogram it belongs to (the llm_ ones only for a stream), and the
// observed value is at least that delay.
func TestTTFTHistograms(t *testing.T) {
	const firstDelay = 60 * time.Millisecond
	base, _ := startCountingMock(t, mock.Config{})
	p := proxyFor(t, base+"/knobs/latency=60ms,first_token_delay=60ms")
	for _, tc := range []struct {
		name   string
		body   []byte
		series []string // histograms that get one observation
		none   []string // histograms that get none
	}{
		{"stream", streamBody,
			[]string{`gw_request_ttft_seconds{side="downstream"}`, `gw_request_ttft_seconds{side="upstream"}`,
				`gw_llm_time_to_first_token_seconds{side="downstream"}`, `gw_llm_time_to_first_token_seconds{side="upstream"}`},
			nil},
		{"buffered", fullBody,
			[]string{`gw_request_ttft_seconds{side="downstream"}`, `gw_request_ttft_seconds{side="upstream"}`},
			[]string{`gw_llm_time_to_first_token_seconds{side="downstream"}`, `gw_llm_time_to_first_token_seconds{side="upstream"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			suffixed := func(s, suf string) string { // name{l} -> name_count{l}
				i := strings.IndexByte(s, '{')
				return s[:i] + suf + s[i:]
			}
			type snap struct{ count, sum float64 }
			before := map[string]snap{}
			for _, s := range append(append([]string{}, tc.series...), tc.none...) {
				before[s] = snap{metricValue(t, suffixed(s, "_count")), metricValue(t, suffixed(s, "_sum"))}
			}
			chatCall(t, p, tc.body, io.Discard)
			for _, s := range tc.series {
				dc := metricValue(t, suffixed(s, "_count")) - before[s].count
				ds := metricValue(t, suffixed(s, "_sum")) - before[s].sum
				if dc != 1 {
					t.Errorf("%s: count rose by %v; want 1", s, dc)
					continue
				}
				if ds < firstDelay.Seconds() || ds > 5 {
					t.Errorf("%s: observed %.4fs; want >= the upstream's %v first-event delay", s, ds, firstDelay)
				}
			}
			for _, s := range tc.none {
				if dc := metricValue(t, suffixed(s, "_count")) - before[s].count; dc != 0 {
					t.Errorf("%s: count rose by %v for a %s call; want 0", s, dc, tc.name)
				}
			}
		})
	}
}

// TestAccessLogBodyBytes: the access line's request_body_bytes and
// response_body_bytes equal the bytes the caller sent and received, for a
// buffered call and for a stream.
func TestAccessLogBodyBytes(t *testing.T) {
	base, _ := startCountingMock(t, mock.Config{})
	for _, tc := range []struct {
		name   string
		body   []byte
		stream bool
	}{
		{"buffered", fullBody, false},
		{"stream", streamBody, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := proxyFor(t, base)
			var logBuf bytes.Buffer
			p.Log = NewAccessLog(&logBuf)
			var got bytes.Buffer
			chatCall(t, p, tc.body, &got)
			p.Log.Close()
			var line struct {
				Stream   bool `json:"stream"`
				ReqBytes *int `json:"request_body_bytes"`
				RespByts *int `json:"response_body_bytes"`
			}
			if err := json.Unmarshal(bytes.TrimSpace(logBuf.Bytes()), &line); err != nil {
				t.Fatalf("access log is not one JSON line: %v\n%s", err, logBuf.Bytes())
			}
			if line.Stream != tc.stream || line.ReqBytes == nil || line.RespByts == nil {
				t.Fatalf("access line lacks stream=%v or the byte counts: %s", tc.stream, logBuf.Bytes())
			}
			if *line.ReqBytes != len(tc.body) {
				t.Errorf("request_body_bytes = %d; the caller sent %d", *line.ReqBytes, len(tc.body))
			}
			if got.Len() == 0 || *line.RespByts != got.Len() {
				t.Errorf("response_body_bytes = %d; the caller received %d", *line.RespByts, got.Len())
			}
		})
	}
}
