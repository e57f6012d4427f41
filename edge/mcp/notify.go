package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fasthttp"

	"gw/admin/resources"
	"gw/sse/rawjson"
)

// Caller-to-server notifications and resource subscriptions.

// notification accepts a caller notification (202). Two are relayed:
// notifications/cancelled ends the named request in flight, so its
// upstream call ends and the SDK client tells the server under the
// upstream's own request ID; notifications/roots/list_changed goes to
// every upstream session of the caller session. The rest are gw's own
// business (notifications/initialized: gw initialized the upstreams
// itself) or have no upstream counterpart, and are dropped.
func (h *Handler) notification(c *call, req *jsonrpc.Request) {
	switch req.Method {
	case "notifications/cancelled":
		if !h.session(c) {
			return
		}
		if id, err := CancelledRequestID(req.Params); err == nil {
			c.sess.cancel(id)
		}
	case "notifications/roots/list_changed":
		if !h.session(c) {
			return
		}
		if c.sess.caps.Roots != nil {
			c.sess.rootsChanged()
		}
	}
	c.ctx.SetStatusCode(fasthttp.StatusAccepted)
}

var requestIDKey = []string{"requestId"}

// CancelledRequestID reads the requestId of notifications/cancelled params
// (validated JSON), spelled as gw reads request IDs.
func CancelledRequestID(params []byte) (jsonrpc.ID, error) {
	if rawjson.KindOf(params) != rawjson.Object {
		return jsonrpc.ID{}, errors.New("params must be an object")
	}
	var v [1][]byte
	if err := rawjson.ScanTop(params, requestIDKey, v[:]); err != nil {
		return jsonrpc.ID{}, err
	}
	switch rawjson.KindOf(v[0]) {
	case rawjson.String, rawjson.Number:
		return decodeID(v[0])
	}
	return jsonrpc.ID{}, errors.New("requestId must be a string or a number")
}

// subscribe serves resources/subscribe (unsub false) and
// resources/unsubscribe: the namespaced URI goes to its owning server with
// the prefix removed, under the same access rules as resources/read. The
// server's notifications/resources/updated come back on the standalone
// stream with the URI namespaced again (forward.go).
func (h *Handler) subscribe(ctx context.Context, c *call, unsub bool) {
	var p sdk.SubscribeParams
	if err := json.Unmarshal(c.req.Params, &p); err != nil || p.URI == "" {
		c.rpcError(jsonrpc.CodeInvalidParams, c.req.Method+" needs params.uri")
		return
	}
	s, uri, ok := c.owner(p.URI)
	if !ok || s.Type != resources.MCPTypeMCP {
		c.rpcError(jsonrpc.CodeInvalidParams, "unknown resource \""+p.URI+"\"")
		return
	}
	ctx, cancel, cs := c.open(ctx, s)
	defer cancel()
	if cs == nil {
		return
	}
	if !subscribes(cs) {
		c.rpcError(jsonrpc.CodeMethodNotFound, "resource \""+p.URI+"\" cannot be subscribed to: its server does not offer resource subscriptions")
		return
	}
	var err error
	if unsub {
		err = cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{Meta: p.Meta, URI: uri})
	} else {
		err = cs.Subscribe(ctx, &sdk.SubscribeParams{Meta: p.Meta, URI: uri})
	}
	if err != nil {
		c.upstreamFailed(err)
		return
	}
	c.result(struct{}{})
}

func subscribes(cs *sdk.ClientSession) bool {
	ir := cs.InitializeResult()
	return ir != nil && ir.Capabilities != nil && ir.Capabilities.Resources != nil && ir.Capabilities.Resources.Subscribe
}

// anySubscribes reports whether some server the caller of a new /mcp
// session s reaches offers resource subscriptions, so gw's initialize
// advertises resources.subscribe only then. What a server entry offers is
// remembered (a reload makes a new entry); a server not known yet gets
// s's upstream session now, which s then uses. A server that cannot be
// reached does not count (and is asked again next time).
func (h *Handler) anySubscribes(c *call, s *session) bool {
	var unknown []*resources.MCPServer
	for _, srv := range c.servers() {
		if srv.Type != resources.MCPTypeMCP {
			continue
		}
		v, ok := h.subCaps.Load(srv.Name)
		if !ok || v.(subCap).srv != srv {
			unknown = append(unknown, srv)
		} else if v.(subCap).sub {
			return true
		}
	}
	if len(unknown) == 0 {
		return false
	}
	var found bool
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, srv := range unknown {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), srv.Timeout())
			defer cancel()
			cs, err := s.upstream(ctx, h.transport(), srv)
			if err != nil {
				if h.Logger != nil {
					h.Logger.Warn("mcp initialize: server not reached", "server", srv.Name, "error", err.Error())
				}
				return
			}
			sub := subscribes(cs)
			h.subCaps.Store(srv.Name, subCap{srv, sub})
			mu.Lock()
			found = found || sub
			mu.Unlock()
		}()
	}
	wg.Wait()
	return found
}

// subCap is what a server entry offers (by name: a reload's new entry is
// asked again, and the old one is not kept).
type subCap struct {
	srv *resources.MCPServer
	sub bool
}
