// Package datadog exports usage records to the Datadog logs intake (HTTP
// API v2, https://http-intake.logs.<site>/api/v2/logs): one log entry per
// record, the record's fields as top-level attributes, gzip-compressed.
package datadog

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"gw/admin/resources"
	"gw/edge/usage"
	"gw/sse/rawjson"
)

// MaxBatch is the intake's limit of entries per request.
const MaxBatch = 1000

// Sink posts batches to one Datadog site.
type Sink struct {
	cfg  *resources.DatadogExporter
	URL  string // the intake URL; tests point it at a local receiver
	host string
	hc   *http.Client
	gz   usage.Gzipper
}

var _ usage.Sink = (*Sink)(nil)

// IntakeURL is the logs intake of site.
func IntakeURL(site string) string { return "https://http-intake.logs." + site + "/api/v2/logs" }

// New builds the sink of one datadog exporter.
func New(cfg *resources.DatadogExporter) *Sink {
	host, _ := os.Hostname()
	return &Sink{cfg: cfg, URL: IntakeURL(cfg.Site), host: host, hc: &http.Client{Transport: usage.Transport(), Timeout: 30 * time.Second}}
}

// AppendRecord appends r's log entry to body, the JSON array's elements
// so far.
func (s *Sink) AppendRecord(body []byte, r *usage.Record) []byte {
	if len(body) == 0 {
		body = append(body, '[')
	} else {
		body = append(body, ',')
	}
	return s.appendEntry(body, r)
}

// Finish writes the gzip-compressed JSON array of log entries. The array's
// end is written into body's spare capacity, which the batch no longer
// needs.
func (s *Sink) Finish(dst, body []byte, _ int) ([]byte, error) {
	if len(body) == 0 {
		body = append(body, '[')
	}
	return s.gz.Compress(dst, append(body, ']'))
}

// appendEntry writes the reserved attributes, then the record's own fields.
func (s *Sink) appendEntry(dst []byte, r *usage.Record) []byte {
	dst = append(dst, `{"ddsource":"gw","service":`...)
	dst = rawjson.AppendQuote(dst, s.cfg.Service)
	if s.host != "" {
		dst = append(dst, `,"hostname":`...)
		dst = rawjson.AppendQuote(dst, s.host)
	}
	dst = append(dst, `,"status":"`...)
	if r.StatusCode >= 500 {
		dst = append(dst, "error"...)
	} else if r.StatusCode >= 400 {
		dst = append(dst, "warn"...)
	} else {
		dst = append(dst, "info"...)
	}
	dst = append(dst, `","ddtags":`...)
	tags := append(append(append([]byte("model:"), r.Model...), ",status_code:"...), strconv.Itoa(r.StatusCode)...)
	dst = rawjson.AppendQuoteBytes(dst, tags)
	dst = append(dst, `,"message":`...)
	dst = rawjson.AppendQuote(dst, "usage "+r.AttemptKind+" "+r.Model+" "+strconv.Itoa(r.StatusCode))
	rec := usage.AppendJSON(nil, r)
	dst = append(dst, ',')
	return append(dst, rec[1:]...) // the record's fields, after its '{'
}

// Send posts one batch; 202 is success.
func (s *Sink) Send(ctx context.Context, b *usage.Batch) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(b.Payload))
	if err != nil {
		return &usage.SendError{Permanent: true, Msg: "cannot build the intake request"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	req.Header.Set("DD-API-KEY", s.cfg.APIKey.Reveal())
	resp, err := s.hc.Do(req)
	if err != nil {
		return &usage.SendError{Msg: "cannot reach the Datadog intake: " + usage.NetReason(err)}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return usage.CheckResponse(resp.StatusCode, resp.Header, body)
}
