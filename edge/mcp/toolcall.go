package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fasthttp"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/usage"
	"gw/limiter"
	"gw/sse/rawjson"
)

// Outcomes of a tool call (usage error_class, metric label).
const (
	outcomeOK          = "ok"
	outcomeToolError   = "tool_error" // the tool answered isError: true
	outcomeRPCError    = "upstream_rpc_error"
	outcomeUpstream    = "upstream_failed"
	outcomeLimited     = "rate_limited"
	outcomeBlocked     = "guardrail_blocked"
	outcomeUnavailable = "guardrail_unavailable"
	outcomeCancelled   = "cancelled" // the caller's notifications/cancelled
)

// Messages of in-band guardrail rejections; never the matched value.
const (
	msgBlockedArgs   = "The tool call was blocked by guardrail policy"
	msgBlockedResult = "The tool result was blocked by guardrail policy"
	msgUnavailable   = "A guardrail could not evaluate the content and fails closed"
)

// Scope of the limiter counters of mcp_rate_limits: one per server and key.
const scopeMCPPrefix = "mcp-"

// toolCall is the state of one tools/call.
type toolCall struct {
	srv      *resources.MCPServer
	tool     string
	outcome  string
	upDur    time.Duration
	g        guard.Exec
	gOn      bool
	setters  []func(string)
	reqBytes int
	// The lean path's answer (lean.go): the raw result, in buf.
	raw []byte
	buf *leanBuf
}

// release gives back the lean path's buffer once the answer is written.
func (tc *toolCall) release() {
	if tc.buf != nil {
		tc.raw = nil
		leanBufs.Put(tc.buf)
		tc.buf = nil
	}
}

func (h *Handler) toolsCall(ctx context.Context, c *call) {
	// Arguments stay raw until policy needs them (read in one pass; one
	// decode when needed, numbers kept as written).
	var name string
	var rawArgs, rawMeta []byte
	if err := readCallParams(c.req.Params, &name, &rawArgs, &rawMeta); err != nil {
		c.rpcError(jsonrpc.CodeInvalidParams, "cannot read tools/call params: "+err.Error())
		return
	}
	s, tool, ok := c.owner(name)
	if !ok || !c.p.toolAllowed(s, tool) {
		// Unknown and forbidden tools answer alike: no tool name leaks.
		c.rpcError(jsonrpc.CodeInvalidParams, "unknown tool \""+name+"\"")
		return
	}
	c.route(s)
	tc := &toolCall{srv: s, tool: tool, reqBytes: c.reqBytes}
	defer h.finishCall(c, tc)
	defer tc.release()

	// The arguments are decoded only when something reads them (input
	// guardrails, an OpenAPI call); otherwise they are relayed as sent.
	h.chain(c, tc)
	var args any // decoded; nil: relayed raw (rawArgs)
	if len(rawArgs) > 0 && string(rawArgs) != "null" {
		if (tc.gOn && len(tc.g.Chain.Input) > 0) || s.Type == resources.MCPTypeOpenAPI {
			if err := unmarshalNumbers(rawArgs, &args); err != nil {
				c.rpcError(jsonrpc.CodeInvalidParams, "cannot read tool arguments: "+err.Error())
				return
			}
		}
	} else {
		rawArgs = nil
	}
	release, ok := h.admit(c, tc)
	if !ok {
		return
	}
	defer release()

	// Guardrails on the arguments (input phase).
	if tc.gOn && len(tc.g.Chain.Input) > 0 && args != nil {
		tc.setters = tc.setters[:0]
		tc.walkArgs(&args, guard.RoleUser, guard.PartToolArguments)
		d, ok := tc.judge(ctx, c, guard.Input, name, tc.g.Chain.Input, msgBlockedArgs)
		if !ok {
			return
		}
		if d == guard.Pass && s.Type != resources.MCPTypeOpenAPI {
			args = nil // read, not changed: relayed as the caller sent them
		}
	}

	ctx, cancel := context.WithTimeout(ctx, s.Timeout())
	defer cancel()
	// The caller may cancel the call (notifications/cancelled): the
	// upstream call's context ends, and the SDK client (or, on the lean
	// path, gw itself) tells the server.
	c.sess.track(c.req.ID, cancel)
	defer c.sess.untrack(c.req.ID)
	var res *sdk.CallToolResult
	var err error
	if s.Type == resources.MCPTypeOpenAPI {
		res, err = h.openAPICall(ctx, c, tc, args)
	} else {
		res, err = h.upstreamCall(ctx, c, tc, args, rawArgs, rawMeta)
	}
	outGuard := tc.gOn && len(tc.g.Chain.Output) > 0
	if err == nil && tc.raw != nil {
		// The lean path's raw result: checked, and relayed as it is
		// unless a guardrail reads it.
		var isErr bool
		if res, isErr, err = readResult(tc.raw, outGuard); err == nil && !outGuard {
			tc.outcome = outcomeOK
			if isErr {
				tc.outcome = outcomeToolError
			}
			c.endResult(append(c.resultHead(len(tc.raw)), tc.raw...))
			return
		}
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			// The caller's notifications/cancelled: not an upstream
			// failure. The caller ignores the answer (the spec's rule).
			tc.outcome = outcomeCancelled
			c.rpcError(jsonrpc.CodeInternalError, "the request was cancelled by the caller")
			return
		}
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			tc.outcome = outcomeRPCError
		} else {
			tc.outcome = outcomeUpstream
		}
		c.upstreamFailed(err)
		return
	}

	// Guardrails on the result (output phase): every text content value
	// and every structuredContent value, each judged on its own.
	if outGuard {
		tc.g.Reset()
		h.chain(c, tc)
		tc.setters = tc.setters[:0]
		tc.resultTexts(res)
		if _, ok := tc.judge(ctx, c, guard.Output, name, tc.g.Chain.Output, msgBlockedResult); !ok {
			return
		}
	}
	tc.outcome = outcomeOK
	if res.IsError {
		tc.outcome = outcomeToolError
	}
	c.toolResult(res)
}

// judge runs one guardrail phase over the texts collected and applies its
// masks; false when it rejected the call (the rejection is answered).
func (tc *toolCall) judge(ctx context.Context, c *call, p guard.Phase, name string, stages []*guard.Stage, blocked string) (guard.Decision, bool) {
	d := tc.g.Judge(ctx, p, name, stages)
	switch d {
	case guard.Blocked:
		tc.outcome = outcomeBlocked
		c.result(rejection(blockMessage(&tc.g, blocked)))
		return d, false
	case guard.Unavailable:
		tc.outcome = outcomeUnavailable
		c.result(rejection(msgUnavailable))
		return d, false
	case guard.Masked:
		tc.applyMasks()
	}
	return d, true
}

var callParamKeys = []string{"name", "arguments", "_meta"}

// readCallParams reads tools/call params (validated JSON: DecodeMessage
// checked the whole message) without reflection: the arguments and _meta
// (an object or null) stay raw.
func readCallParams(params []byte, name *string, args, meta *[]byte) error {
	if rawjson.KindOf(params) != rawjson.Object {
		return errors.New("params must be an object")
	}
	var vals [3][]byte
	if err := rawjson.ScanTop(params, callParamKeys, vals[:]); err != nil {
		return err
	}
	switch rawjson.KindOf(vals[0]) {
	case rawjson.String:
		n, err := rawjson.AppendUnquote(nil, vals[0])
		if err != nil {
			return err
		}
		*name = string(n)
	case rawjson.Invalid, rawjson.Null:
	default:
		return errors.New("name must be a string")
	}
	*args = vals[1]
	switch rawjson.KindOf(vals[2]) {
	case rawjson.Object:
		*meta = vals[2]
	case rawjson.Invalid, rawjson.Null:
	default:
		return errors.New("_meta must be an object")
	}
	return nil
}

// upstreamCall relays the call to the server's upstream MCP session: on
// the lean path (lean.go; the raw result in tc.raw) when it can, else with
// the SDK's client.
func (h *Handler) upstreamCall(ctx context.Context, c *call, tc *toolCall, args any, rawArgs, rawMeta []byte) (*sdk.CallToolResult, error) {
	cs, err := c.upstream(ctx, tc.srv)
	if err != nil {
		return nil, err
	}
	if lc := h.lean(tc.srv); lc != nil && leanSession(cs) {
		up := time.Now()
		err := h.leanCall(ctx, c, tc, lc, cs, args, rawArgs, rawMeta)
		tc.upDur = time.Since(up)
		if !errors.Is(err, errLeanUnavailable) {
			return nil, err
		}
		leanFallbacks.Inc()
		if cs, err = c.upstream(ctx, tc.srv); err != nil { // a retry may have replaced it
			return nil, err
		}
	}
	p := &sdk.CallToolParams{Name: tc.tool, Arguments: args}
	if args == nil && rawArgs != nil {
		p.Arguments = json.RawMessage(rawArgs)
	}
	if rawMeta != nil {
		if err := json.Unmarshal(rawMeta, &p.Meta); err != nil {
			return nil, errors.New("cannot read _meta: " + err.Error())
		}
	}
	up := time.Now()
	res, err := cs.CallTool(ctx, p)
	tc.upDur = time.Since(up)
	if errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing) {
		// The server ended this session: the next call opens a new one.
		c.sess.dropSession(tc.srv.Name, cs)
	}
	return res, err
}

// openAPICall makes the HTTP call of an OpenAPI operation.
func (h *Handler) openAPICall(ctx context.Context, c *call, tc *toolCall, args any) (*sdk.CallToolResult, error) {
	spec, base, err := h.OpenAPI.get(ctx, tc.srv)
	if err != nil {
		return nil, err
	}
	t := spec.Tool(tc.tool)
	if t == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown tool \"" + c.name(tc.srv, tc.tool) + "\""}
	}
	up := time.Now()
	res, err := h.callOpenAPI(ctx, tc.srv, base, t, args)
	tc.upDur = time.Since(up)
	return res, err
}

// rejection is the in-band answer of a guardrail rejection: a tool result
// with isError, on HTTP 200 (spec "Errors" 4).
func rejection(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: msg}}, IsError: true}
}

func blockMessage(e *guard.Exec, def string) string {
	if e.Message != "" {
		return e.Message
	}
	return def
}

// chain merges the guardrails attached to the server, the key and its team.
func (h *Handler) chain(c *call, tc *toolCall) {
	sg := c.snap.MCPGuards[tc.srv.Name]
	kg, teamg := c.p.caller.Guard, c.p.caller.TeamGuard
	if sg == nil && kg == nil && teamg == nil {
		return
	}
	tc.gOn = guard.Merge(&tc.g.Chain, guard.Of(sg), guard.Of(kg), guard.Of(teamg))
}

// admit applies the key's rate_limit request windows and the server's
// mcp_rate_limits entry (request windows and in-flight concurrency) of the
// key. A refusal answers 429 and reports false; release frees the slots.
func (h *Handler) admit(c *call, tc *toolCall) (release func(), ok bool) {
	if h.Limiter == nil {
		return func() {}, true
	}
	key := c.p.caller.Key
	var r limiter.Reservation
	var rl *resources.RateLimit
	for i := range key.MCPRateLimits {
		if key.MCPRateLimits[i].Server == tc.srv.Name {
			rl = &key.MCPRateLimits[i].Limit
		}
	}
	mcpSub := limiter.Subject{Scope: scopeMCPPrefix + tc.srv.Name, ID: key.ID}
	keySub := limiter.Subject{Scope: limiter.ScopeKey, ID: key.ID}
	if key.RateLimit != nil {
		r.AddLimits(keySub, limiter.Limits{RPS: key.RateLimit.RPS, RPM: key.RateLimit.RPM, RPH: key.RateLimit.RPH, RPD: key.RateLimit.RPD})
	}
	if rl != nil {
		r.AddLimits(mcpSub, limiter.Limits{RPS: rl.RPS, RPM: rl.RPM, RPH: rl.RPH, RPD: rl.RPD})
	}
	var keySlot, mcpSlot limiter.Slot
	release = func() {
		h.Limiter.Settle(&r, 0)
		keySlot.Release()
		mcpSlot.Release()
	}
	if r.Len() > 0 {
		if d := h.Limiter.Reserve(&r, 0); !d.Allowed {
			h.refuse(c, tc, &d)
			return nil, false
		}
	}
	if key.RateLimit != nil {
		if d := h.Limiter.Acquire(&keySlot, keySub, key.RateLimit.Concurrency); !d.Allowed {
			release()
			h.refuse(c, tc, &d)
			return nil, false
		}
	}
	if rl != nil {
		if d := h.Limiter.Acquire(&mcpSlot, mcpSub, rl.Concurrency); !d.Allowed {
			release()
			h.refuse(c, tc, &d)
			return nil, false
		}
	}
	return release, true
}

func (h *Handler) refuse(c *call, tc *toolCall, d *limiter.Decision) {
	tc.outcome = outcomeLimited
	msg := d.Message()
	c.status = fasthttp.StatusTooManyRequests
	writeResponse(c.resp, fasthttp.StatusTooManyRequests, &jsonrpc.Response{ID: c.req.ID, Error: &jsonrpc.Error{Code: -32029, Message: msg}})
	d.AppendHeaders(nil, c.resp.Header.SetBytesKV)
}

// finishCall writes the usage record and the metrics of one tool call.
func (h *Handler) finishCall(c *call, tc *toolCall) {
	if tc.outcome == "" {
		return // answered before the call was attempted (bad arguments)
	}
	now := time.Now()
	lat := now.Sub(c.start)
	toolCalls(tc.srv.Name, tc.tool, tc.outcome).Inc()
	toolLatency(tc.srv.Name).Update(lat.Seconds())
	if h.Usage == nil {
		return
	}
	k := c.p.caller.Key
	e := &usage.Record{
		OccurredAt: now, RequestID: usage.NewRequestID(), Attempt: 1, AttemptKind: usage.AttemptFinal,
		StatusCode: c.status,
		APIKeyID:   k.ID, APIKeyName: k.DisplayName, TeamID: k.TeamID, UserID: k.UserID, UserName: k.UserName,
		Model: Join(tc.srv.Name, tc.tool), InboundProtocol: "mcp", Operation: "tools/call", CacheStatus: usage.CacheNone,
		MCPServer: tc.srv.Name, MCPTool: tc.tool,
		Latency: lat, UpstreamLatency: tc.upDur, RequestBodyBytes: int64(tc.reqBytes),
		ResponseBodyBytes: int64(len(c.resp.Body())),
	}
	if pk := tc.srv.ProviderKey; pk != nil {
		e.ProviderKey, e.ProviderKeyID = pk.DisplayName, pk.ID
	}
	if tc.outcome != outcomeOK {
		e.ErrorClass = tc.outcome
		e.ErrorMessage = usage.ClassMessage(tc.outcome)
	}
	if tc.gOn {
		o := &tc.g.Outcome
		usage.SetGuardrails(e, o.Applied, o.Enforced, o.Monitor, o.BypassedReason, o.BlockedFailClosed)
	}
	h.Usage.Emit(e)
}

// Metrics: one counter per (server, tool, outcome); tools are those the
// server lists and the key may call, so the label set stays bounded.
// The series are cached by their labels so a call does not build the
// series name again.
func toolCalls(server, tool, outcome string) *metrics.Counter {
	k := callsKey{server, tool, outcome}
	seriesMu.RLock()
	c := callSeries[k]
	seriesMu.RUnlock()
	if c == nil {
		c = metrics.GetOrCreateCounter(`gw_mcp_tool_calls_total{server="` + escapeLabel(server) + `",tool="` + escapeLabel(tool) + `",outcome="` + outcome + `"}`)
		seriesMu.Lock()
		callSeries[k] = c
		seriesMu.Unlock()
	}
	return c
}

func toolLatency(server string) *metrics.Histogram {
	seriesMu.RLock()
	h := latencySeries[server]
	seriesMu.RUnlock()
	if h == nil {
		h = metrics.GetOrCreateHistogram(`gw_mcp_tool_call_seconds{server="` + escapeLabel(server) + `"}`)
		seriesMu.Lock()
		latencySeries[server] = h
		seriesMu.Unlock()
	}
	return h
}

type callsKey struct{ server, tool, outcome string }

var (
	seriesMu      sync.RWMutex
	callSeries    = map[callsKey]*metrics.Counter{}
	latencySeries = map[string]*metrics.Histogram{}
)

func escapeLabel(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\\':
			b = append(b, '\\', s[i])
		case '\n':
			b = append(b, '\\', 'n')
		default:
			b = append(b, s[i])
		}
	}
	return string(b)
}

// toolResult answers a tools/call with res. The common result (text
// content only, no _meta, structuredContent or newer-protocol fields) is
// written directly, without the SDK's reflective re-encoding (two nested
// json.Marshal calls and their compaction); anything else goes through it.
func (c *call) toolResult(res *sdk.CallToolResult) {
	if !plainToolResult(res) {
		c.result(res)
		return
	}
	c.endResult(appendToolResult(c.resultHead(0), res))
}

// plainToolResult reports whether appendToolResult encodes res exactly as
// the SDK does.
func plainToolResult(res *sdk.CallToolResult) bool {
	if res.Meta != nil || res.StructuredContent != nil || res.InputRequests != nil || res.RequestState != "" || res.NeedsInput() || res.Content == nil {
		return false
	}
	for _, ct := range res.Content {
		tc, ok := ct.(*sdk.TextContent)
		if !ok || tc == nil || tc.Meta != nil || tc.Annotations != nil {
			return false
		}
	}
	return true
}

// appendToolResult appends a plain result (plainToolResult) as JSON.
func appendToolResult(b []byte, res *sdk.CallToolResult) []byte {
	b = append(b, `{"content":[`...)
	for i, ct := range res.Content {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"text","text":`...)
		b = rawjson.AppendQuote(b, ct.(*sdk.TextContent).Text)
		b = append(b, '}')
	}
	b = append(b, ']')
	if res.IsError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, '}')
}
