package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// notifyFile: one SDK server behind /mcp for the caller-to-server
// notifications and resource subscriptions.
const notifyFile = `_format_version: "1"
api_keys:
  - {display_name: dev, key_env: E2E_MCPN_DEV, mcp_access: {allow: ["*"]}}
mcp_servers:
  - {name: up, url: "${E2E_MCPN_UP}"}
`

// notifyServer is what the upstream SDK server saw.
type notifyServer struct {
	srv          *sdk.Server
	slowStarted  chan struct{}
	slowCanceled chan struct{}
	rootsChanged atomic.Int32
	subscribed   atomic.Int32
	unsubscribed atomic.Int32
}

func startNotifyServer(t *testing.T) *notifyServer {
	t.Helper()
	ns := &notifyServer{slowStarted: make(chan struct{}, 1), slowCanceled: make(chan struct{}, 1)}
	s := sdk.NewServer(&sdk.Implementation{Name: "up", Version: "1"}, &sdk.ServerOptions{
		RootsListChangedHandler: func(context.Context, *sdk.RootsListChangedRequest) { ns.rootsChanged.Add(1) },
		SubscribeHandler:        func(context.Context, *sdk.SubscribeRequest) error { ns.subscribed.Add(1); return nil },
		UnsubscribeHandler:      func(context.Context, *sdk.UnsubscribeRequest) error { ns.unsubscribed.Add(1); return nil },
	})
	// slow answers only when its context ends: the caller's cancellation
	// must reach it.
	sdk.AddTool(s, &sdk.Tool{Name: "slow"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		ns.slowStarted <- struct{}{}
		select {
		case <-ctx.Done():
			ns.slowCanceled <- struct{}{}
			return nil, nil, ctx.Err()
		case <-time.After(30 * time.Second):
			return textResult("not cancelled"), nil, nil
		}
	})
	sdk.AddTool(s, &sdk.Tool{Name: "ping"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return textResult("pong"), nil, nil
	})
	for _, uri := range []string{"file:///state.txt", "file:///other.txt"} {
		s.AddResource(&sdk.Resource{Name: uri, URI: uri}, func(_ context.Context, r *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: r.Params.URI, Text: "x"}}}, nil
		})
	}
	ns.srv = s
	up := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(up.Close)
	t.Setenv("E2E_MCPN_UP", up.URL)
	return ns
}

// TestMCPCallerNotifications: through the binary, a caller's cancellation
// reaches the server's tool (its context ends), the caller's roots change
// reaches the server, and resource subscriptions work end to end with
// namespaced URIs.
func TestMCPCallerNotifications(t *testing.T) {
	ns := startNotifyServer(t)
	addr := freeAddr(t)
	t.Setenv("E2E_MCPN_DEV", "sk-mcpn-dev")
	startGWAt(t, addr, writeTemp(t, "mcpn.yaml", notifyFile))
	endpoint := "http://" + addr + "/mcp"

	got := &seen{}
	c := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
			got.add("updated:" + r.Params.URI)
		},
	})
	c.AddRoots(&sdk.Root{URI: "file:///work", Name: "work"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: headerRT{
		hdr: map[string]string{"Authorization": "Bearer sk-mcpn-dev"}, base: http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	t.Run("cancelled tool call reaches the server", func(t *testing.T) {
		cctx, ccancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: "up__slow"})
			errc <- err
		}()
		select {
		case <-ns.slowStarted:
		case <-ctx.Done():
			t.Fatal("the slow tool was not called")
		}
		ccancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("caller's call: %v", err)
		}
		select {
		case <-ns.slowCanceled:
		case <-ctx.Done():
			t.Fatal("the server's tool context was not cancelled")
		}
	})

	t.Run("roots list_changed reaches the server", func(t *testing.T) {
		// The upstream session is open (the call above): the caller's
		// notification goes to it.
		c.AddRoots(&sdk.Root{URI: "file:///other", Name: "other"})
		pollUntil(t, "roots list_changed upstream", func() bool { return ns.rootsChanged.Load() >= 1 })
	})

	t.Run("subscribe, updated with the namespaced URI, unsubscribe", func(t *testing.T) {
		ir := cs.InitializeResult()
		if ir.Capabilities.Resources == nil || !ir.Capabilities.Resources.Subscribe {
			t.Fatalf("gw's initialize does not advertise resources.subscribe: %+v", ir.Capabilities.Resources)
		}
		for _, uri := range []string{"up__file:///state.txt", "up__file:///other.txt"} {
			if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
				t.Fatalf("subscribe %s: %v", uri, err)
			}
		}
		if n := ns.subscribed.Load(); n != 2 {
			t.Fatalf("server saw %d subscriptions, want 2", n)
		}
		ns.srv.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: "file:///state.txt"})
		pollUntil(t, "resources/updated", func() bool { return got.has("updated:up__file:///state.txt") })

		if err := cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: "up__file:///state.txt"}); err != nil {
			t.Fatalf("unsubscribe: %v", err)
		}
		if n := ns.unsubscribed.Load(); n != 1 {
			t.Fatalf("server saw %d unsubscriptions, want 1", n)
		}
		// After the unsubscription state.txt's update is not sent; other's,
		// sent after it on the same stream, marks that it would have come.
		ns.srv.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: "file:///state.txt"})
		ns.srv.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: "file:///other.txt"})
		pollUntil(t, "resources/updated of other", func() bool { return got.has("updated:up__file:///other.txt") })
		n := 0
		got.mu.Lock()
		for _, e := range got.events {
			if e == "updated:up__file:///state.txt" {
				n++
			}
		}
		got.mu.Unlock()
		if n != 1 {
			t.Fatalf("state.txt updates after unsubscribe: got %d events, want 1", n)
		}

		// A URI of no server the caller reaches is refused.
		if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "nope__file:///x"}); err == nil {
			t.Fatal("subscribe to an unknown server's resource succeeded")
		}
	})
}
