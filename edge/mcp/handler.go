package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fasthttp"

	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/usage"
	"gw/limiter"
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
	Logger    *slog.Logger
	// OpenAPI holds the documents of type openapi servers (loaded at
	// config apply by its Prepare); nil: documents load on first use.
	OpenAPI *OpenAPIDocs
	// SessionIdle closes caller sessions (and their upstream sessions)
	// unused this long; 0: 30 minutes.
	SessionIdle time.Duration

	sess     sessions
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
}

func (h *Handler) transport() http.RoundTripper {
	if h.Transport != nil {
		return h.Transport
	}
	return http.DefaultTransport
}

const hdrSession = "Mcp-Session-Id"

// supportedVersions are the protocol versions gw speaks to callers, newest
// first. gw answers every request with one JSON body (the JSON answer form
// of Streamable HTTP), which each of them allows.
var supportedVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// call is one caller request being served.
type call struct {
	h      *Handler
	ctx    *fasthttp.RequestCtx
	snap   *snapshot.Snapshot
	p      principal
	srv    *resources.MCPServer // /mcp/{server}; nil on /mcp
	sess   *session
	req    *jsonrpc.Request
	start  time.Time
	status int
}

// Serve answers one request of /mcp (server == "") or /mcp/{server}.
func (h *Handler) Serve(ctx *fasthttp.RequestCtx, server string) {
	h.start()
	c := &call{h: h, ctx: ctx, snap: h.Holder.Load(), start: time.Now()}
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
	default:
		// No standalone SSE stream: gw does not relay server-initiated
		// messages, which Streamable HTTP allows with 405 on GET.
		ctx.Response.Header.Set("Allow", "POST, DELETE")
		httpError(ctx, fasthttp.StatusMethodNotAllowed, "use POST (JSON-RPC) or DELETE (end the session)")
		return
	}
	if !h.authenticate(c) {
		return
	}
	if c.srv != nil && !c.p.reaches(c.srv) {
		httpError(ctx, fasthttp.StatusNotFound, "unknown MCP server \""+server+"\"")
		return
	}
	msg, err := DecodeMessage(ctx.PostBody())
	if err != nil {
		writeResponse(ctx, fasthttp.StatusBadRequest, &jsonrpc.Response{Error: &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "cannot read the JSON-RPC message: " + err.Error()}})
		return
	}
	req, isReq := msg.(*jsonrpc.Request)
	if !isReq || !req.ID.IsValid() {
		// A notification, or the caller's answer to a server request (gw
		// sends none): accepted, nothing to relay.
		ctx.SetStatusCode(fasthttp.StatusAccepted)
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
	// Each method bounds its upstream work by the server's timeout; the
	// caller's connection is not watched (fasthttp has no per-request
	// cancellation).
	rctx := context.Background()
	switch req.Method {
	case "tools/list":
		h.toolsList(rctx, c)
	case "tools/call":
		h.toolsCall(rctx, c)
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
	default:
		c.rpcError(jsonrpc.CodeMethodNotFound, "method "+req.Method+" is not served by gw")
	}
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
		ProtocolVersion string `json:"protocolVersion"`
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
	s := &session{id: newSessionID(), keyID: c.p.caller.Key.ID, up: map[string]*upConn{}, lastUsed: time.Now()}
	res := &sdk.InitializeResult{
		ProtocolVersion: version,
		ServerInfo:      &sdk.Implementation{Name: "gw", Title: "gw MCP gateway", Version: "1"},
		Capabilities: &sdk.ServerCapabilities{
			Tools:     &sdk.ToolCapabilities{},
			Prompts:   &sdk.PromptCapabilities{},
			Resources: &sdk.ResourceCapabilities{},
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
				res.Capabilities = &sdk.ServerCapabilities{Tools: ir.Capabilities.Tools, Prompts: ir.Capabilities.Prompts, Resources: ir.Capabilities.Resources}
				if res.Capabilities.Resources != nil {
					res.Capabilities.Resources = &sdk.ResourceCapabilities{ListChanged: ir.Capabilities.Resources.ListChanged}
				}
			}
		}
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
	c.status = fasthttp.StatusOK
	c.ctx.SetStatusCode(fasthttp.StatusOK)
	c.ctx.SetContentType("application/json")
	r := &c.ctx.Response
	r.ResetBody()
	r.AppendBodyString(`{"jsonrpc":"2.0","id":`)
	var idb [24]byte
	r.AppendBody(appendID(idb[:0], c.req.ID))
	r.AppendBodyString(`,"result":`)
	r.AppendBody(b)
	r.AppendBodyString("}")
}

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
	writeResponse(c.ctx, fasthttp.StatusOK, &jsonrpc.Response{ID: c.req.ID, Error: &jsonrpc.Error{Code: code, Message: msg}})
}

// upstreamFailed answers an upstream failure: the upstream's own JSON-RPC
// error is relayed as it is (HTTP 200); a transport failure or an answer
// that cannot be read is 502.
func (c *call) upstreamFailed(err error) {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		c.status = fasthttp.StatusOK
		writeResponse(c.ctx, fasthttp.StatusOK, &jsonrpc.Response{ID: c.req.ID, Error: we})
		return
	}
	if c.h.Logger != nil {
		c.h.Logger.Warn("mcp upstream failed", "method", c.req.Method, "error", err.Error())
	}
	c.status = fasthttp.StatusBadGateway
	writeResponse(c.ctx, fasthttp.StatusBadGateway, &jsonrpc.Response{ID: c.req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the upstream MCP server failed: " + err.Error()}})
}

func writeResponse(ctx *fasthttp.RequestCtx, status int, r *jsonrpc.Response) {
	b, err := jsonrpc.EncodeMessage(r)
	if err != nil {
		httpError(ctx, fasthttp.StatusInternalServerError, "cannot encode the JSON-RPC answer")
		return
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
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
