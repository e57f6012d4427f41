package mcp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fasthttp"

	"gw/adapters/upstream"
	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/usage"
	"gw/limiter"
	"gw/sse/rawjson"
)

// Handler serves /mcp and /mcp/{server}. Its zero value is not usable: set
// Holder, then call Serve; Close ends the idle-session sweeper.
type Handler struct {
	Holder *snapshot.Holder
	// ClientIP resolves the client address by the real-IP rules (anonymous
	// access, never untrusted headers).
	ClientIP func(*fasthttp.RequestCtx) (netip.Addr, bool)
	// Limiter enforces mcp_rate_limits and the key's rate_limit on
	// tools/call; nil disables limits.
	Limiter *limiter.Limiter
	// Usage receives one record per tools/call; nil disables usage events.
	Usage *usage.Pipeline
	// Transport carries upstream requests; nil: http.DefaultTransport.
	Transport http.RoundTripper
	// Pool is where the lean path of tools/call (lean.go) takes its
	// connections from when Transport allows it; nil: a pool of the
	// handler's own with default options (what gw serve uses: the
	// providers' pool would add upstream.tls, which the SDK path that
	// carries the rest of the session does not honour).
	Pool   *upstream.Pool
	Logger *slog.Logger
	// OpenAPI holds the documents of type openapi servers (loaded at
	// config apply by its Prepare); nil: documents load on first use.
	OpenAPI *OpenAPIDocs
	// SessionIdle closes caller sessions (and their upstream sessions)
	// unused this long; 0: 30 minutes.
	SessionIdle time.Duration

	sess     sessions
	subCaps  sync.Map      // server name → subCap: whether it offers resources.subscribe
	leans    leanClients   // the lean path's HTTP clients (lean.go)
	callSeq  atomic.Uint64 // the lean path's request IDs: "gw-call-<n>"
	noLean   bool          // tests and benchmarks: every tools/call takes the SDK path
	once     sync.Once
	stop     chan struct{}
	stopOnce sync.Once
}

const defaultSessionIdle = 30 * time.Minute

func (h *Handler) start() {
	h.once.Do(func() {
		h.sess.idle = h.SessionIdle
		if h.sess.idle <= 0 {
			h.sess.idle = defaultSessionIdle
		}
		h.stop = make(chan struct{})
		if h.OpenAPI == nil {
			h.OpenAPI = &OpenAPIDocs{Transport: h.Transport, Holder: h.Holder, Logger: h.Logger}
		}
		go func() {
			t := time.NewTicker(min(h.sess.idle/4, time.Minute))
			defer t.Stop()
			for {
				select {
				case <-h.stop:
					return
				case now := <-t.C:
					h.sess.sweep(now)
				}
			}
		}()
	})
}

// Close stops the sweeper and closes every session.
func (h *Handler) Close() {
	h.start()
	h.stopOnce.Do(func() { close(h.stop) })
	h.sess.sweep(time.Now().Add(100 * 365 * 24 * time.Hour))
	h.leans.close()
}

// EndStreams ends the callers' standalone event streams, which never end
// on their own, so a graceful shutdown can finish; streams answering a
// POST end with their answer.
func (h *Handler) EndStreams() {
	h.sess.mu.Lock()
	all := make([]*session, 0, len(h.sess.byID))
	for _, s := range h.sess.byID {
		all = append(all, s)
	}
	h.sess.mu.Unlock()
	for _, s := range all {
		s.hub.end()
	}
}

func (h *Handler) transport() http.RoundTripper {
	if h.Transport != nil {
		return h.Transport
	}
	return http.DefaultTransport
}

const hdrSession = "Mcp-Session-Id"

// supportedVersions are the protocol versions gw speaks to callers, newest
// first; each allows JSON and SSE answers and the standalone GET stream.
var supportedVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// call is one caller request being served.
type call struct {
	h        *Handler
	ctx      *fasthttp.RequestCtx
	resp     *fasthttp.Response // where the answer goes: ctx's
	snap     *snapshot.Snapshot
	p        principal
	srv      *resources.MCPServer // /mcp/{server}; nil on /mcp
	sess     *session
	req      *jsonrpc.Request
	st       *outStream // the POST's stream of server messages; nil when answered with JSON only
	reqBytes int        // the request body's length
	start    time.Time
	status   int
}

// Serve answers one request of /mcp (server == "") or /mcp/{server}.
func (h *Handler) Serve(ctx *fasthttp.RequestCtx, server string) {
	h.start()
	c := &call{h: h, ctx: ctx, resp: &ctx.Response, snap: h.Holder.Load(), start: time.Now()}
	if server != "" {
		c.srv = findServer(c.snap, server)
		if c.srv == nil {
			httpError(ctx, fasthttp.StatusNotFound, "unknown MCP server \""+server+"\"")
			return
		}
	}
	switch {
	case ctx.IsPost():
	case ctx.IsDelete():
		if !h.authenticate(c) {
			return
		}
		if s := h.sess.get(string(ctx.Request.Header.Peek(hdrSession))); s != nil && s.keyID == c.p.caller.Key.ID && s.server == server {
			h.sess.remove(s.id)
			s.close()
		}
		ctx.SetStatusCode(fasthttp.StatusNoContent)
		return
	case ctx.IsGet():
		h.serveGet(c)
		return
	default:
		ctx.Response.Header.Set("Allow", "GET, POST, DELETE")
		httpError(ctx, fasthttp.StatusMethodNotAllowed, "use POST (JSON-RPC), GET (the session's event stream) or DELETE (end the session)")
		return
	}
	if !h.authenticate(c) {
		return
	}
	if c.srv != nil && !c.p.reaches(c.srv) {
		httpError(ctx, fasthttp.StatusNotFound, "unknown MCP server \""+server+"\"")
		return
	}
	c.reqBytes = len(ctx.PostBody())
	msg, err := DecodeMessage(ctx.PostBody())
	if err != nil {
		writeResponse(c.resp, fasthttp.StatusBadRequest, &jsonrpc.Response{Error: &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "cannot read the JSON-RPC message: " + err.Error()}})
		return
	}
	req, isReq := msg.(*jsonrpc.Request)
	if !isReq {
		// The caller's answer to a server request gw relayed.
		if !h.session(c) {
			return
		}
		c.sess.hub.deliver(msg.(*jsonrpc.Response))
		ctx.SetStatusCode(fasthttp.StatusAccepted)
		return
	}
	if !req.ID.IsValid() {
		h.notification(c, req)
		return
	}
	c.req = req
	switch req.Method {
	case "initialize":
		h.initialize(c)
		return
	case "ping":
		c.result(struct{}{})
		return
	case "server/discover":
		// The stateless discovery of newer protocol versions: not served,
		// so clients fall back to initialize.
		c.rpcError(jsonrpc.CodeMethodNotFound, "method server/discover is not served by gw: use initialize")
		return
	}
	if !h.session(c) {
		return
	}
	if (c.srv == nil || c.srv.Type == resources.MCPTypeMCP) && upstreamMethod(req.Method) &&
		bytes.Contains(ctx.Request.Header.Peek(fasthttp.HeaderAccept), strEventStream) {
		h.serveStreamed(c)
		return
	}
	h.dispatch(c)
}

var strEventStream = []byte("text/event-stream")

// upstreamMethod reports whether a method goes to upstream MCP servers,
// which may send messages for the caller while they serve it.
func upstreamMethod(m string) bool {
	switch m {
	case "tools/call", "tools/list", "prompts/list", "prompts/get", "resources/list", "resources/templates/list", "resources/read",
		"resources/subscribe", "resources/unsubscribe", "logging/setLevel":
		return true
	}
	return false
}

// dispatch serves a method of an established session.
func (h *Handler) dispatch(c *call) {
	// Each method bounds its upstream work by the server's timeout; the
	// caller's connection is not watched (fasthttp has no per-request
	// cancellation, and a broken SSE answer can be resumed).
	if c.req.Method == "tools/call" {
		// Registers its own deadline context for cancellation: one
		// context per call on the hot path, not two.
		h.toolsCall(context.Background(), c)
		return
	}
	// The caller may cancel the request (notifications/cancelled): its
	// context ends, and the upstream call with it.
	rctx, cancel := context.WithCancel(context.Background())
	c.sess.track(c.req.ID, cancel)
	defer func() {
		c.sess.untrack(c.req.ID)
		cancel()
	}()
	switch c.req.Method {
	case "tools/list":
		h.toolsList(rctx, c)
	case "prompts/list":
		h.promptsList(rctx, c)
	case "prompts/get":
		h.promptsGet(rctx, c)
	case "resources/list":
		h.resourcesList(rctx, c)
	case "resources/templates/list":
		h.templatesList(rctx, c)
	case "resources/read":
		h.resourcesRead(rctx, c)
	case "resources/subscribe":
		h.subscribe(rctx, c, false)
	case "resources/unsubscribe":
		h.subscribe(rctx, c, true)
	case "logging/setLevel":
		h.setLevel(rctx, c)
	default:
		c.rpcError(jsonrpc.CodeMethodNotFound, "method "+c.req.Method+" is not served by gw")
	}
}

// serveStreamed serves a request whose upstream may send messages for the
// caller meanwhile (the caller accepts SSE). The method runs inline and
// answers with JSON, unless a server message for it comes first: then the
// answer becomes text/event-stream at once (the related messages, then the
// answer), written straight to the connection by a goroutine of its own,
// because the handler is still busy with the method and fasthttp sends a
// response only once the handler returns. That answer is framed by
// closing the connection ("Connection: close"), and fasthttp is told to
// write nothing (hijack without a response). The caller whose connection
// breaks resumes the stream from the replay buffer (GET, Last-Event-ID).
//
// A caller that pipelines a request behind an unflushed answer on the
// same connection would see this answer first; MCP clients do not
// pipeline (each POST waits for its answer's headers).
func (h *Handler) serveStreamed(c *call) {
	ctx := c.ctx
	conn := ctx.Conn()
	if conn == nil {
		h.dispatch(c) // no connection to write to (an in-process ctx): JSON only
		return
	}
	hub := c.sess.hub
	server := ""
	if c.srv != nil {
		server = c.srv.Name
	}
	sess := c.sess
	written := make(chan struct{})
	var st *outStream
	st = hub.open(server, progressToken(c.req.Params), func() {
		defer close(written)
		conn.SetWriteDeadline(time.Time{})
		w := bufio.NewWriterSize(conn, 4<<10)
		w.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n")
		hub.write(w, st, 0, sess.touch)
	})
	c.st = st
	h.dispatch(c)
	hub.emit(st, ctx.Response.Body(), true)
	<-st.decided // closed by now: by a server message, the answer, or the session's end
	if st.mode != modeSSE {
		return // answered with JSON: the response is in ctx
	}
	<-written
	ctx.Response.SetStatusCode(fasthttp.StatusOK) // what the access log sees
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(net.Conn) {}) // fasthttp then closes the connection
}

// route names the server a request of /mcp went to, once known, so the
// server's messages find the request's stream.
func (c *call) route(s *resources.MCPServer) {
	if c.st != nil && c.srv == nil {
		c.sess.hub.mu.Lock()
		c.st.server = s.Name
		c.sess.hub.mu.Unlock()
	}
}

var (
	metaKey     = []string{"_meta"}
	progressKey = []string{"progressToken"}
)

// progressToken is the caller's _meta.progressToken in params (raw JSON),
// nil for none.
func progressToken(params []byte) []byte {
	if !bytes.Contains(params, progressKeyBytes) {
		return nil
	}
	var v [1][]byte
	if rawjson.ScanTop(params, metaKey, v[:]) != nil || rawjson.KindOf(v[0]) != rawjson.Object {
		return nil
	}
	meta := v[0]
	if rawjson.ScanTop(meta, progressKey, v[:]) != nil {
		return nil
	}
	switch rawjson.KindOf(v[0]) {
	case rawjson.String, rawjson.Number:
		return canonicalToken(v[0])
	}
	return nil
}

var progressKeyBytes = []byte("progressToken")

// canonicalToken spells a token the way gw spells the one an upstream
// sends back (encoding/json of the decoded value), so the two compare.
func canonicalToken(raw []byte) []byte {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// serveGet opens the session's standalone SSE stream, or with
// Last-Event-ID resumes the stream that event belongs to after it.
func (h *Handler) serveGet(c *call) {
	ctx := c.ctx
	if !h.authenticate(c) {
		return
	}
	if c.srv != nil && !c.p.reaches(c.srv) {
		httpError(ctx, fasthttp.StatusNotFound, "unknown MCP server \""+c.srv.Name+"\"")
		return
	}
	if !h.session(c) {
		return
	}
	if !bytes.Contains(ctx.Request.Header.Peek(fasthttp.HeaderAccept), strEventStream) {
		httpError(ctx, fasthttp.StatusNotAcceptable, "GET opens an event stream: accept text/event-stream")
		return
	}
	hub := c.sess.hub
	st := hub.streams0()
	var from uint64
	if last := ctx.Request.Header.Peek("Last-Event-ID"); len(last) > 0 {
		sid, seq, ok := ParseEventID(last)
		if !ok {
			httpError(ctx, fasthttp.StatusBadRequest, "malformed Last-Event-ID")
			return
		}
		var err error
		if st, err = hub.resume(sid, seq); err != nil {
			status := fasthttp.StatusBadRequest
			if err == errReplayGone {
				status = fasthttp.StatusGone
			}
			httpError(ctx, status, "cannot resume the stream: "+err.Error())
			return
		}
		from = seq
	} else {
		from = hub.startAt(st)
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("text/event-stream")
	ctx.Response.Header.Set("Cache-Control", "no-cache")
	sess := c.sess
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) { hub.write(w, st, from, sess.touch) })
}

func findServer(snap *snapshot.Snapshot, name string) *resources.MCPServer {
	for _, s := range snap.Resources.MCPServers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// servers are the MCP servers the call may reach, in file order.
func (c *call) servers() []*resources.MCPServer {
	if c.srv != nil {
		return []*resources.MCPServer{c.srv}
	}
	var out []*resources.MCPServer
	for _, s := range c.snap.Resources.MCPServers {
		if c.p.reaches(s) {
			out = append(out, s)
		}
	}
	return out
}

// name is how the caller sees name of server s: prefixed on /mcp.
func (c *call) name(s *resources.MCPServer, name string) string {
	if c.srv != nil {
		return name
	}
	return Join(s.Name, name)
}

// owner resolves a caller-facing name to its server and upstream name.
func (c *call) owner(name string) (*resources.MCPServer, string, bool) {
	if c.srv != nil {
		return c.srv, name, name != ""
	}
	return Split(name, c.servers())
}

func (h *Handler) initialize(c *call) {
	var p struct {
		ProtocolVersion string     `json:"protocolVersion"`
		Capabilities    callerCaps `json:"capabilities"`
	}
	if len(c.req.Params) > 0 {
		if err := json.Unmarshal(c.req.Params, &p); err != nil {
			c.rpcError(jsonrpc.CodeInvalidParams, "cannot read initialize params: "+err.Error())
			return
		}
	}
	version := supportedVersions[0]
	for _, v := range supportedVersions {
		if v == p.ProtocolVersion {
			version = v
		}
	}
	s := &session{id: newSessionID(), keyID: c.p.caller.Key.ID, up: map[string]*upConn{}, lastUsed: time.Now(), caps: p.Capabilities, hub: newHub()}
	res := &sdk.InitializeResult{
		ProtocolVersion: version,
		ServerInfo:      &sdk.Implementation{Name: "gw", Title: "gw MCP gateway", Version: "1"},
		Capabilities: &sdk.ServerCapabilities{
			Tools:     &sdk.ToolCapabilities{ListChanged: true},
			Prompts:   &sdk.PromptCapabilities{ListChanged: true},
			Resources: &sdk.ResourceCapabilities{ListChanged: true},
			Logging:   &sdk.LoggingCapabilities{},
		},
	}
	if c.srv != nil && c.srv.Type == resources.MCPTypeOpenAPI {
		// An OpenAPI document has tools only.
		s.server = c.srv.Name
		spec, _, err := h.OpenAPI.get(context.Background(), c.srv)
		if err != nil {
			c.upstreamFailed(err)
			return
		}
		res.Capabilities = &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}}
		if spec.Title != "" {
			res.ServerInfo = &sdk.Implementation{Name: c.srv.Name, Title: spec.Title, Version: "1"}
		}
	} else if c.srv != nil {
		// One server: open its upstream session now and present its
		// identity, capabilities and instructions.
		s.server = c.srv.Name
		cs, err := s.upstream(context.Background(), h.transport(), c.srv)
		if err != nil {
			c.upstreamFailed(err)
			return
		}
		if ir := cs.InitializeResult(); ir != nil {
			res.ServerInfo, res.Instructions = ir.ServerInfo, ir.Instructions
			if ir.Capabilities != nil {
				res.Capabilities = &sdk.ServerCapabilities{Tools: ir.Capabilities.Tools, Prompts: ir.Capabilities.Prompts, Resources: ir.Capabilities.Resources, Logging: ir.Capabilities.Logging}
				if r := res.Capabilities.Resources; r != nil {
					res.Capabilities.Resources = &sdk.ResourceCapabilities{ListChanged: r.ListChanged, Subscribe: r.Subscribe}
				}
			}
		}
	}
	if c.srv == nil && h.anySubscribes(c, s) {
		res.Capabilities.Resources.Subscribe = true
	}
	h.sess.add(s)
	c.ctx.Response.Header.Set(hdrSession, s.id)
	c.result(res)
}

// session finds the caller's session: 400 without the header, 404 for an
// unknown one or one of another principal (the caller then starts anew).
func (h *Handler) session(c *call) bool {
	id := c.ctx.Request.Header.Peek(hdrSession)
	if len(id) == 0 {
		httpError(c.ctx, fasthttp.StatusBadRequest, "Mcp-Session-Id is required: send initialize first")
		return false
	}
	s := h.sess.get(string(id))
	server := ""
	if c.srv != nil {
		server = c.srv.Name
	}
	if s == nil || s.keyID != c.p.caller.Key.ID || s.server != server {
		httpError(c.ctx, fasthttp.StatusNotFound, "unknown or expired MCP session")
		return false
	}
	c.sess = s
	return true
}

func newSessionID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// upstream returns the session's upstream session to s, bounded by s's timeout.
func (c *call) upstream(ctx context.Context, s *resources.MCPServer) (*sdk.ClientSession, error) {
	return c.sess.upstream(ctx, c.h.transport(), s)
}

// result answers the request with v. The response frame is written
// around v's encoding directly (one encode, not two).
func (c *call) result(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		c.rpcError(jsonrpc.CodeInternalError, "cannot encode the result: "+err.Error())
		return
	}
	c.endResult(append(c.resultHead(len(b)), b...))
}

// resultHead starts a JSON-RPC result answer in the response body's own
// buffer (SwapBody hands it over and takes it back: no copy, no allocation
// once grown), with room for n more bytes: the caller appends the result
// and hands the buffer to endResult.
func (c *call) resultHead(n int) []byte {
	c.status = fasthttp.StatusOK
	r := c.resp
	r.SetStatusCode(fasthttp.StatusOK)
	r.Header.SetContentType("application/json")
	b := slices.Grow(r.SwapBody(nil)[:0], n+64)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = appendID(b, c.req.ID)
	return append(b, `,"result":`...)
}

// endResult closes the answer resultHead started.
func (c *call) endResult(b []byte) { c.resp.SwapBody(append(b, '}')) }

// appendID appends a request ID as JSON (a request always has one).
func appendID(b []byte, id jsonrpc.ID) []byte {
	switch v := id.Raw().(type) {
	case int64:
		return strconv.AppendInt(b, v, 10)
	case string:
		q, _ := json.Marshal(v)
		return append(b, q...)
	}
	return append(b, "null"...)
}

// rpcError answers the request with a JSON-RPC error on HTTP 200.
func (c *call) rpcError(code int64, msg string) {
	c.status = fasthttp.StatusOK
	writeResponse(c.resp, fasthttp.StatusOK, &jsonrpc.Response{ID: c.req.ID, Error: &jsonrpc.Error{Code: code, Message: msg}})
}

// open routes the call to s and opens its upstream session under s's
// timeout. A nil session means the call was answered with the failure;
// cancel ends the timeout's context either way.
func (c *call) open(ctx context.Context, s *resources.MCPServer) (context.Context, context.CancelFunc, *sdk.ClientSession) {
	c.route(s)
	ctx, cancel := context.WithTimeout(ctx, s.Timeout())
	cs, err := c.upstream(ctx, s)
	if err != nil {
		c.upstreamFailed(err)
		return ctx, cancel, nil
	}
	return ctx, cancel, cs
}

// upstreamFailed answers an upstream failure: the upstream's own JSON-RPC
// error is relayed as it is (HTTP 200); a transport failure or an answer
// that cannot be read is 502.
func (c *call) upstreamFailed(err error) {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		c.status = fasthttp.StatusOK
		writeResponse(c.resp, fasthttp.StatusOK, &jsonrpc.Response{ID: c.req.ID, Error: we})
		return
	}
	if c.h.Logger != nil {
		c.h.Logger.Warn("mcp upstream failed", "method", c.req.Method, "error", err.Error())
	}
	c.status = fasthttp.StatusBadGateway
	writeResponse(c.resp, fasthttp.StatusBadGateway, &jsonrpc.Response{ID: c.req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the upstream MCP server failed: " + err.Error()}})
}

func writeResponse(resp *fasthttp.Response, status int, r *jsonrpc.Response) {
	b, err := jsonrpc.EncodeMessage(r)
	if err != nil {
		status = fasthttp.StatusInternalServerError
		b, _ = jsonrpc.EncodeMessage(&jsonrpc.Response{Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cannot encode the JSON-RPC answer"}})
	}
	resp.SetStatusCode(status)
	resp.Header.SetContentType("application/json")
	resp.SetBody(b)
}

// httpError answers a transport-level failure: a JSON-RPC error without id.
func httpError(ctx *fasthttp.RequestCtx, status int, msg string) {
	code := int64(jsonrpc.CodeInvalidRequest)
	if status >= 500 {
		code = jsonrpc.CodeInternalError
	}
	b, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{Error: &jsonrpc.Error{Code: code, Message: msg}})
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}
