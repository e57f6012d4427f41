package mock

import (
	"bytes"
	"encoding/hex"
	"sync"

	"github.com/valyala/fasthttp"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	trace "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The mock doubles as an OTLP/HTTP traces receiver, so `make run` can show
// gw's usage export (an otlp_http exporter pointed at ${MOCK_BASE}/v1/traces)
// without a collector. It decodes like a collector: protobuf
// ExportTraceServiceRequest (whose wire form is TracesData), gzip when
// Content-Encoding says so. GET /_mock/otlp shows what arrived.

var strOTLPTracesPath = []byte("/v1/traces")

// otlpKeep is how many of the latest spans GET /_mock/otlp shows.
const otlpKeep = 16

// OTLPSpan is one received span as GET /_mock/otlp shows it.
type OTLPSpan struct {
	Name       string         `json:"name"`
	TraceID    string         `json:"trace_id"`
	Attributes map[string]any `json:"attributes"`
}

// OTLPStats are the counts of the OTLP receiver and its latest spans.
type OTLPStats struct {
	// Requests counts accepted export requests.
	Requests int64 `json:"requests"`
	// Rejected counts requests that could not be decoded.
	Rejected int64 `json:"rejected"`
	// Spans counts the spans of accepted requests.
	Spans int64 `json:"spans"`
	// Latest are the last spans received, oldest first (at most 16).
	Latest []OTLPSpan `json:"latest"`
}

type otlpReceiver struct {
	mu     sync.Mutex
	stats  OTLPStats
	latest []OTLPSpan
}

// serveOTLPTraces answers POST /v1/traces. Not a model request: it is
// neither counted in /_mock/stats nor recorded nor subject to knobs.
func (s *Server) serveOTLPTraces(ctx *fasthttp.RequestCtx) {
	if !ctx.IsPost() {
		ctx.Error("mock: OTLP traces take POST", fasthttp.StatusMethodNotAllowed)
		return
	}
	if !bytes.Equal(ctx.Request.Header.ContentType(), []byte("application/x-protobuf")) {
		s.otlp.reject()
		ctx.Error("mock: OTLP traces must be application/x-protobuf", fasthttp.StatusUnsupportedMediaType)
		return
	}
	body := ctx.Request.Body()
	if bytes.EqualFold(ctx.Request.Header.ContentEncoding(), []byte("gzip")) {
		var err error
		if body, err = ctx.Request.BodyGunzip(); err != nil {
			s.otlp.reject()
			ctx.Error("mock: bad gzip body", fasthttp.StatusBadRequest)
			return
		}
	}
	var td trace.TracesData
	if err := proto.Unmarshal(body, &td); err != nil {
		s.otlp.reject()
		ctx.Error("mock: bad OTLP protobuf", fasthttp.StatusBadRequest)
		return
	}
	s.otlp.add(&td)
	ctx.SetContentType("application/x-protobuf")
	ctx.SetStatusCode(fasthttp.StatusOK) // an empty ExportTraceServiceResponse: full success
}

func (o *otlpReceiver) reject() {
	o.mu.Lock()
	o.stats.Rejected++
	o.mu.Unlock()
}

func (o *otlpReceiver) add(td *trace.TracesData) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stats.Requests++
	for _, rs := range td.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				o.stats.Spans++
				if len(o.latest) == otlpKeep {
					o.latest = append(o.latest[:0], o.latest[1:]...)
				}
				o.latest = append(o.latest, summarizeSpan(sp))
			}
		}
	}
}

// OTLP returns the receiver's counts and latest spans.
func (s *Server) OTLP() OTLPStats {
	s.otlp.mu.Lock()
	defer s.otlp.mu.Unlock()
	st := s.otlp.stats
	st.Latest = append([]OTLPSpan{}, s.otlp.latest...)
	return st
}

func (o *otlpReceiver) reset() {
	o.mu.Lock()
	o.stats, o.latest = OTLPStats{}, nil
	o.mu.Unlock()
}

func summarizeSpan(sp *trace.Span) OTLPSpan {
	out := OTLPSpan{Name: sp.Name, TraceID: hex.EncodeToString(sp.TraceId), Attributes: make(map[string]any, len(sp.Attributes))}
	for _, kv := range sp.Attributes {
		out.Attributes[kv.Key] = anyValue(kv.Value)
	}
	return out
}

// anyValue turns an OTLP attribute value into its JSON form.
func anyValue(v *common.AnyValue) any {
	if v == nil {
		return nil
	}
	switch x := v.Value.(type) {
	case *common.AnyValue_StringValue:
		return x.StringValue
	case *common.AnyValue_IntValue:
		return x.IntValue
	case *common.AnyValue_DoubleValue:
		return x.DoubleValue
	case *common.AnyValue_BoolValue:
		return x.BoolValue
	case *common.AnyValue_ArrayValue:
		out := make([]any, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, anyValue(e))
		}
		return out
	case *common.AnyValue_BytesValue:
		return hex.EncodeToString(x.BytesValue)
	}
	return nil
}
