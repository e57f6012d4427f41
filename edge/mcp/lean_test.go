package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"gw/adapters/upstream"
	"gw/admin/resources"
	"gw/sse"
)

// upRecorder watches what gw sends an upstream MCP server (a real one of
// the SDK, which it wraps): the tools/call request IDs, the requestId of
// notifications/cancelled, the methods. With answer set, it answers gw's
// tools/call itself (malformed answers); everything else reaches the
// server.
type upRecorder struct {
	mu        sync.Mutex
	calls     []string // ids of tools/call, raw JSON
	callConns []string // the client address of each tools/call's connection
	cancels   []string // requestId of notifications/cancelled, raw JSON
	inits     int
	responses int // JSON-RPC responses POSTed (answers to server requests)
	answer    func(w http.ResponseWriter, id string)
}

func (r *upRecorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost {
			body, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
				Params struct {
					RequestID json.RawMessage `json:"requestId"`
				} `json:"params"`
			}
			json.Unmarshal(body, &m)
			r.mu.Lock()
			switch {
			case m.Method == "tools/call":
				r.calls = append(r.calls, string(m.ID))
				r.callConns = append(r.callConns, req.RemoteAddr)
			case m.Method == "notifications/cancelled":
				r.cancels = append(r.cancels, string(m.Params.RequestID))
			case m.Method == "initialize":
				r.inits++
			case m.Method == "" && (m.Result != nil || m.Error != nil):
				r.responses++
			}
			answer := r.answer
			r.mu.Unlock()
			if m.Method == "tools/call" && answer != nil {
				answer(w, string(m.ID))
				return
			}
		}
		next.ServeHTTP(w, req)
	})
}

func (r *upRecorder) leanCalls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, id := range r.calls {
		if strings.HasPrefix(id, `"gw-call-`) {
			n++
		}
	}
	return n
}

// callConnections is the number of connections tools/call came on.
func (r *upRecorder) callConnections() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for _, a := range r.callConns {
		seen[a] = true
	}
	return len(seen)
}

func (r *upRecorder) snapshot() (calls, cancels []string, inits, responses int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...), append([]string(nil), r.cancels...), r.inits, r.responses
}

// leanServer is an SDK server with the tools the lean tests call: echo,
// block (runs until cancelled; started gets a value when it runs,
// stopped when its context ends), and work (progress, a log message and
// a sampling request inside the call).
func leanServer(started, stopped chan struct{}) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "up", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo"}, func(_ context.Context, _ *sdk.CallToolRequest, i in) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: i.Text}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "image"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.ImageContent{Data: []byte{1, 2}, MIMEType: "image/png"}}}, map[string]any{"n": 1}, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "block"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		started <- struct{}{}
		<-ctx.Done()
		stopped <- struct{}{}
		return nil, nil, ctx.Err()
	})
	sdk.AddTool(s, &sdk.Tool{Name: "work"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Message: "half"})
		}
		req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Data: "working"})
		res, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 5, Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "hi"}}}})
		if err != nil {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}, nil, nil
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "sampled:" + res.Content.(*sdk.TextContent).Text}}}, nil, nil
	})
	return s
}

// leanUpstream serves leanServer over Streamable HTTP (JSON or SSE
// answers) behind a recorder.
func leanUpstream(t *testing.T, jsonAnswers bool, connState ...func(net.Conn, http.ConnState)) (*sdk.Server, *upRecorder, *httptest.Server, chan struct{}, chan struct{}) {
	t.Helper()
	started, stopped := make(chan struct{}, 4), make(chan struct{}, 4)
	s := leanServer(started, stopped)
	rec := &upRecorder{}
	up := httptest.NewUnstartedServer(rec.wrap(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{JSONResponse: jsonAnswers})))
	if len(connState) > 0 {
		up.Config.ConnState = connState[0]
	}
	up.Start()
	t.Cleanup(up.Close)
	return s, rec, up, started, stopped
}

// leanCalled starts a JSON-answering upstream, a gw session on it and one
// echo call through the lean path (so the upstream session exists).
func leanCalled(t *testing.T) (*sdk.Server, *upRecorder, *Handler, string) {
	t.Helper()
	s, rec, up, _, _ := leanUpstream(t, true)
	h := handlerFor(t, up.URL)
	sid := initSession(t, h)
	if ctx := serveOnce(h, "", echoCall, sid); ctx.Response.StatusCode() != 200 {
		t.Fatalf("first call: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	return s, rec, h, sid
}

func initSession(t *testing.T, h *Handler) string {
	t.Helper()
	ctx := serveOnce(h, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, "")
	if ctx.Response.StatusCode() != 200 {
		t.Fatalf("initialize: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	return string(ctx.Response.Header.Peek(hdrSession))
}

const echoCall = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"hi \"there\""},"_meta":{"k":"v"}}}`

// TestLeanAnswers: JSON and SSE answers of the upstream reach the caller
// raw on the lean path (gw's own request IDs upstream); a result that is
// not the plain text shape is checked by the SDK's rules and relayed with
// all its members.
func TestLeanAnswers(t *testing.T) {
	for _, tc := range []struct {
		name string
		json bool
	}{{"json", true}, {"sse", false}} {
		t.Run(tc.name, func(t *testing.T) {
			_, rec, up, _, _ := leanUpstream(t, tc.json)
			h := handlerFor(t, up.URL)
			sid := initSession(t, h)
			for i := 0; i < 3; i++ {
				ctx := serveOnce(h, "", echoCall, sid)
				if got, want := string(ctx.Response.Body()), `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi \"there\""}]}}`; ctx.Response.StatusCode() != 200 || got != want {
					t.Fatalf("call %d: %d %s; want %s", i, ctx.Response.StatusCode(), got, want)
				}
			}
			ctx := serveOnce(h, "", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"up__image"}}`, sid)
			body := string(ctx.Response.Body())
			if ctx.Response.StatusCode() != 200 || !strings.Contains(body, `"type":"image"`) || !strings.Contains(body, `"structuredContent":{"n":1}`) {
				t.Fatalf("image: %d %s", ctx.Response.StatusCode(), body)
			}
			if n := rec.leanCalls(); n != 4 {
				t.Fatalf("%d calls with gw-call ids; want 4", n)
			}
		})
	}
}

// TestLeanServerMessages: progress, a log message and a sampling request
// of the server inside the call's SSE answer reach an SDK caller through
// gw, whose answer the lean path POSTs back to the server.
func TestLeanServerMessages(t *testing.T) {
	_, rec, up, _, _ := leanUpstream(t, false)
	h := handlerFor(t, up.URL)
	url := serveHTTP(t, h)
	got := &record{got: map[string]bool{}}
	c := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{
		CreateMessageHandler: func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			return &sdk.CreateMessageResult{Model: "m", Role: "assistant", Content: &sdk.TextContent{Text: "hello"}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			got.add("progress:" + r.Params.Message)
		},
		LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) {
			if s, ok := r.Params.Data.(string); ok {
				got.add("log:" + s)
			}
		},
	})
	connectAndWork(t, c, url)
	poll(t, "progress and log", func() bool { return got.has("progress:half") && got.has("log:working") })
	if n := rec.leanCalls(); n != 1 {
		t.Fatalf("%d calls with gw-call ids; want 1", n)
	}
	if _, _, _, responses := rec.snapshot(); responses != 1 {
		t.Fatalf("%d answers POSTed to the server; want 1 (the sampling answer)", responses)
	}
}

// TestLeanCancel: the caller's notifications/cancelled ends the lean call
// while the server has not answered yet: gw closes the call's connection
// and tells the server under its own request ID.
func TestLeanCancel(t *testing.T) {
	for _, tc := range []struct {
		name string
		json bool
	}{{"json", true}, {"sse", false}} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			closed := map[string]bool{} // client addresses of closed connections
			_, rec, up, started, stopped := leanUpstream(t, tc.json, func(c net.Conn, st http.ConnState) {
				if st == http.StateClosed {
					mu.Lock()
					closed[c.RemoteAddr().String()] = true
					mu.Unlock()
				}
			})
			h := handlerFor(t, up.URL)
			sid := initSession(t, h)
			done := make(chan string, 1)
			go func() {
				ctx := serveOnce(h, "", `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"up__block"}}`, sid)
				done <- string(ctx.Response.Body())
			}()
			<-started
			if ctx := serveOnce(h, "", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1"}}`, sid); ctx.Response.StatusCode() != 202 {
				t.Fatalf("cancel: %d", ctx.Response.StatusCode())
			}
			if body := <-done; !strings.Contains(body, "cancelled by the caller") {
				t.Fatalf("cancelled call answered %s", body)
			}
			<-stopped // the server's handler saw the cancellation
			calls, cancels, _, _ := rec.snapshot()
			if len(calls) != 1 || len(cancels) != 1 || cancels[0] != calls[0] || !strings.HasPrefix(calls[0], `"gw-call-`) {
				t.Fatalf("calls %v, cancellations %v", calls, cancels)
			}
			rec.mu.Lock()
			conn := rec.callConns[0]
			rec.mu.Unlock()
			poll(t, "the call's connection closed", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return closed[conn]
			})
			// The session goes on.
			if ctx := serveOnce(h, "", echoCall, sid); !strings.Contains(string(ctx.Response.Body()), `hi \"there\"`) {
				t.Fatalf("after the cancellation: %s", ctx.Response.Body())
			}
		})
	}
}

// TestLeanConnectionReuse: sequential calls go on one keep-alive
// connection, with JSON answers and with SSE answers (read to their end).
func TestLeanConnectionReuse(t *testing.T) {
	for _, tc := range []struct {
		name string
		json bool
	}{{"json", true}, {"sse", false}} {
		t.Run(tc.name, func(t *testing.T) {
			_, rec, up, _, _ := leanUpstream(t, tc.json)
			h := handlerFor(t, up.URL)
			sid := initSession(t, h)
			const calls = 200
			for i := 0; i < calls; i++ {
				if ctx := serveOnce(h, "", echoCall, sid); ctx.Response.StatusCode() != 200 || !strings.Contains(string(ctx.Response.Body()), `hi \"there\"`) {
					t.Fatalf("call %d: %d %s", i, ctx.Response.StatusCode(), ctx.Response.Body())
				}
			}
			if n := rec.leanCalls(); n != calls {
				t.Fatalf("%d lean calls; want %d", n, calls)
			}
			if n := rec.callConnections(); n != 1 {
				t.Fatalf("%d connections for %d calls; want 1", n, calls)
			}
		})
	}
}

// TestLeanRetries: a server that ended the session (404) gets a new
// session and the call once more; a keep-alive connection the server
// closed while idle is replaced and the call sent again.
func TestLeanRetries(t *testing.T) {
	t.Run("session expired", func(t *testing.T) {
		s, rec, h, sid := leanCalled(t)
		for ss := range s.Sessions() {
			ss.Close()
		}
		retries := leanSessionRetries.Get()
		ctx := serveOnce(h, "", echoCall, sid)
		if ctx.Response.StatusCode() != 200 || !strings.Contains(string(ctx.Response.Body()), `hi \"there\"`) {
			t.Fatalf("call after the session ended: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
		if _, _, inits, _ := rec.snapshot(); inits != 2 || leanSessionRetries.Get()-retries != 1 {
			t.Fatalf("%d initialize, %d retries; want 2, 1", inits, leanSessionRetries.Get()-retries)
		}
	})
	t.Run("fresh session ended too", func(t *testing.T) {
		_, rec, h, sid := leanCalled(t)
		// Every session the server hands out is gone by the call.
		rec.mu.Lock()
		rec.answer = func(w http.ResponseWriter, _ string) { http.Error(w, "session not found", http.StatusNotFound) }
		rec.mu.Unlock()
		retries := leanSessionRetries.Get()
		ctx := serveOnce(h, "", echoCall, sid)
		if body := string(ctx.Response.Body()); strings.Contains(body, `hi \"there\"`) || !strings.Contains(body, "error") && !strings.Contains(body, `"isError":true`) {
			t.Fatalf("call while every session ends: %d %s; want an error", ctx.Response.StatusCode(), body)
		}
		if _, _, inits, _ := rec.snapshot(); inits != 2 || leanSessionRetries.Get()-retries != 1 {
			t.Fatalf("%d initialize, %d retries; want 2, 1 (one new session, one retry)", inits, leanSessionRetries.Get()-retries)
		}
		// The failed fresh session was dropped: the next call opens
		// another instead of reusing it.
		rec.mu.Lock()
		rec.answer = nil
		rec.mu.Unlock()
		if ctx := serveOnce(h, "", echoCall, sid); ctx.Response.StatusCode() != 200 || !strings.Contains(string(ctx.Response.Body()), `hi \"there\"`) {
			t.Fatalf("call after the server recovered: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
		if _, _, inits, _ := rec.snapshot(); inits != 3 {
			t.Fatalf("%d initialize; want 3 (the failed session not reused)", inits)
		}
	})
	t.Run("stale connection", func(t *testing.T) {
		var mu sync.Mutex
		idle := map[net.Conn]bool{}
		_, rec, up, _, _ := leanUpstream(t, true, func(c net.Conn, st http.ConnState) {
			mu.Lock()
			if st == http.StateClosed || st == http.StateHijacked {
				delete(idle, c)
			} else {
				idle[c] = st == http.StateIdle
			}
			mu.Unlock()
		})
		h := handlerFor(t, up.URL)
		sid := initSession(t, h)
		retries := leanStaleRetries.Get()
		for i := 0; i < 3; i++ {
			if ctx := serveOnce(h, "", echoCall, sid); ctx.Response.StatusCode() != 200 {
				t.Fatalf("call %d: %d %s", i, ctx.Response.StatusCode(), ctx.Response.Body())
			}
			// The server closes its idle connections once only the
			// session's standing GET stream is still busy: every pooled
			// connection is then stale at the next call. (Closing as soon
			// as one was idle could leave another, still finishing, to
			// serve the next call without a resend.)
			poll(t, "the pooled connections idle", func() bool {
				mu.Lock()
				defer mu.Unlock()
				n, busy := 0, 0
				for _, v := range idle {
					if v {
						n++
					} else {
						busy++
					}
				}
				return n > 0 && busy <= 1
			})
			mu.Lock()
			for c, v := range idle {
				if v {
					c.Close()
					delete(idle, c)
				}
			}
			mu.Unlock()
		}
		if n := rec.leanCalls(); n != 3 {
			t.Fatalf("%d lean calls; want 3", n)
		}
		if n := leanStaleRetries.Get() - retries; n != 2 {
			t.Fatalf("%d retries on a new connection; want 2", n)
		}
	})
}

// TestLeanFallback: legacy SSE servers, a custom transport, and a server
// the lean path cannot dial take the SDK path; an https server the lean
// path reaches with the transport's TLS settings.
func TestLeanFallback(t *testing.T) {
	s := leanServer(nil, nil)
	rec := &upRecorder{}
	legacy := httptest.NewServer(rec.wrap(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return s }, nil)))
	defer legacy.Close()
	streamable := httptest.NewServer(rec.wrap(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)))
	defer streamable.Close()
	tlsUp := httptest.NewTLSServer(rec.wrap(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)))
	defer tlsUp.Close()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) *Handler
		lean  bool
	}{
		{"legacy sse", func(t *testing.T) *Handler {
			h := handlerFor(t, legacy.URL)
			h.Holder.Load().Resources.MCPServers[0].Transport = "sse"
			return h
		}, false},
		{"custom transport", func(t *testing.T) *Handler {
			h := handlerFor(t, streamable.URL)
			h.Transport = roundTripFunc(http.DefaultTransport.RoundTrip)
			return h
		}, false},
		{"proxy", func(t *testing.T) *Handler {
			h := handlerFor(t, streamable.URL)
			h.Transport = &http.Transport{Proxy: func(*http.Request) (*url.URL, error) { return nil, nil }}
			return h
		}, true},
		{"dial failure", func(t *testing.T) *Handler {
			h := handlerFor(t, streamable.URL)
			// The lean client's connections go to an address nothing
			// listens on; the SDK path's to the server.
			up, err := upstream.NewPool(upstream.Options{}).Client(upstream.Target{BaseURL: "http://" + closedAddr(t)})
			if err != nil {
				t.Fatal(err)
			}
			h.lean(h.Holder.Load().Resources.MCPServers[0]).up = up
			return h
		}, false},
		{"tls", func(t *testing.T) *Handler {
			h := handlerFor(t, tlsUp.URL)
			// The test server's roots; its client's own transport
			// has a custom dialer (the SDK path then).
			h.Transport = &http.Transport{TLSClientConfig: tlsUp.Client().Transport.(*http.Transport).TLSClientConfig}
			return h
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := rec.leanCalls()
			h := tc.setup(t)
			sid := initSession(t, h)
			ctx := serveOnce(h, "", echoCall, sid)
			if ctx.Response.StatusCode() != 200 || !strings.Contains(string(ctx.Response.Body()), `hi \"there\"`) {
				t.Fatalf("%d %s", ctx.Response.StatusCode(), ctx.Response.Body())
			}
			if lean := rec.leanCalls() > before; lean != tc.lean {
				t.Fatalf("lean path taken: %v; want %v", lean, tc.lean)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestLeanBadAnswers: answers of the server that cannot be read are 502;
// a JSON-RPC error is relayed as it is, also from a 4xx answer.
func TestLeanBadAnswers(t *testing.T) {
	jsonAnswer := func(body string) func(http.ResponseWriter, string) {
		return func(w http.ResponseWriter, id string) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, strings.ReplaceAll(body, "ID", id))
		}
	}
	// raw answers with bytes of its own and closes the connection.
	raw := func(answer string) func(http.ResponseWriter, string) {
		return func(w http.ResponseWriter, _ string) {
			c, bw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			bw.WriteString(answer)
			bw.Flush()
			c.Close()
		}
	}
	for _, tc := range []struct {
		name   string
		answer func(http.ResponseWriter, string)
		status int
		want   string
	}{
		{"not json", jsonAnswer(`{"jsonrpc":"2.0","id":ID,"result":`), 502, "not valid JSON"},
		{"invalid utf-8", jsonAnswer("{\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}}"), 502, "not valid JSON"},
		{"unknown content type", jsonAnswer(`{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"bogus"}]}}`), 502, "cannot read the tool result"},
		{"no result", jsonAnswer(`{"jsonrpc":"2.0","id":ID}`), 502, "neither result nor error"},
		{"another id", jsonAnswer(`{"jsonrpc":"2.0","id":"x","result":{}}`), 502, "not the answer"},
		{"rpc error", jsonAnswer(`{"jsonrpc":"2.0","id":ID,"error":{"code":-32001,"message":"nope"}}`), 200, `"code":-32001`},
		{"rpc error on 400", func(w http.ResponseWriter, id string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32602,"message":"bad args"}}`)
		}, 200, "bad args"},
		{"http 500", func(w http.ResponseWriter, _ string) { w.WriteHeader(500) }, 502, "HTTP 500"},
		{"http 503", func(w http.ResponseWriter, _ string) { w.WriteHeader(503) }, 502, "HTTP 503"},
		{"text/plain", func(w http.ResponseWriter, _ string) {
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "hello")
		}, 502, "unsupported content type"},
		{"sse without answer", func(w http.ResponseWriter, _ string) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n")
		}, 502, "ended without the answer"},
		{"sse bad event", func(w http.ResponseWriter, _ string) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {oops\n\n")
		}, 502, "not valid JSON"},
		{"sse answer", func(w http.ResponseWriter, id string) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, ": hi\r\nid: 1\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+id+",\r\ndata: \"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}],\"isError\":true}}\r\n\r\n")
		}, 200, `"result":{"content":[{"type":"text","text":"ok"}],`},
		{"bad status line", raw("HTTP/2 200\r\n\r\n"), 502, "not valid HTTP"},
		{"gzip", raw("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: 0\r\n\r\n"), 502, "Content-Encoding"},
		{"short body", raw("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{}"), 502, "unexpected EOF"},
		{"no answer", raw(""), 502, "closed the connection before answering"},
		// Not the plain shape: checked by the SDK's rules, still relayed
		// as the server wrote it (its own member and order kept).
		{"other shape relayed raw", jsonAnswer(`{"jsonrpc":"2.0","id":ID,"result":{"x-server":1,"structuredContent":{"b":2,"a":1},"content":[{"type":"text","text":"ok"}]}}`),
			200, `"result":{"x-server":1,"structuredContent":{"b":2,"a":1},"content":[{"type":"text","text":"ok"}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, rec, up, _, _ := leanUpstream(t, true)
			rec.answer = tc.answer
			h := handlerFor(t, up.URL)
			sid := initSession(t, h)
			ctx := serveOnce(h, "", echoCall, sid)
			if ctx.Response.StatusCode() != tc.status || !strings.Contains(string(ctx.Response.Body()), tc.want) {
				t.Fatalf("%d %s; want %d with %s", ctx.Response.StatusCode(), ctx.Response.Body(), tc.status, tc.want)
			}
		})
	}
}

// rawUpstream is a TCP server that answers every request with answer
// (raw bytes), closing the connection after it when closeAfter is set, and
// records the requests and the connections it accepted.
type rawUpstream struct {
	base       string
	answer     string
	closeAfter bool
	mu         sync.Mutex
	conns      int
	heads      []string // each request's head, the request line first
}

func newRawUpstream(t *testing.T, answer string, closeAfter bool) *rawUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &rawUpstream{base: "http://" + ln.Addr().String(), answer: answer, closeAfter: closeAfter}
	var wg sync.WaitGroup
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		u.mu.Lock()
		for _, c := range open { // the client keeps idle ones
			c.Close()
		}
		u.mu.Unlock()
		wg.Wait()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.mu.Lock()
			u.conns++
			open = append(open, c)
			u.mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					var head strings.Builder
					head.WriteString(req.Method + " " + req.RequestURI + " " + req.Proto + "\n")
					req.Header.Write(&head)
					u.mu.Lock()
					u.heads = append(u.heads, "Host: "+req.Host+"\n"+head.String())
					u.mu.Unlock()
					if _, err := io.WriteString(c, u.answer); err != nil || u.closeAfter {
						return
					}
				}
			})
		}
	}()
	return u
}

func (u *rawUpstream) stats() (conns int, heads []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.conns, append([]string(nil), u.heads...)
}

// leanClientFor is the lean client of a server entry at url.
func leanClientFor(t *testing.T, srv *resources.MCPServer) *leanClient {
	t.Helper()
	pool := upstream.NewPool(upstream.Options{})
	lc := newLeanClient(srv, http.DefaultTransport, func(bool) *upstream.Pool { return pool })
	if !lc.ok {
		t.Fatal("no lean client")
	}
	return lc
}

// TestLeanFraming: answer heads and bodies as servers frame them, read
// through the upstream client; whether the connection carries the next
// request; answers that cannot be read are clear errors.
func TestLeanFraming(t *testing.T) {
	for _, tc := range []struct {
		name, in   string
		closeAfter bool // the server closes the connection after the answer
		status     int
		media      int
		body       string
		reused     bool // the next request goes on the same connection
		err        string
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", false, 200, mediaJSON, "{}", true, ""},
		{"chunked", "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n", false, 200, mediaSSE, "abcde", true, ""},
		{"interim answer first", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n", false, 202, mediaOther, "", true, ""},
		{"to the end", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"a\":1}", true, 200, mediaJSON, `{"a":1}`, false, ""},
		{"connection close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx", true, 200, mediaOther, "x", false, ""},
		{"http/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx", false, 200, mediaOther, "x", true, ""},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", true, 200, mediaOther, "", false, "unexpected EOF"},
		{"chunked cut", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", true, 200, mediaOther, "", false, "unexpected EOF"},
		{"bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", true, 200, mediaOther, "", false, "hex number"},
		{"gzip", "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 0\r\n\r\n", false, 0, 0, "", false, "Content-Encoding"},
		{"bad status", "HTTP/2 200\r\n\r\n", true, 0, 0, "", false, "not valid HTTP"},
		{"no answer", "", true, 0, 0, "", false, "closed the connection before answering"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newRawUpstream(t, tc.in, tc.closeAfter)
			lc := leanClientFor(t, &resources.MCPServer{Name: "up", URL: u.base + "/mcp", TimeoutMS: 5000})
			exchange := func() (status, media int, body []byte, err error) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				var x exchange
				defer x.release()
				if err = x.send(ctx, lc, "s1", "2025-06-18", []byte(`{"jsonrpc":"2.0","method":"x"}`)); err != nil {
					return 0, 0, nil, err
				}
				body, err = x.readAll(nil, 1<<20)
				return x.status(), x.media, body, err
			}
			status, media, body, err := exchange()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v; want %q", err, tc.err)
				}
				return
			}
			if err != nil || status != tc.status || media != tc.media || string(body) != tc.body {
				t.Fatalf("err %v, status %d, media %d, body %q", err, status, media, body)
			}
			if _, _, _, err := exchange(); err != nil {
				t.Fatalf("second exchange: %v", err)
			}
			if conns, _ := u.stats(); (conns == 1) != tc.reused {
				t.Fatalf("%d connections for two exchanges; reused: want %v", conns, tc.reused)
			}
		})
	}
}

// TestLeanRequestHeaders: the lean path's POST carries what the SDK path
// sends: the MCP content types, the session and protocol version, the
// server's headers (a configured one replacing gw's) and credential,
// nothing of gw's framing choice besides Host and Content-Length.
func TestLeanRequestHeaders(t *testing.T) {
	u := newRawUpstream(t, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n", false)
	srv := &resources.MCPServer{Name: "up", URL: u.base + "/mcp?x=1", TimeoutMS: 5000,
		Headers:     []resources.UpstreamHeader{{Name: "x-team", Value: resources.NewSecret("blue")}, {Name: "user-agent", Value: resources.NewSecret("ua/1")}, {Name: "connection", Value: resources.NewSecret("close")}},
		ProviderKey: &resources.ProviderKey{APIKey: resources.NewSecret("sk-up")}}
	lc := leanClientFor(t, srv)
	if err := lc.post(context.Background(), "s1", "2025-06-18", []byte(`{"jsonrpc":"2.0","method":"notifications/x"}`)); err != nil {
		t.Fatal(err)
	}
	_, heads := u.stats()
	host := strings.TrimPrefix(u.base, "http://")
	want := "Host: " + host + "\nPOST /mcp?x=1 HTTP/1.1\n" +
		"Accept: application/json, text/event-stream\r\nAccept-Encoding: identity\r\nAuthorization: Bearer sk-up\r\n" +
		"Content-Length: 44\r\nContent-Type: application/json\r\nMcp-Protocol-Version: 2025-06-18\r\nMcp-Session-Id: s1\r\n" +
		"User-Agent: ua/1\r\nX-Team: blue\r\n"
	if len(heads) != 1 || heads[0] != want {
		t.Fatalf("request head\n%q\nwant\n%q", heads, want)
	}
}

// TestNextMessage: SSE line ends, multi-line data, comments, named
// events, data-less events and a last event without its blank line, read
// byte by byte.
func TestNextMessage(t *testing.T) {
	in := ": hi\r\n\r\nid: 1\nevent: message\ndata: a\ndata:b\n\nevent: ping\ndata: skip\n\nretry: 5\n\ndata: c\r\rdata: d\r\n\r\ndata: cut"
	r := acquireEvents(iotest.OneByteReader(strings.NewReader(in)))
	defer sse.ReleaseReader(r)
	var got []string
	for {
		data, err := nextMessage(r)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(data))
	}
	if want := []string{"a\nb", "c", "d"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("events %q; want %q", got, want)
	}
}
