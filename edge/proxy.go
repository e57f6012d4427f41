package edge

import (
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/admin/snapshot"
	"gw/balancer"
	"gw/edge/a2a"
	"gw/edge/authn"
	"gw/edge/mcp"
	"gw/edge/passthrough"
	"gw/limiter"
)

// Proxy serves the caller-facing endpoints from the active snapshot.
type Proxy struct {
	Holder *snapshot.Holder
	RealIP RealIP
	Log    *AccessLog // nil disables the access log
	Logger *slog.Logger
	Usage  *UsageStream // nil disables usage events
	// Limiter enforces rate_limit and rate_limit_policies; nil disables limits.
	Limiter *limiter.Limiter
	// Health excludes models whose background checks fail; nil: no probes.
	Health *Health
	// MaxResponseBytes is the upstream client's cap on a buffered answer
	// (upstream.max_response_bytes), named in the error a larger one gets.
	MaxResponseBytes int64
	// Realtime holds the /v1/realtime session settings (realtime.go).
	Realtime RealtimeOptions
	// Cache holds the response cache's stores; nil disables caching
	// (cache_stage.go).
	Cache *Caches
	// MaxUploadBytes bounds a multipart upload (server.max_upload_bytes,
	// upload.go); 0: edge/multipart's default.
	MaxUploadBytes int64
	// A2A serves /a2a and Passthrough the passthrough routes (agents.go); nil: 501 and 404.
	A2A         *a2a.Handler
	Passthrough *passthrough.Handler
	// MCP serves /mcp, /mcp/{server} and the OAuth protected-resource
	// metadata (edge/mcp); nil: those paths answer 501.
	MCP *mcp.Handler
}

var (
	pathChat      = "/v1/chat/completions"
	pathResponses = "/v1/responses"
	pathMessages  = "/v1/messages"
	pathCount     = "/v1/messages/count_tokens"
	pathModels    = "/v1/models"
)

// notBuilt lists caller paths of the spec that this build does not serve yet;
// they answer 501 rather than 404 so SDKs see a clear capability error.
var notBuilt = map[string]bool{
	"/v1/messages": true, "/v1/messages/count_tokens": true,
	"/v1/responses": true,
}

// Handle serves ctx when its path is a proxy endpoint and reports whether it did.
func (p *Proxy) Handle(ctx *fasthttp.RequestCtx) bool {
	path := ctx.Path()
	switch {
	case string(path) == pathChat:
		if !ctx.IsPost() {
			methodNotAllowed(ctx, "POST")
			return true
		}
		p.serveModel(ctx, surfChat)
	case string(path) == pathMessages || string(path) == pathCount:
		if !ctx.IsPost() {
			methodNotAllowed(ctx, "POST")
			return true
		}
		if len(path) == len(pathCount) {
			p.serveModel(ctx, surfCount)
		} else {
			p.serveModel(ctx, surfMessages)
		}
	case string(path) == pathResponses:
		if !ctx.IsPost() {
			methodNotAllowed(ctx, "POST")
			return true
		}
		p.serveModel(ctx, surfResponses)
	case string(path) == pathEmbeddings || string(path) == pathCompletions || string(path) == pathRerank || string(path) == pathImages ||
		string(path) == pathSpeech:
		if !ctx.IsPost() {
			methodNotAllowed(ctx, "POST")
			return true
		}
		switch len(path) {
		case len(pathEmbeddings):
			p.serveModel(ctx, surfEmbeddings)
		case len(pathCompletions):
			p.serveModel(ctx, surfCompletions)
		case len(pathImages):
			p.serveModel(ctx, surfImages)
		case len(pathSpeech):
			p.serveModel(ctx, surfSpeech)
		default:
			p.serveModel(ctx, surfRerank)
		}
	case string(path) == pathVideos || (len(path) > len(pathVideos) && string(path[:len(pathVideos)+1]) == pathVideos+"/"):
		switch {
		case len(path) == len(pathVideos) && ctx.IsPost():
			p.serveModel(ctx, surfVideos)
		case ctx.IsGet() || ctx.IsDelete():
			p.serveVideoTask(ctx) // videos.go
		case ctx.IsPost(): // POST /v1/videos/{id}/remix
			WriteError(ctx, fasthttp.StatusNotImplemented, "invalid_request_error", "not_implemented",
				"gw does not serve video remixes in this build")
		default:
			methodNotAllowed(ctx, "GET, POST, DELETE")
		}
	case string(path) == pathModels || (len(path) > len(pathModels)+1 && string(path[:len(pathModels)+1]) == pathModels+"/"):
		if !ctx.IsGet() {
			methodNotAllowed(ctx, "GET")
			return true
		}
		snap := p.Holder.Load()
		c, fail := authn.Authenticate(&ctx.Request.Header, snap, time.Now())
		if fail != nil {
			WriteError(ctx, fasthttp.StatusUnauthorized, "invalid_request_error", fail.Code, fail.Message)
			return true
		}
		if len(path) == len(pathModels) {
			serveModels(ctx, snap, c)
		} else {
			serveModel(ctx, snap, c, string(path[len(pathModels)+1:]))
		}
	case string(path) == pathTranscriptions:
		p.serveUpload(ctx, surfTranscriptions) // upload.go
	case string(path) == pathTranslations:
		p.serveUpload(ctx, surfTranslations)
	case string(path) == pathImageEdits:
		p.serveUpload(ctx, surfImageEdits)
	case string(path) == pathRealtime:
		p.serveRealtime(ctx)
	case p.serveAgents(ctx, path): // pipeline.go: /a2a, passthrough routes
	case p.MCP != nil && (string(path) == "/mcp" || len(path) > 5 && string(path[:5]) == "/mcp/"):
		p.MCP.Serve(ctx, string(path[min(len(path), 5):])) // edge/mcp
	case p.MCP != nil && mcp.IsMetadataPath(string(path)):
		p.MCP.ServeMetadata(ctx)
	case notBuilt[string(path)]:
		WriteError(ctx, fasthttp.StatusNotImplemented, "invalid_request_error", "not_implemented",
			"gw does not serve "+string(path)+" in this build")
	default:
		return false
	}
	return true
}

func methodNotAllowed(ctx *fasthttp.RequestCtx, allow string) {
	WriteError(ctx, fasthttp.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "use "+allow)
	ctx.Response.Header.Set("Allow", allow)
}

// call is the per-request state of one proxied call. Pooled.
type call struct {
	start       time.Time
	upstreamDur time.Duration // time spent waiting on the upstream
	snap        *snapshot.Snapshot
	caller      *snapshot.Caller
	plan        *snapshot.Plan // the alias the caller asked for
	target      *snapshot.Plan // the direct model that answered last
	cr          chatRequest
	body        []byte // the caller's body as received
	effortBuf   []byte // body with the target's effort_mapping applied
	in          adapters.ChatInput
	status      int
	errClass    string
	usage       adapters.Usage
	haveUsage   bool
	respBytes   int
	attempts    int
	ttfb        time.Duration // downstream: start → first byte to the caller
	upTTFT      time.Duration // upstream: request sent → first content from the upstream
	stream      bool
	committed   bool       // dispatch committed a stream: it finishes c (see commit)
	ip          netip.Addr // the client address (RealIP), for CIDRs and hashing
	ipOK        bool
	limited     bool                // a reservation was charged
	res         limiter.Reservation // request and token windows of this request
	keySlot     limiter.Slot        // caller key concurrency
	modelSlot   limiter.Slot        // model concurrency
	hdrBuf      []byte              // x-ratelimit-* header values
	breq        balancer.Request    // routing: tags, hash key, skipped targets
	anyway      []int               // routing: try_anyway order (scratch)
	ipBuf       []byte              // hash_on client_ip (scratch)
	idBuf       []byte              // hash_on api_key (scratch)
	surf        *surface            // the caller's wire format
	convBuf     []byte              // the caller's body converted to chat completions
	origBody    []byte              // the caller's body as received (converted surfaces)
	native      bool                // this attempt sends the caller's format upstream unchanged
	convErr     string              // why the caller's body has no chat form (native targets only)
	busy        *balancer.State     // streaming target counted in flight
	failures    [maxRecordedFailures]failedAttempt
	nFailures   int
	g           guardState   // guardrails (input and output policy)
	up          *uploadState // multipart uploads (upload.go)
	noUsage     bool         // video task calls: metrics and access log, no usage record
	semText     []byte       // semantic router: the latest user message (scratch)
	semBatch    [1][]byte    // semantic router: the texts of its embedding call

	// Ensemble calls (ensemble.go). route is the plan whose attempts
	// dispatch walks when it is not c.plan (the judge of an ensemble
	// alias: c.plan still names the answer); deadline bounds every
	// attempt (ensemble.timeout_ms); chatOnly keeps gw's own chat body
	// from going upstream natively; addUsage and addCost are the members'
	// tokens and cost, added to the final record and the token limits.
	route     *snapshot.Plan
	memberFs  int // failures[:memberFs] are the members' (never the final record)
	deadline  time.Time
	chatOnly  bool
	addUsage  adapters.Usage
	addCost   float64
	cache     cacheCall // the response cache stage (cache_stage.go)
	credFail  bool      // buildRequest failed for want of the provider credential
	answerBuf []byte    // an endpoint answer converted from the upstream's format
}

var callPool = sync.Pool{New: func() any { return new(call) }}

func acquireCall() *call { return callPool.Get().(*call) }

// releaseCall returns c to the pool; scratch buffers are kept.
func releaseCall(c *call) {
	c.dropBusy()
	c.res.Reset()
	c.keySlot.Release()
	c.modelSlot.Release()
	eb, hb, cb := c.effortBuf[:0], c.hdrBuf[:0], c.convBuf[:0]
	c.start, c.upstreamDur, c.snap, c.caller, c.plan, c.target = time.Time{}, 0, nil, nil, nil, nil
	c.cr = chatRequest{}
	c.body, c.in = nil, adapters.ChatInput{}
	c.status, c.errClass, c.usage, c.haveUsage, c.respBytes, c.attempts = 0, "", adapters.Usage{}, false, 0, 0
	c.ttfb, c.upTTFT, c.stream, c.limited, c.nFailures, c.native = 0, 0, false, false, 0, false
	c.committed, c.ip, c.ipOK, c.noUsage, c.credFail = false, netip.Addr{}, false, false, false
	c.route, c.memberFs, c.deadline, c.chatOnly, c.addUsage, c.addCost = nil, 0, time.Time{}, false, adapters.Usage{}, 0
	c.effortBuf, c.hdrBuf, c.convBuf, c.origBody, c.surf, c.convErr = eb, hb, cb, nil, nil, ""
	c.semText = c.semText[:0]
	if cap(c.answerBuf) > 1<<20 {
		c.answerBuf = nil // a large embeddings answer is not kept pooled
	}
	c.breq.Reset()
	c.g.reset()
	c.cache.reset()
	if c.up != nil {
		releaseUpload(c.up)
		c.up = nil
	}
	callPool.Put(c)
}
