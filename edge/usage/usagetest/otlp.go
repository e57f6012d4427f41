package usagetest

import (
	"compress/gzip"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	common "go.opentelemetry.io/proto/otlp/common/v1"
	trace "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// OTLPReceiver is a real OTLP/HTTP traces receiver on a loopback port: it
// decodes each request body as a collector does (protobuf
// ExportTraceServiceRequest, whose wire form is TracesData; gzip when
// Content-Encoding says so) and keeps the spans. FailWith makes it answer
// an error status instead, as an outage.
type OTLPReceiver struct {
	URL string

	mu       sync.Mutex
	spans    []*trace.Span
	requests int
	headers  []http.Header
	failWith int
	retryAft string
	srv      *http.Server
}

// StartOTLP starts a receiver and stops it with the test.
func StartOTLP(tb testing.TB) *OTLPReceiver {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	r := &OTLPReceiver{URL: "http://" + ln.Addr().String() + "/v1/traces"}
	r.srv = &http.Server{Handler: r}
	go r.srv.Serve(ln)
	tb.Cleanup(func() { r.srv.Close() })
	return r
}

// FailWith makes every request answer status (0: accept again), with
// Retry-After retryAfter when not empty.
func (r *OTLPReceiver) FailWith(status int, retryAfter string) {
	r.mu.Lock()
	r.failWith, r.retryAft = status, retryAfter
	r.mu.Unlock()
}

func (r *OTLPReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.requests++
	r.headers = append(r.headers, req.Header.Clone())
	fail, ra := r.failWith, r.retryAft
	r.mu.Unlock()
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "unsupported content type", http.StatusUnsupportedMediaType)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, "bad gzip", http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	if fail != 0 {
		if ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		http.Error(w, "receiver unavailable", fail)
		return
	}
	var td trace.TracesData
	if err := proto.Unmarshal(raw, &td); err != nil {
		http.Error(w, "bad protobuf", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range td.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse
}

// Spans returns the spans received so far.
func (r *OTLPReceiver) Spans() []*trace.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*trace.Span(nil), r.spans...)
}

// Requests returns how many requests arrived (accepted or not).
func (r *OTLPReceiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// Headers returns the headers of every request.
func (r *OTLPReceiver) Headers() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.headers...)
}

// Attr returns a span attribute as a Go value (string, int64, float64,
// bool, []string), or nil when absent.
func Attr(sp *trace.Span, key string) any {
	for _, kv := range sp.Attributes {
		if kv.Key != key {
			continue
		}
		switch v := kv.Value.Value.(type) {
		case *common.AnyValue_StringValue:
			return v.StringValue
		case *common.AnyValue_IntValue:
			return v.IntValue
		case *common.AnyValue_DoubleValue:
			return v.DoubleValue
		case *common.AnyValue_BoolValue:
			return v.BoolValue
		case *common.AnyValue_ArrayValue:
			var out []string
			for _, e := range v.ArrayValue.Values {
				out = append(out, e.GetStringValue())
			}
			return out
		}
	}
	return nil
}
