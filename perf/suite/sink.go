package suite

import (
	"net"
	"strconv"
	"sync/atomic"

	"github.com/valyala/fasthttp"
)

// sink is an HTTP receiver that accepts every request and discards its
// body: the far end of the usage exporters in scenario 8, as cheap as a
// receiver can be so that what is measured is gw's exporting.
type sink struct {
	URL      string
	ln       net.Listener
	srv      *fasthttp.Server
	requests atomic.Int64
	bytes    atomic.Int64
	puts     atomic.Int64 // object-store uploads (PUT)
}

func startSink() (*sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &sink{URL: "http://" + ln.Addr().String(), ln: ln}
	s.srv = &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		s.requests.Add(1)
		if ctx.IsPut() {
			s.puts.Add(1)
		}
		s.bytes.Add(int64(len(ctx.Request.Body())))
		// S3 PutObject answers 200 with an ETag; OTLP/HTTP 200 with an
		// empty ExportTraceServiceResponse.
		ctx.Response.Header.Set("ETag", `"`+strconv.FormatInt(s.requests.Load(), 10)+`"`)
		if string(ctx.Request.Header.ContentType()) == "application/x-protobuf" {
			ctx.SetContentType("application/x-protobuf")
		}
	}, MaxRequestBodySize: 64 << 20}
	go s.srv.Serve(ln) //nolint:errcheck // ends with Close
	return s, nil
}

func (s *sink) Requests() int64 { return s.requests.Load() }
func (s *sink) Bytes() int64    { return s.bytes.Load() }
func (s *sink) Puts() int64     { return s.puts.Load() }
func (s *sink) Close()          { _ = s.ln.Close() }

// exportersBlock is the observability_exporters section of scenario 8's
// gw-exporters process: OTLP/HTTP and an S3 object store, both gzip (as an
// archive is usually kept), both at the discard sink base.
func exportersBlock(base string) string {
	return `observability_exporters:
  - name: perf-otlp
    kind: otlp_http
    endpoint: ` + base + `/v1/traces
    compression: gzip
  - name: perf-archive
    kind: object_store
    provider: s3
    bucket: perf
    endpoint: ` + base + `
    region: us-east-1
    auth_mode: static
    access_key_id: perf
    secret_access_key: perf-secret
    compression: gzip
`
}
