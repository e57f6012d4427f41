package mcp

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fasthttp"
)

// serveHTTP serves h on a loopback listener like gw's edge server does.
func serveHTTP(t *testing.T, h *Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { h.Serve(ctx, "") }, StreamRequestBody: true, CloseOnShutdown: true}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown() })
	return "http://" + ln.Addr().String() + "/mcp"
}

type authRT struct{}

func (authRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer sk-bench")
	return http.DefaultTransport.RoundTrip(r)
}

// chattyServer's tool "work" reports progress, logs and asks for a
// sampling completion; "grow" adds a tool.
func chattyServer(t *testing.T) string {
	s := sdk.NewServer(&sdk.Implementation{Name: "up", Version: "1"}, &sdk.ServerOptions{HasTools: true})
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
	sdk.AddTool(s, &sdk.Tool{Name: "grow"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		sdk.AddTool(s, &sdk.Tool{Name: "extra"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{}, nil, nil
		})
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "grown"}}}, nil, nil
	})
	up := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(up.Close)
	return up.URL
}

type record struct {
	mu  sync.Mutex
	got map[string]bool
}

func (r *record) add(s string) { r.mu.Lock(); r.got[s] = true; r.mu.Unlock() }
func (r *record) has(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[s]
}

func poll(t *testing.T, what string, f func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !f(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestServerMessagesSDK: an SDK caller gets the upstream's progress,
// logging, sampling request and list change through gw's handler; a caller
// that declared no sampling has the upstream's request refused.
func TestServerMessagesSDK(t *testing.T) {
	h := handlerFor(t, chattyServer(t))
	url := serveHTTP(t, h)
	rec := &record{got: map[string]bool{}}
	c := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{
		CreateMessageHandler: func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			return &sdk.CreateMessageResult{Model: "m", Role: "assistant", Content: &sdk.TextContent{Text: "hello"}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			rec.add("progress:" + r.Params.Message)
		},
		LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) {
			if s, ok := r.Params.Data.(string); ok {
				rec.add("log:" + s)
			}
		},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { rec.add("tools changed") },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: authRT{}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	p := &sdk.CallToolParams{Name: "up__work"}
	p.SetProgressToken("t1")
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if txt := res.Content[0].(*sdk.TextContent).Text; txt != "sampled:hello" {
		t.Fatalf("work: %q", txt)
	}
	poll(t, "progress and log", func() bool { return rec.has("progress:half") && rec.has("log:working") })
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "up__grow"}); err != nil {
		t.Fatal(err)
	}
	poll(t, "tools/list_changed", func() bool { return rec.has("tools changed") })

	plain := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil)
	cs2, err := plain.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: authRT{}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close()
	res, err = cs2.CallTool(ctx, &sdk.CallToolParams{Name: "up__work"})
	if err != nil {
		t.Fatal(err)
	}
	if txt := res.Content[0].(*sdk.TextContent).Text; !res.IsError || !strings.Contains(strings.ToLower(txt), "method not found") {
		t.Fatalf("work without sampling: %q", txt)
	}
}
