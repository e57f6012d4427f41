package mcp

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"gw/admin/resources"
)

// Server-to-caller messages: an upstream session's incoming notifications
// and requests pass a receiving middleware of the SDK client that gw opens
// for one caller session and one server, and go to that caller session's
// streams (stream.go).

// callerCaps are the client capabilities the caller declared in its
// initialize: gw declares the same upstream and relays only those requests.
type callerCaps struct {
	Sampling    *sdk.SamplingCapabilities    `json:"sampling,omitempty"`
	Elicitation *sdk.ElicitationCapabilities `json:"elicitation,omitempty"`
	Roots       *struct {
		ListChanged bool `json:"listChanged,omitempty"`
	} `json:"roots,omitempty"`
}

// client is the SDK client of one upstream session of s to srv.
func (s *session) client(srv *resources.MCPServer) *sdk.Client {
	caps := &sdk.ClientCapabilities{Sampling: s.caps.Sampling, Elicitation: s.caps.Elicitation}
	if s.caps.Roots != nil {
		// listChanged as the caller declared it: gw relays the caller's
		// notifications/roots/list_changed (session.rootsChanged).
		caps.RootsV2 = &sdk.RootCapabilities{ListChanged: s.caps.Roots.ListChanged}
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "gw", Version: "1"}, &sdk.ClientOptions{Capabilities: caps})
	c.AddReceivingMiddleware(s.forward(srv))
	return c
}

func (s *session) forward(srv *resources.MCPServer) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if res, handled, err := s.fromServer(ctx, srv, method, req.GetParams()); handled {
				return res, err
			}
			return next(ctx, method, req)
		}
	}
}

// fromServer relays a server message of srv to the caller: notifications
// (handled, no result), and the requests the caller declared a capability
// for (the caller's answer, or an error). handled is false for the
// messages gw leaves to the SDK's client (ping, cancellations, ...). The
// SDK path's middleware and the lean path's SSE answers (lean.go) both
// come here.
func (s *session) fromServer(ctx context.Context, srv *resources.MCPServer, method string, params sdk.Params) (res sdk.Result, handled bool, err error) {
	switch method {
	case "notifications/progress", "notifications/message",
		"notifications/tools/list_changed", "notifications/prompts/list_changed",
		"notifications/resources/list_changed", "notifications/resources/updated":
		s.notify(srv, method, params)
		return nil, true, nil
	case "sampling/createMessage":
		if s.caps.Sampling == nil {
			return nil, true, notDeclared(method, "sampling")
		}
		r := &sdk.CreateMessageWithToolsResult{}
		return r, true, s.ask(ctx, srv, method, params, r)
	case "elicitation/create":
		if s.caps.Elicitation == nil {
			return nil, true, notDeclared(method, "elicitation")
		}
		r := &sdk.ElicitResult{}
		return r, true, s.ask(ctx, srv, method, params, r)
	case "roots/list":
		if s.caps.Roots == nil {
			return nil, true, notDeclared(method, "roots")
		}
		r := &sdk.ListRootsResult{}
		return r, true, s.ask(ctx, srv, method, params, r)
	}
	return nil, false, nil
}

// notDeclared answers a server request the caller cannot take: JSON-RPC
// "Method not found", as a client without the capability answers.
func notDeclared(method, capability string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + method + " (the client did not declare the " + capability + " capability)"}
}

// notify relays a notification of srv to the caller: progress on the POST
// that carries its token, logging on the newest POST to srv (else the
// standalone stream), list changes and resource updates on the standalone
// stream. On /mcp a list change is gw's merged list changing, and an
// updated resource's URI is namespaced like resources/list shows it.
func (s *session) notify(srv *resources.MCPServer, method string, params sdk.Params) {
	h := s.hub
	var st *outStream
	switch p := params.(type) {
	case *sdk.ProgressNotificationParams:
		tok, err := json.Marshal(p.ProgressToken)
		if err == nil {
			st = h.related(srv.Name, string(tok))
		}
	case *sdk.LoggingMessageParams:
		st = h.related(srv.Name, "")
	case *sdk.ResourceUpdatedNotificationParams:
		if s.server == "" {
			cp := *p
			cp.URI = Join(srv.Name, p.URI)
			params = &cp
		}
		st = h.streams0()
	default:
		if s.server == "" {
			params = nil // the merged list changed; its details are gw's
		}
		st = h.streams0()
	}
	if st == nil {
		droppedServerMsgs.Inc()
		return
	}
	b, err := marshalParams(params)
	if err != nil {
		droppedServerMsgs.Inc()
		return
	}
	if !h.emit(st, appendNotification(nil, method, b), false) {
		droppedServerMsgs.Inc()
	}
}

// ask relays a server request of srv to the caller on the POST it most
// likely belongs to (the newest one to srv still served), else on the
// standalone stream when the caller holds it open, and decodes the
// caller's answer into res. It waits at most srv's timeout.
func (s *session) ask(ctx context.Context, srv *resources.MCPServer, method string, params sdk.Params, res any) error {
	h := s.hub
	st := h.related(srv.Name, "")
	if st == nil || st.id == standaloneStream && !h.attached(st) {
		droppedServerMsgs.Inc()
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: method + ": " + errNoStream.Error()}
	}
	b, err := marshalParams(params)
	if err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cannot encode " + method + " params: " + err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, srv.Timeout())
	defer cancel()
	r, err := h.request(ctx, st, method, b)
	if err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	if r.Error != nil {
		return r.Error
	}
	if err := json.Unmarshal(r.Result, res); err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cannot read the caller's " + method + " answer: " + err.Error()}
	}
	return nil
}
