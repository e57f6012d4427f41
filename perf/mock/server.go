package mock

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Config configures a Server. The zero value serves with the defaults.
type Config struct {
	// Knobs are the defaults of every request; x-mock-* headers and /knobs/ path segments
	// override them per request. Zero Chunks, ChunkSize and StallFor take DefaultChunks,
	// DefaultChunkSize and DefaultStallFor.
	Knobs Knobs
	// Models are listed by GET /v1/models. Empty means DefaultModels.
	Models []string
	// RecordLimit is how many requests GET /_mock/requests and Server.Requests keep.
	// Zero means 64; a negative value disables recording (perf runs).
	RecordLimit int
	// Logf receives fasthttp's connection errors. Nil discards them.
	Logf func(format string, args ...any)
}

// DefaultModels are listed by GET /v1/models when Config.Models is empty.
var DefaultModels = []string{
	"gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-5", "gpt-5-mini", "gpt-5-nano", "o3", "o4-mini",
}

const defaultRecordLimit = 64

// Server is the mock provider. Create it with New; it must not be copied.
type Server struct {
	defaults Knobs
	models   []byte // pre-rendered GET /v1/models body
	rec      *recorder
	stats    counters
	otlp     otlpReceiver  // POST /v1/traces (otlp.go)
	videos   videoStore    // video tasks (videos.go)
	seq      atomic.Uint64 // answer ids

	// done is closed by Shutdown; every pause selects on it so streams end promptly.
	done chan struct{}

	mu      sync.Mutex
	stopped bool
	lns     []net.Listener

	hangUpFn fasthttp.HijackHandler // s.afterHangUp, bound once

	srv fasthttp.Server
}

// New returns a Server for cfg. It does not listen yet: call Serve or ListenAndServe.
func New(cfg Config) *Server {
	s := &Server{
		defaults: cfg.Knobs,
		done:     make(chan struct{}),
	}
	s.defaults.applyDefaults()
	s.hangUpFn = s.afterHangUp
	models := cfg.Models
	if len(models) == 0 {
		models = DefaultModels
	}
	s.models = appendOpenAIModelList(nil, models)
	switch limit := cfg.RecordLimit; {
	case limit == 0:
		s.rec = newRecorder(defaultRecordLimit)
	case limit > 0:
		s.rec = newRecorder(limit)
	}
	s.srv = fasthttp.Server{
		Handler:              s.handle,
		Name:                 "gw-mock",
		Logger:               logger(cfg.Logf),
		ReadBufferSize:       16 << 10,
		MaxRequestBodySize:   64 << 20,
		NoDefaultContentType: true,
		CloseOnShutdown:      true,
		// Uploads (uploads.go) are read as they arrive, never held whole;
		// other handlers read the body whole with PostBody.
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		// No WriteTimeout: it would cover a whole stream, and stalls are the point.
	}
	return s
}

// Serve answers requests on ln until Shutdown; it returns nil after Shutdown, even when
// Shutdown came first.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return ln.Close()
	}
	s.lns = append(s.lns, ln)
	s.mu.Unlock()

	err := s.srv.Serve(ln)
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if stopped {
		// Shutdown may have closed ln before fasthttp registered it.
		return nil
	}
	return err
}

// ListenAndServe listens on the TCP address addr and calls Serve.
func (s *Server) ListenAndServe(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Shutdown stops listening, ends every pause (delays, stalls) and waits until open
// connections are idle or closed. Streams interrupted this way end without their
// terminator. The Server cannot be restarted.
func (s *Server) Shutdown() error {
	s.mu.Lock()
	if !s.stopped {
		s.stopped = true
		close(s.done)
	}
	lns := s.lns
	s.lns = nil
	s.mu.Unlock()

	err := s.srv.Shutdown()
	// fasthttp's Shutdown skips a listener whose Serve has not registered it yet.
	for _, ln := range lns {
		_ = ln.Close()
	}
	return err
}

// errorFormat renders one wire format's error envelope.
type errorFormat func(dst []byte, status int, message string) []byte

// route is one endpoint of one wire format. Each wire-format file declares its routes;
// routes lists them in matching order.
type route struct {
	method      string
	match       func(path []byte) bool
	serve       func(s *Server, ctx *fasthttp.RequestCtx, k *Knobs)
	appendError errorFormat
}

var routes = []*route{
	&vertexRoute, // first: its OpenAI-compatible path also ends in /chat/completions
	&openAIChatRoute,
	&openAIResponsesRoute,
	&anthropicMessagesRoute,
	&anthropicCountTokensRoute,
	&openAIModelsRoute,
	&openAIModelRoute,
	&bedrockConverseRoute,
	&openAIEmbeddingsRoute, &openAICompletionsRoute, &rerankRoute, // embeddings.go, completions.go
	&openAIImagesRoute, &openAISpeechRoute, // images.go, audio.go
	&openAIVideosCreateRoute, &openAIVideosGetRoute, &openAIVideosDeleteRoute, // videos.go
	&openAIRealtimeRoute,
	&presidioAnalyzeRoute, &presidioAnonymizeRoute, // guard_presidio.go
	&openAIModerationRoute,                                                   // guard_moderation.go
	&lakeraGuardRoute,                                                        // guard_lakera.go
	&azureTextRoute, &azureShieldRoute, &aliyunRoute, &bedrockGuardrailRoute, // guard_azure.go, guard_aliyun.go, guard_bedrock.go
	&openAITranscriptionsRoute, &openAITranslationsRoute, &openAIImageEditsRoute, // uploads.go
}

func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	path := ctx.Path()
	if bytes.HasPrefix(path, strMockPrefix) {
		s.serveInspection(ctx, path[len(strMockPrefix):])
		return
	}
	if bytes.Equal(path, strMCPPath) { // mcp.go
		s.serveMCP(ctx)
		return
	}
	if bytes.HasPrefix(path, strDocsPrefix) { // mcp.go
		s.serveDocs(ctx)
		return
	}
	if bytes.Equal(path, strOTLPTracesPath) {
		s.serveOTLPTraces(ctx)
		return
	}
	s.stats.requests.Add(1)
	s.stats.inFlight.Add(1)
	if s.rec != nil {
		s.rec.add(ctx)
	}
	s.route(ctx, path)
	if ctx.Request.IsBodyStream() {
		// A body the handler did not read (an injected error, a 404)
		// must not be taken for the next request on the connection: read
		// it, or for an upload (never held whole) close the connection.
		if len(ctx.Request.Header.MultipartFormBoundary()) > 0 {
			ctx.SetConnectionClose()
		} else {
			ctx.Request.Body()
		}
	}
	// Streams and cut connections outlive the handler; they settle in-flight when they end.
	if !ctx.IsBodyStream() && !ctx.Hijacked() {
		s.stats.inFlight.Add(-1)
	}
}

func (s *Server) route(ctx *fasthttp.RequestCtx, path []byte) {
	method := ctx.Method()
	var rt, wrongMethod *route
	for _, r := range routes {
		if !r.match(path) {
			continue
		}
		if string(method) == r.method {
			rt = r
			break
		}
		if wrongMethod == nil {
			wrongMethod = r
		}
	}
	if rt == nil {
		// In the words of the endpoint, else of the client: Anthropic's clients send
		// anthropic-version.
		status, format := fasthttp.StatusNotFound, errorFormat(appendOpenAIError)
		switch {
		case wrongMethod != nil:
			status, format = fasthttp.StatusMethodNotAllowed, wrongMethod.appendError
		case len(ctx.Request.Header.PeekBytes(strAnthropicVersion)) > 0:
			format = appendAnthropicError
		}
		s.writeError(ctx, format, status, "Invalid URL ("+string(method)+" "+string(path)+")")
		return
	}

	// Pooled: k would escape through rt.serve. Answers that outlive the handler copy it.
	k := knobsPool.Get().(*Knobs)
	defer knobsPool.Put(k)
	if err := s.requestKnobs(ctx, k); err != nil {
		s.writeError(ctx, rt.appendError, fasthttp.StatusBadRequest, "mock: "+err.Error())
		return
	}
	if k.Latency > 0 && !s.sleep(k.Latency) {
		s.writeError(ctx, rt.appendError, fasthttp.StatusServiceUnavailable, "mock: shutting down")
		return
	}
	if status := k.errorStatus(); status != 0 {
		s.writeInjectedError(ctx, rt.appendError, k, status)
		return
	}
	rt.serve(s, ctx, k)
}

var knobsPool = sync.Pool{New: func() any { return new(Knobs) }}

func (s *Server) writeInjectedError(ctx *fasthttp.RequestCtx, format errorFormat, k *Knobs, status int) {
	if k.RetryAfter != "" {
		ctx.Response.Header.SetBytesK(strRetryAfter, k.RetryAfter)
	}
	switch k.ErrorBody {
	case "":
		s.writeError(ctx, format, status, "mock: injected status "+strconv.Itoa(status)+" "+statusText(status))
	case "empty":
		s.stats.errors.Add(1)
		ctx.SetStatusCode(status)
	default:
		s.stats.errors.Add(1)
		ctx.SetStatusCode(status)
		if t := strings.TrimLeft(k.ErrorBody, " \t\r\n"); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
			ctx.SetContentTypeBytes(strJSON)
		} else {
			ctx.SetContentTypeBytes(strTextPlain)
		}
		ctx.SetBodyString(k.ErrorBody)
	}
}

// statusText names status; fasthttp does not know Anthropic's 529.
func statusText(status int) string {
	if status == 529 {
		return "Overloaded"
	}
	return fasthttp.StatusMessage(status)
}

// writeError answers with status and the error envelope of format.
func (s *Server) writeError(ctx *fasthttp.RequestCtx, format errorFormat, status int, message string) {
	s.stats.errors.Add(1)
	bp := acquireBuf()
	*bp = format((*bp)[:0], status, message)
	ctx.SetStatusCode(status)
	ctx.SetContentTypeBytes(strJSON)
	ctx.SetBody(*bp)
	releaseBuf(bp)
}

// setRequestID sets the X-Request-Id header of answer id.
func setRequestID(ctx *fasthttp.RequestCtx, id uint64) {
	var buf [32]byte
	b := append(buf[:0], strRequestIDStart...)
	b = strconv.AppendUint(b, id, 10)
	ctx.Response.Header.SetCanonical(strXRequestID, b)
}

// sleep pauses for d; it returns false when Shutdown cut the pause short.
func (s *Server) sleep(d time.Duration) bool {
	var p pacer
	defer p.stop()
	return p.sleep(s.done, d)
}

// hangUp closes the connection of ctx without sending a response.
func (s *Server) hangUp(ctx *fasthttp.RequestCtx) {
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(s.hangUpFn)
}

func (s *Server) afterHangUp(net.Conn) {
	// fasthttp closes the connection when the hijack handler returns.
	s.stats.cuts.Add(1)
	s.stats.inFlight.Add(-1)
}

// Stats are the counters served by GET /_mock/stats.
type Stats struct {
	// Requests counts requests outside /_mock/.
	Requests int64 `json:"requests"`
	// InFlight counts requests whose answer has not ended, streams included.
	InFlight int64 `json:"in_flight"`
	// Streams counts streaming answers started.
	Streams int64 `json:"streams"`
	// Errors counts error answers: injected statuses and rejected requests.
	Errors int64 `json:"errors"`
	// Cuts counts connections closed on purpose by fail_after.
	Cuts int64 `json:"cuts"`
}

// paddedCounter keeps each hot counter on its own cache line.
type paddedCounter struct {
	atomic.Int64
	_ [56]byte
}

type counters struct {
	requests, inFlight, streams, errors, cuts paddedCounter
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	return Stats{
		Requests: s.stats.requests.Load(),
		InFlight: s.stats.inFlight.Load(),
		Streams:  s.stats.streams.Load(),
		Errors:   s.stats.errors.Load(),
		Cuts:     s.stats.cuts.Load(),
	}
}

// resetStats zeroes every counter except InFlight.
func (s *Server) resetStats() {
	s.stats.requests.Store(0)
	s.stats.streams.Store(0)
	s.stats.errors.Store(0)
	s.stats.cuts.Store(0)
}

// serveInspection answers /_mock/requests, /_mock/stats and /_mock/otlp. These requests are neither
// recorded nor counted.
func (s *Server) serveInspection(ctx *fasthttp.RequestCtx, name []byte) {
	var v any
	switch string(name) {
	case "requests":
		switch {
		case ctx.IsGet():
			reqs := s.Requests()
			if reqs == nil {
				reqs = []RecordedRequest{}
			}
			v = reqs
		case ctx.IsDelete():
			s.ClearRequests()
			ctx.SetStatusCode(fasthttp.StatusNoContent)
			return
		}
	case "stats":
		switch {
		case ctx.IsGet():
			v = s.Stats()
		case ctx.IsDelete():
			s.resetStats()
			ctx.SetStatusCode(fasthttp.StatusNoContent)
			return
		}
	case "otlp":
		switch {
		case ctx.IsGet():
			v = s.OTLP()
		case ctx.IsDelete():
			s.otlp.reset()
			ctx.SetStatusCode(fasthttp.StatusNoContent)
			return
		}
	default:
		ctx.Error("mock: unknown inspection endpoint; see /_mock/requests, /_mock/stats and /_mock/otlp", fasthttp.StatusNotFound)
		return
	}
	if v == nil {
		ctx.Error("mock: use GET or DELETE", fasthttp.StatusMethodNotAllowed)
		return
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic("BUG: cannot marshal inspection answer: " + err.Error())
	}
	ctx.SetContentTypeBytes(strJSON)
	ctx.SetBody(append(b, '\n'))
}

// Requests returns the recorded requests, oldest first. It returns nil when recording is
// disabled.
func (s *Server) Requests() []RecordedRequest {
	if s.rec == nil {
		return nil
	}
	return s.rec.snapshot()
}

// ClearRequests forgets the recorded requests.
func (s *Server) ClearRequests() {
	if s.rec != nil {
		s.rec.clear()
	}
}

// bufPool holds render buffers for buffered answers.
var bufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 4096)
	return &b
}}

func acquireBuf() *[]byte { return bufPool.Get().(*[]byte) }

// releaseBuf returns bp to the pool; huge buffers are dropped so that one big answer does
// not pin memory.
func releaseBuf(bp *[]byte) {
	if cap(*bp) > 1<<20 {
		return
	}
	*bp = (*bp)[:0]
	bufPool.Put(bp)
}

type logfFunc func(format string, args ...any)

func (f logfFunc) Printf(format string, args ...any) { f(format, args...) }

func logger(f func(format string, args ...any)) fasthttp.Logger {
	if f == nil {
		return logfFunc(func(string, ...any) {})
	}
	return logfFunc(func(format string, args ...any) {
		// The mock streams request bodies (uploads) and reads the others
		// whole on purpose; fasthttp (v1.78) warns on every such read.
		if strings.HasPrefix(format, "WARNING: Request.Body() reads the entire stream") {
			return
		}
		f(format, args...)
	})
}

// canonicalHeader returns the net/http spelling of a header name for recorded requests.
func canonicalHeader(k []byte) string {
	return http.CanonicalHeaderKey(string(k))
}
