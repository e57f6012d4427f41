package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"gw/adapters/upstream"
	"gw/admin/resources"
	"gw/sse"
	"gw/sse/rawjson"
)

// The lean path of tools/call (docs/AGENTS.md "How tools/call is
// relayed"): gw POSTs the JSON-RPC tools/call to a Streamable HTTP server
// itself, through the upstream client of gw's providers (leanconn.go), in
// the upstream session the SDK's client opened (its Mcp-Session-Id and
// protocol version), under its own request IDs "gw-call-<n>", and relays
// the result raw. The SDK session keeps everything else: initialize,
// lists, notifications, the standalone GET stream. The SDK path
// (upstreamCall's cs.CallTool) stays for legacy SSE servers, transports gw
// cannot reproduce (newLeanClient), sessions at the stateless protocol
// 2026-07-28 or later, and servers the lean path cannot dial.

// leanLastVersion: sessions at a protocol version from this one on take the
// SDK path (stateless sessions, results that ask for input and are retried).
const leanLastVersion = "2026-07-28"

// Counters of the lean path's retries and fallbacks to the SDK path.
var (
	leanStaleRetries   = metrics.NewCounter(`gw_mcp_lean_retries_total{reason="stale_connection"}`)
	leanSessionRetries = metrics.NewCounter(`gw_mcp_lean_retries_total{reason="session_expired"}`)
	leanFallbacks      = metrics.NewCounter("gw_mcp_lean_fallbacks_total")
)

var (
	// errSessionExpired: the server answered 404 to the session's ID.
	errSessionExpired = errors.New("the upstream MCP session expired")
	callIDPrefix      = []byte("gw-call-")
)

// lean returns srv's lean client; nil: srv's calls take the SDK path.
func (h *Handler) lean(srv *resources.MCPServer) *leanClient {
	if h.noLean || srv.Type != resources.MCPTypeMCP || srv.Transport == resources.MCPTransportSSE {
		return nil
	}
	return h.leans.get(srv, h.transport(), h.Pool)
}

// leanSession reports whether calls in cs can take the lean path.
func leanSession(cs *sdk.ClientSession) bool {
	ir := cs.InitializeResult()
	return ir != nil && ir.ProtocolVersion < leanLastVersion
}

// leanBuf is a pooled buffer: the request's body, or the answer of one
// call.
type leanBuf struct{ b []byte }

var leanBufs = sync.Pool{New: func() any { return &leanBuf{b: make([]byte, 0, 4<<10)} }}

// leanCall makes tc's call on the lean path. The raw result goes to tc.raw
// (in tc.buf, released by tc.release). errLeanUnavailable: take the SDK
// path.
func (h *Handler) leanCall(ctx context.Context, c *call, tc *toolCall, lc *leanClient, cs *sdk.ClientSession, args any, rawArgs, meta []byte) error {
	var idb [32]byte
	id := strconv.AppendUint(append(idb[:0], callIDPrefix...), h.callSeq.Add(1), 10)
	body := leanBufs.Get().(*leanBuf)
	defer leanBufs.Put(body)
	var err error
	if body.b, err = appendCallRequest(body.b[:0], id, tc.tool, args, rawArgs, meta); err != nil {
		return err
	}
	for try := 0; ; try++ {
		err := h.leanExchange(ctx, c, tc, lc, cs, id, body.b)
		if err != errSessionExpired {
			return err
		}
		if try > 0 {
			// The fresh session ended too: the next call opens another.
			c.sess.dropSession(tc.srv.Name, cs)
			return errors.Join(err, sdk.ErrSessionMissing)
		}
		// The server ended the session: open a new one (the SDK path's
		// initialize) and call again, once.
		leanSessionRetries.Inc()
		c.sess.dropSession(tc.srv.Name, cs)
		if cs, err = c.upstream(ctx, tc.srv); err != nil {
			return err
		}
		if !leanSession(cs) {
			return errLeanUnavailable
		}
	}
}

// appendCallRequest appends the JSON-RPC tools/call: the arguments raw as
// the caller sent them (rawArgs), or args encoded when they were decoded
// (a guardrail read or masked them), {} for none; the caller's _meta as
// sent (its progressToken comes back on progress).
func appendCallRequest(b, id []byte, tool string, args any, rawArgs, meta []byte) ([]byte, error) {
	b = append(b, `{"jsonrpc":"2.0","id":"`...)
	b = append(b, id...)
	b = append(b, `","method":"tools/call","params":{"name":`...)
	b = rawjson.AppendQuote(b, tool)
	b = append(b, `,"arguments":`...)
	switch {
	case args != nil:
		ab, err := json.Marshal(args)
		if err != nil {
			return b, errors.New("cannot encode the tool arguments: " + err.Error())
		}
		b = append(b, ab...)
	case len(rawArgs) > 0:
		b = append(b, rawArgs...)
	default:
		b = append(b, "{}"...)
	}
	if len(meta) > 0 && rawjson.KindOf(meta) != rawjson.Null {
		b = append(b, `,"_meta":`...)
		b = append(b, meta...)
	}
	return append(b, "}}"...), nil
}

// statusError is the error of an answer other than 2xx: a JSON-RPC error
// in its body is relayed as such (as the SDK's client does), a transient
// status (429, 502, 503, 504) or another body is a failure.
func (x *exchange) statusError() error {
	msg := "the upstream answered HTTP " + strconv.Itoa(x.status())
	switch x.status() {
	case 429, 502, 503, 504:
		x.discard()
		return errors.New(msg)
	}
	b, err := x.readAll(nil, 64<<10)
	if err == nil && rawjson.Valid(b) {
		if e, kind, ok := rawjson.Get(b, "error"); ok && kind == rawjson.Object {
			var we jsonrpc.Error
			if json.Unmarshal(e, &we) == nil {
				return &we
			}
		}
	}
	return errors.New(msg)
}

// leanExchange makes one attempt of the call in cs.
func (h *Handler) leanExchange(ctx context.Context, c *call, tc *toolCall, lc *leanClient, cs *sdk.ClientSession, id, body []byte) (err error) {
	sid := cs.ID()
	pv := cs.InitializeResult().ProtocolVersion
	if !headerSafe(sid) || !headerSafe(pv) {
		return errLeanUnavailable
	}
	if tc.buf == nil {
		tc.buf = leanBufs.Get().(*leanBuf)
	}
	var x exchange
	defer func() {
		x.release()
		if err != nil && x.tries > 0 && ctx.Err() != nil {
			// The caller cancelled (or the server's time ran out): tell
			// the server, under gw's ID, as the SDK's client does.
			go lc.cancelled(sid, pv, bytes.Clone(id), ctx.Err().Error())
		}
	}()
	if err := x.send(ctx, lc, sid, pv, body); err != nil {
		return err
	}
	switch st := x.status(); {
	case st == 404 && sid != "":
		x.discard()
		return errSessionExpired
	case st < 200 || st > 299:
		return x.statusError()
	}
	var m upMessage
	switch x.media {
	case mediaJSON:
		b, err := x.readAll(tc.buf.b[:0], MaxAnswerBytes)
		tc.buf.b = b[:0]
		if err != nil {
			return x.readError(ctx, err)
		}
		if err := readMessage(b, id, &m); err != nil {
			return err
		}
		if m.kind != msgAnswer {
			return errors.New("the upstream's JSON answer is not the answer to the call")
		}
		if m.err != nil {
			return m.err
		}
		tc.raw = m.result
		return nil
	case mediaSSE:
		return h.leanStream(ctx, c, tc, &x, sid, pv, id)
	}
	x.discard()
	return errors.New("the upstream answered with an unsupported content type")
}

// errOf is e as an error (nil for none).
func errOf(e *jsonrpc.Error) error {
	if e == nil {
		return nil
	}
	return e
}

// readError names a failed read of the answer; a cancelled call is the
// context's error.
func (x *exchange) readError(ctx context.Context, err error) error {
	if err := ended(ctx, err); err != nil {
		return err
	}
	return errors.New("cannot read the upstream's answer: " + err.Error())
}

// leanStream reads an SSE answer: the server's messages for the call go to
// the caller (server requests are answered by a POST of the caller's
// answer), until the answer to the call. The stream's rest is read for a
// short while so the connection can be reused.
func (h *Handler) leanStream(ctx context.Context, c *call, tc *toolCall, x *exchange, sid, pv string, id []byte) error {
	r := acquireEvents(x.body())
	defer sse.ReleaseReader(r)
	var m upMessage
	var answer *jsonrpc.Error
	answered := false
	for {
		data, err := nextMessage(r)
		if err != nil {
			switch {
			case answered:
				return errOf(answer) // a stream kept open closes its connection (release)
			case err == io.EOF:
				return errNoAnswer
			case err == errAnswerTooLarge:
				return err
			}
			return x.readError(ctx, err)
		}
		if err := readMessage(data, id, &m); err != nil {
			if answered {
				return errOf(answer)
			}
			return err
		}
		switch m.kind {
		case msgServer:
			h.leanServerMessage(c.sess, tc.srv, x.lc, sid, pv, data)
		case msgAnswer:
			if answered {
				continue
			}
			answered = true
			if m.err != nil {
				answer = m.err
			} else {
				tc.buf.b = append(tc.buf.b[:0], m.result...)
				tc.raw = tc.buf.b
			}
			// The server ends the stream after the answer; wait a
			// little for it, not for a stream kept open.
			dl := time.Now().Add(leanDrainWait)
			if d, ok := ctx.Deadline(); ok && d.Before(dl) {
				dl = d
			}
			upstream.SetReadDeadline(x.resp, dl)
		}
	}
}

// leanServerMessage hands a server message met in a call's SSE answer to
// the caller the way the SDK path's client middleware does (forward.go):
// notifications at once, requests on a goroutine of their own whose
// answer is POSTed back to the server. data is the message (valid JSON).
func (h *Handler) leanServerMessage(sess *session, srv *resources.MCPServer, lc *leanClient, sid, pv string, data []byte) {
	msg, err := DecodeMessage(data)
	if err != nil {
		droppedServerMsgs.Inc()
		return
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return
	}
	if !req.ID.IsValid() {
		if p, err := serverParams(req.Method, req.Params); err == nil && p != nil {
			sess.fromServer(context.Background(), srv, req.Method, p)
		}
		return
	}
	req.Params = bytes.Clone(req.Params) // data is the SSE reader's, reused by its next read
	go func() {
		var res any
		p, err := serverParams(req.Method, req.Params)
		switch {
		case err != nil:
			err = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "cannot read " + req.Method + " params: " + err.Error()}
		case p == nil && req.Method == "ping":
			res = struct{}{}
		case p == nil:
			err = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + req.Method}
		default:
			var handled bool
			if res, handled, err = sess.fromServer(context.Background(), srv, req.Method, p); !handled {
				res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + req.Method}
			}
		}
		out := &jsonrpc.Response{ID: req.ID, Error: err}
		if err == nil {
			if out.Result, err = json.Marshal(res); err != nil {
				out.Result, out.Error = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cannot encode the answer: " + err.Error()}
			}
		}
		b, err := jsonrpc.EncodeMessage(out)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), srv.Timeout())
		defer cancel()
		lc.post(ctx, sid, pv, b)
	}()
}

// serverParams decodes a server message's params into the type the SDK's
// client hands gw's middleware; nil for a method gw does not relay.
func serverParams(method string, raw []byte) (sdk.Params, error) {
	var p sdk.Params
	switch method {
	case "notifications/progress":
		p = &sdk.ProgressNotificationParams{}
	case "notifications/message":
		p = &sdk.LoggingMessageParams{}
	case "notifications/tools/list_changed":
		p = &sdk.ToolListChangedParams{}
	case "notifications/prompts/list_changed":
		p = &sdk.PromptListChangedParams{}
	case "notifications/resources/list_changed":
		p = &sdk.ResourceListChangedParams{}
	case "notifications/resources/updated":
		p = &sdk.ResourceUpdatedNotificationParams{}
	case "sampling/createMessage":
		p = &sdk.CreateMessageWithToolsParams{}
	case "elicitation/create":
		p = &sdk.ElicitParams{}
	case "roots/list":
		p = &sdk.ListRootsParams{}
	default:
		return nil, nil
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// post sends one message of gw's in the session (an answer to a server
// request, a notification); the server's answer (202) is read and dropped.
func (lc *leanClient) post(ctx context.Context, sid, pv string, msg []byte) error {
	var x exchange
	defer x.release()
	if err := x.send(ctx, lc, sid, pv, msg); err != nil {
		return err
	}
	x.discard()
	if st := x.status(); st < 200 || st > 299 {
		return errors.New("the upstream answered HTTP " + strconv.Itoa(st))
	}
	return nil
}

// cancelled sends the server notifications/cancelled for gw's call id.
func (lc *leanClient) cancelled(sid, pv string, id []byte, reason string) {
	b := append([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"`), id...)
	b = append(b, `","reason":`...)
	b = rawjson.AppendQuote(b, reason)
	b = append(b, "}}"...)
	ctx, cancel := context.WithTimeout(context.Background(), lc.srv.Timeout())
	defer cancel()
	lc.post(ctx, sid, pv, b)
}
