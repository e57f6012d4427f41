package edge

import (
	"bufio"
	"bytes"
	"encoding/json"

	"github.com/VictoriaMetrics/metrics"
	"github.com/valyala/fasthttp"

	"gw/admin"
	"gw/edge/usage"
	"gw/limiter"
)

// metricsChunk is the /metrics streaming unit: chunks end on whole series.
const metricsChunk = 256 << 10

// Ops serves the operations endpoints: /livez, /readyz, /status/*, /metrics
// and the live status page /ui.
type Ops struct {
	Manager *admin.Manager
	Health  *Health          // nil: /status/models lists models without probe results
	Usage   *usage.Pipeline  // nil: /status/exporters lists no sink
	Limiter *limiter.Limiter // nil: the status page shows the limiter as local
	Page    *StatusPage      // nil: no /ui (status.ui false)
}

// Handle serves ctx when its path is an ops endpoint and reports whether it did.
func (o *Ops) Handle(ctx *fasthttp.RequestCtx) bool {
	switch string(ctx.Path()) {
	case "/livez":
		ctx.SetContentType("text/plain; charset=utf-8")
		ctx.SetBodyString("ok\n")
	case "/readyz":
		ctx.SetContentType("text/plain; charset=utf-8")
		if o.Manager.Holder().Load() == nil {
			ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
			ctx.SetBodyString("no active snapshot\n")
			return true
		}
		ctx.SetBodyString("ok\n")
	case "/status/config":
		ctx.SetContentType("application/json")
		b, err := json.Marshal(o.Manager.Status())
		if err != nil {
			WriteError(ctx, fasthttp.StatusInternalServerError, "server_error", "internal_error", "cannot render status")
			return true
		}
		ctx.SetBody(append(b, '\n'))
	case "/metrics":
		o.metrics(ctx)
	case "/status/exporters":
		// Node exporter health: every usage sink (exporters and the control
		// plane) with last_error, failed_batches and last_failure_unix.
		list := []usage.SinkStatus{}
		if o.Usage != nil {
			list = o.Usage.Status()
		}
		b, err := json.Marshal(struct {
			Exporters []usage.SinkStatus `json:"exporters"`
		}{list})
		if err != nil {
			WriteError(ctx, fasthttp.StatusInternalServerError, "server_error", "internal_error", "cannot render status")
			return true
		}
		ctx.SetContentType("application/json")
		ctx.SetBody(append(b, '\n'))
	case "/status/models":
		snap := o.Manager.Holder().Load()
		if snap == nil {
			WriteError(ctx, fasthttp.StatusServiceUnavailable, "server_error", "no_snapshot", "no active snapshot")
			return true
		}
		b, err := json.Marshal(struct {
			Models []ModelStatus `json:"models"`
		}{o.Health.Statuses(snap)})
		if err != nil {
			WriteError(ctx, fasthttp.StatusInternalServerError, "server_error", "internal_error", "cannot render status")
			return true
		}
		ctx.SetContentType("application/json")
		ctx.SetBody(append(b, '\n'))
	default:
		// Only a /ui path pays the string conversion: the main listener
		// asks Handle about every request when it serves the ops endpoints.
		if p := ctx.Path(); o.Page != nil && len(p) >= 3 && string(p[:3]) == "/ui" {
			return o.Page.Handle(ctx, string(p))
		}
		return false
	}
	return true
}

// metrics renders Prometheus text and streams it in chunks of at most 256 KiB,
// each ending on a whole line so that no series is split across chunks.
func (o *Ops) metrics(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("text/plain; version=0.0.4; charset=utf-8")
	var buf bytes.Buffer
	metrics.WritePrometheus(&buf, true)
	body := buf.Bytes()
	if len(body) <= metricsChunk {
		ctx.SetBody(body)
		return
	}
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) { writeMetricsChunks(w, body) })
}

// writeMetricsChunks writes body in flushed pieces of at most metricsChunk
// bytes, each ending on a whole line (a line longer than a chunk goes alone).
func writeMetricsChunks(w *bufio.Writer, body []byte) {
	for len(body) > 0 {
		n := len(body)
		if n > metricsChunk {
			n = bytes.LastIndexByte(body[:metricsChunk], '\n') + 1
			if n <= 0 { // a single line longer than a chunk: send it whole
				n = bytes.IndexByte(body, '\n') + 1
				if n <= 0 {
					n = len(body)
				}
			}
		}
		if _, err := w.Write(body[:n]); err != nil {
			return
		}
		if err := w.Flush(); err != nil {
			return
		}
		body = body[n:]
	}
}
