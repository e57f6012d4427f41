package mcp

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"gw/admin/resources"
)

// headerTransport adds a server's configured headers and its provider
// credential to every upstream request.
type headerTransport struct {
	base http.RoundTripper
	srv  *resources.MCPServer
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	pk := t.srv.ProviderKey
	if len(t.srv.Headers) == 0 && (pk == nil || !pk.APIKey.IsSet()) {
		return t.base.RoundTrip(r) // nothing to add: no copy of the request
	}
	r = r.Clone(r.Context())
	for _, h := range t.srv.Headers {
		r.Header.Set(h.Name, h.Value.Reveal())
	}
	if pk != nil && pk.APIKey.IsSet() {
		r.Header.Set("Authorization", "Bearer "+pk.APIKey.Reveal())
	}
	return t.base.RoundTrip(r)
}

// dial opens an upstream session to srv with the transport it declares;
// client carries the caller session's capabilities and relays what the
// server sends (forward.go).
func dial(ctx context.Context, client *sdk.Client, base http.RoundTripper, srv *resources.MCPServer) (*sdk.ClientSession, error) {
	hc := &http.Client{Transport: &headerTransport{base: base, srv: srv}}
	var tr sdk.Transport
	if srv.Transport == resources.MCPTransportSSE {
		tr = &sdk.SSEClientTransport{Endpoint: srv.URL, HTTPClient: hc}
	} else {
		// The standalone GET stream carries the server's unrelated
		// messages (list changes, resource updates) for the caller.
		tr = &sdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc, MaxRetries: -1}
	}
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		return nil, errors.New("cannot open an MCP session to server " + srv.Name + ": " + err.Error())
	}
	return cs, nil
}

// dialTimeout dials within srv's timeout. The context given to Connect
// must outlive it: the legacy SSE transport's GET stream lives on it, so
// it is cancelled only when the dial times out.
func dialTimeout(client *sdk.Client, base http.RoundTripper, srv *resources.MCPServer) (*sdk.ClientSession, error) {
	ctx, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(srv.Timeout(), cancel)
	cs, err := dial(ctx, client, base, srv)
	if !timer.Stop() {
		if cs != nil {
			cs.Close()
		}
		cancel()
		return nil, errors.New("cannot open an MCP session to server " + srv.Name + ": timed out after " + srv.Timeout().String())
	}
	if err != nil {
		cancel()
	}
	return cs, err
}

// session is one caller session of gw: the principal it belongs to and its
// upstream sessions, opened on first use.
type session struct {
	id     string
	keyID  string // the caller key the session is bound to
	server string // "" on /mcp, the server name on /mcp/{server}
	caps   callerCaps
	hub    *hub // the streams of server-to-caller messages

	logLevel sdk.LoggingLevel // the caller's logging/setLevel, for upstream sessions opened later (under mu)

	mu       sync.Mutex
	up       map[string]*upConn // by server name
	lastUsed time.Time
	closed   bool
	// inflight cancels the caller requests being served, by the caller's
	// request ID, for the caller's notifications/cancelled.
	inflight map[jsonrpc.ID]context.CancelFunc
}

// upConn is one upstream session; ready is closed once cs or err is set.
type upConn struct {
	ready  chan struct{}
	client *sdk.Client // one per upstream session: its roots notify only this session
	cs     *sdk.ClientSession
	err    error
	srv    *resources.MCPServer // the entry it was opened for (a reload with new settings reopens)
}

// upstream returns the session's upstream session to srv, opening it once.
func (s *session) upstream(ctx context.Context, base http.RoundTripper, srv *resources.MCPServer) (*sdk.ClientSession, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("the MCP session was closed")
	}
	s.lastUsed = time.Now()
	u := s.up[srv.Name]
	if u != nil && u.srv != srv {
		select {
		case <-u.ready:
			if u.cs != nil {
				go u.cs.Close()
			}
			u = nil
		default:
		}
	}
	if u == nil {
		u = &upConn{ready: make(chan struct{}), srv: srv}
		s.up[srv.Name] = u
		s.mu.Unlock()
		u.client = s.client(srv)
		u.cs, u.err = dialTimeout(u.client, base, srv)
		if u.err == nil {
			s.applyLevel(u.cs, srv)
		}
		close(u.ready)
		if u.err != nil {
			s.drop(srv.Name, u)
		}
		return u.cs, u.err
	}
	s.mu.Unlock()
	select {
	case <-u.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return u.cs, u.err
}

// drop forgets u (a failed dial or a broken session) so the next call reopens.
func (s *session) drop(name string, u *upConn) {
	s.mu.Lock()
	if s.up[name] == u {
		delete(s.up, name)
	}
	s.mu.Unlock()
	if u.cs != nil {
		go u.cs.Close()
	}
}

// dropSession forgets the upstream session cs to server name (one the
// server ended), unless it was replaced meanwhile.
func (s *session) dropSession(name string, cs *sdk.ClientSession) {
	s.mu.Lock()
	u := s.up[name]
	s.mu.Unlock()
	if u == nil {
		return
	}
	select {
	case <-u.ready:
		if u.cs == cs {
			s.drop(name, u)
		}
	default:
	}
}

func (s *session) close() {
	s.mu.Lock()
	s.closed = true
	ups := s.up
	s.up = nil
	s.mu.Unlock()
	s.hub.close()
	for _, u := range ups {
		select {
		case <-u.ready:
			if u.cs != nil {
				go u.cs.Close()
			}
		default:
		}
	}
}

// sessions holds the live caller sessions; idle ones are closed.
type sessions struct {
	mu   sync.Mutex
	byID map[string]*session
	idle time.Duration
}

func (ss *sessions) add(s *session) {
	ss.mu.Lock()
	if ss.byID == nil {
		ss.byID = make(map[string]*session)
	}
	ss.byID[s.id] = s
	ss.mu.Unlock()
}

func (ss *sessions) get(id string) *session {
	ss.mu.Lock()
	s := ss.byID[id]
	ss.mu.Unlock()
	return s
}

func (ss *sessions) remove(id string) *session {
	ss.mu.Lock()
	s := ss.byID[id]
	delete(ss.byID, id)
	ss.mu.Unlock()
	return s
}

// sweep closes sessions idle longer than ss.idle.
func (ss *sessions) sweep(now time.Time) {
	var old []*session
	ss.mu.Lock()
	for id, s := range ss.byID {
		s.mu.Lock()
		if now.Sub(s.lastUsed) > ss.idle {
			old = append(old, s)
			delete(ss.byID, id)
		}
		s.mu.Unlock()
	}
	ss.mu.Unlock()
	for _, s := range old {
		s.close()
	}
}

// touch marks the session used (a stream that still carries events).
func (s *session) touch() {
	s.mu.Lock()
	s.lastUsed = time.Now()
	s.mu.Unlock()
}

// applyLevel gives a new upstream session the caller's logging level.
func (s *session) applyLevel(cs *sdk.ClientSession, srv *resources.MCPServer) {
	s.mu.Lock()
	lvl := s.logLevel
	s.mu.Unlock()
	if ir := cs.InitializeResult(); lvl == "" || ir == nil || ir.Capabilities == nil || ir.Capabilities.Logging == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), srv.Timeout())
	defer cancel()
	cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: lvl}) // best effort: logs are advisory
}

// track registers the cancel function of caller request id while it is
// served; the returned function forgets it. A repeated id (a caller bug)
// replaces the older entry: only the newest request is cancellable.
func (s *session) track(id jsonrpc.ID, cancel context.CancelFunc) {
	s.mu.Lock()
	if s.inflight == nil {
		s.inflight = make(map[jsonrpc.ID]context.CancelFunc)
	}
	s.inflight[id] = cancel
	s.mu.Unlock()
}

func (s *session) untrack(id jsonrpc.ID) {
	s.mu.Lock()
	delete(s.inflight, id)
	s.mu.Unlock()
}

// cancel ends the caller request id if it is still served: its upstream
// call's context ends, and the SDK client then sends the server
// notifications/cancelled with the upstream's own request ID. It reports
// whether such a request was in flight.
func (s *session) cancel(id jsonrpc.ID) bool {
	s.mu.Lock()
	f := s.inflight[id]
	delete(s.inflight, id)
	s.mu.Unlock()
	if f != nil {
		f()
	}
	return f != nil
}

// rootsMarker is the one root gw's per-session upstream client holds. The
// SDK sends notifications/roots/list_changed to a client's sessions only
// when the client's own roots change, and gw's client serves no roots of
// its own (roots/list goes to the caller, forward.go): so re-adding the
// marker is how one upstream session gets the caller's notification.
var rootsMarker = &sdk.Root{URI: "gw:caller-roots"}

// rootsChanged relays the caller's notifications/roots/list_changed to
// every upstream session the caller session has open (a session opened
// later lists the roots afresh anyway).
func (s *session) rootsChanged() {
	s.mu.Lock()
	clients := make([]*sdk.Client, 0, len(s.up))
	for _, u := range s.up {
		select {
		case <-u.ready:
			if u.cs != nil && u.client != nil {
				clients = append(clients, u.client)
			}
		default:
		}
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.AddRoots(rootsMarker)
		}()
	}
	wg.Wait()
}
