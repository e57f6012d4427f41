package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"gw/admin/resources"
)

// mcpFile: two MCP servers (alpha over Streamable HTTP, beta over the
// legacy SSE transport), keys with different tool access and limits, a
// keyword guardrail on beta's results, anonymous access to alpha from one
// loopback address, and OAuth discovery for a JWKS provider.
const mcpFile = `_format_version: "1"
api_keys:
  - {display_name: dev, key_env: E2E_MCP_DEV, mcp_access: {allow: ["*"], deny: [alpha__delete_all]}}
  - {display_name: narrow, key_env: E2E_MCP_NARROW, mcp_access: {allow: [alpha__echo]}}
  - {display_name: none, key_env: E2E_MCP_NONE}
  - {display_name: limited, key_env: E2E_MCP_LIMITED, mcp_access: {allow: ["alpha__*"]}, mcp_rate_limits: {alpha: {rpm: 2}}}
  - {display_name: anon, key_env: E2E_MCP_ANON, mcp_access: {allow: ["alpha__*"]}}
  - {display_name: sso, key_env: E2E_MCP_SSO, jwt_provider: corp, jwt_subject: u-1, mcp_access: {allow: ["beta__fetch"]}}
oidc_providers:
  - name: corp
    issuer: ${E2E_IDP}
    audiences: ["${E2E_GW}/mcp"]
mcp_servers:
  - {name: alpha, url: "${E2E_ALPHA}", allowed_tools: [echo, add, delete_all, slow]}
  - {name: beta, url: "${E2E_BETA}", transport: sse}
mcp_auth_settings:
  - resource_url: ${E2E_GW}/mcp
    anonymous: {api_key_id: "${E2E_ANON_ID}", source_cidrs: [127.0.0.2/32], servers: [alpha]}
guardrails:
  - name: no-secrets
    kind: keyword
    hook_point: output
    patterns: [{kind: literal, value: SECRET-TOKEN}]
guardrail_attachments:
  - {guardrail_id: no-secrets, scope_type: mcp_server, scope_id: beta}
`

type textIn struct {
	Text string `json:"text"`
}

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type sumOut struct {
	Sum int `json:"sum"`
}

func textResult(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// startMCPServers starts alpha (Streamable HTTP) and beta (legacy SSE),
// both written with the official SDK.
func startMCPServers(t *testing.T) (alpha, beta *httptest.Server) {
	t.Helper()
	a := sdk.NewServer(&sdk.Implementation{Name: "alpha", Version: "1"}, nil)
	sdk.AddTool(a, &sdk.Tool{Name: "echo", Description: "echoes text"}, func(_ context.Context, _ *sdk.CallToolRequest, in textIn) (*sdk.CallToolResult, any, error) {
		return textResult("alpha:" + in.Text), nil, nil
	})
	sdk.AddTool(a, &sdk.Tool{Name: "add", Description: "adds"}, func(_ context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, sumOut, error) {
		return nil, sumOut{Sum: in.A + in.B}, nil
	})
	sdk.AddTool(a, &sdk.Tool{Name: "delete_all", Description: "dangerous"}, func(_ context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		return textResult("deleted"), nil, nil
	})
	sdk.AddTool(a, &sdk.Tool{Name: "hidden", Description: "not in allowed_tools"}, func(_ context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		return textResult("hidden"), nil, nil
	})
	a.AddPrompt(&sdk.Prompt{Name: "greet"}, func(_ context.Context, _ *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "hello from alpha"}}}}, nil
	})
	a.AddResource(&sdk.Resource{Name: "readme", URI: "file:///readme.md", MIMEType: "text/markdown"}, func(_ context.Context, r *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: r.Params.URI, MIMEType: "text/markdown", Text: "# alpha"}}}, nil
	})
	b := sdk.NewServer(&sdk.Implementation{Name: "beta", Version: "1"}, nil)
	sdk.AddTool(b, &sdk.Tool{Name: "fetch", Description: "fetches"}, func(_ context.Context, _ *sdk.CallToolRequest, in textIn) (*sdk.CallToolResult, any, error) {
		return textResult("beta:" + in.Text), nil, nil
	})
	sdk.AddTool(b, &sdk.Tool{Name: "leak", Description: "answers a secret in text"}, func(_ context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		return textResult("the key is SECRET-TOKEN"), nil, nil
	})
	sdk.AddTool(b, &sdk.Tool{Name: "leak_structured", Description: "answers a secret in structuredContent"}, func(_ context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, map[string]any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "see structured"}}}, map[string]any{"nested": []any{"SECRET-TOKEN"}}, nil
	})
	alpha = httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return a }, nil))
	beta = httptest.NewServer(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return b }, nil))
	t.Cleanup(alpha.Close)
	t.Cleanup(beta.Close)
	return alpha, beta
}

// startGWAt starts gw on addr (the resources file must know its own URL,
// so a start that lost the port is retried on the same one).
func startGWAt(t *testing.T, addr, file string) {
	t.Helper()
	startRetrying(t, func() (*proc, func() bool) {
		return startProc(t, gwCmd("serve", "--resources-file", file, "--listen", addr, "--debug-listen", ""), addr), readyz(addr)
	})
}

func stopCmd(cmd *exec.Cmd) {
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// headerRT adds fixed headers (the caller's credential) to every request.
type headerRT struct {
	hdr  map[string]string
	base http.RoundTripper
}

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.hdr {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// fromAddr is a transport whose connections leave from a given loopback address.
func fromAddr(ip string) *http.Transport {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Transport{DialContext: d.DialContext}
}

func mcpConnect(t *testing.T, endpoint string, rt http.RoundTripper, hdr map[string]string) (*sdk.ClientSession, error) {
	t.Helper()
	if rt == nil {
		rt = http.DefaultTransport
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: headerRT{hdr: hdr, base: rt}},
		MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func mustConnect(t *testing.T, endpoint, key string) *sdk.ClientSession {
	t.Helper()
	cs, err := mcpConnect(t, endpoint, nil, map[string]string{"Authorization": "Bearer " + key})
	if err != nil {
		t.Fatalf("connect %s: %v", endpoint, err)
	}
	return cs
}

func toolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

func callText(t *testing.T, cs *sdk.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

func TestMCPGateway(t *testing.T) {
	alpha, beta := startMCPServers(t)
	idp, idpKey := startIdP(t)
	addr := freeAddr(t)
	gwURL := "http://" + addr
	keys := map[string]string{"dev": "sk-mcp-dev", "narrow": "sk-mcp-narrow", "none": "sk-mcp-none", "limited": "sk-mcp-limited", "anon": "sk-mcp-anon", "sso": "sk-mcp-sso"}
	for name, k := range keys {
		t.Setenv("E2E_MCP_"+strings.ToUpper(name), k)
	}
	t.Setenv("E2E_IDP", idp.URL)
	t.Setenv("E2E_GW", gwURL)
	t.Setenv("E2E_ALPHA", alpha.URL)
	t.Setenv("E2E_BETA", beta.URL)
	t.Setenv("E2E_ANON_ID", resources.DeriveID(resources.KindAPIKey, "anon"))
	startGWAt(t, addr, writeTemp(t, "mcp.yaml", mcpFile))
	agg := gwURL + "/mcp"

	t.Run("aggregate", func(t *testing.T) {
		cs := mustConnect(t, agg, keys["dev"])
		if ir := cs.InitializeResult(); ir.ServerInfo.Name != "gw" {
			t.Errorf("serverInfo: %+v", ir.ServerInfo)
		}
		want := []string{"alpha__add", "alpha__echo", "beta__fetch", "beta__leak", "beta__leak_structured"}
		if got := toolNames(t, cs); !slices.Equal(got, want) {
			t.Fatalf("tools: got %v, want %v (deny wins over allow, allowed_tools hides 'hidden')", got, want)
		}
		if txt, isErr := callText(t, cs, "alpha__echo", map[string]any{"text": "hi"}); txt != "alpha:hi" || isErr {
			t.Errorf("alpha__echo: %q %v", txt, isErr)
		}
		if txt, _ := callText(t, cs, "beta__fetch", map[string]any{"text": "x"}); txt != "beta:x" {
			t.Errorf("beta__fetch over the legacy SSE transport: %q", txt)
		}
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "alpha__add", Arguments: map[string]any{"a": 2, "b": 3}})
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(res.StructuredContent); string(b) != `{"sum":5}` {
			t.Errorf("structuredContent: %s", b)
		}
		for _, denied := range []string{"alpha__delete_all", "alpha__hidden", "gamma__x", "echo"} {
			_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: denied, Arguments: map[string]any{}})
			var we *jsonrpc.Error
			if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("%s: want an unknown-tool JSON-RPC error, got %v", denied, err)
			}
		}
		prompts, err := cs.ListPrompts(context.Background(), nil)
		if err != nil || len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "alpha__greet" {
			t.Fatalf("prompts/list: %v %+v", err, prompts)
		}
		gp, err := cs.GetPrompt(context.Background(), &sdk.GetPromptParams{Name: "alpha__greet"})
		if err != nil || len(gp.Messages) != 1 {
			t.Fatalf("prompts/get: %v", err)
		}
		rl, err := cs.ListResources(context.Background(), nil)
		if err != nil || len(rl.Resources) != 1 || rl.Resources[0].URI != "alpha__file:///readme.md" {
			t.Fatalf("resources/list: %v %+v", err, rl)
		}
		rr, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: rl.Resources[0].URI})
		if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "# alpha" || rr.Contents[0].URI != "alpha__file:///readme.md" {
			t.Fatalf("resources/read: %v %+v", err, rr)
		}
	})

	t.Run("per-server", func(t *testing.T) {
		cs := mustConnect(t, agg+"/alpha", keys["dev"])
		if ir := cs.InitializeResult(); ir.ServerInfo.Name != "alpha" {
			t.Errorf("per-server initialize presents the upstream: %+v", ir.ServerInfo)
		}
		if got := toolNames(t, cs); !slices.Equal(got, []string{"add", "echo"}) {
			t.Fatalf("tools: %v", got)
		}
		if txt, _ := callText(t, cs, "echo", map[string]any{"text": "direct"}); txt != "alpha:direct" {
			t.Errorf("echo: %q", txt)
		}
		// A session of /mcp/alpha is not one of /mcp/beta.
		req, _ := http.NewRequest("POST", agg+"/beta", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Authorization", "Bearer "+keys["dev"])
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("Accept", "application/json, text/event-stream")
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 404 {
			t.Errorf("foreign session: %v %v", err, resp.StatusCode)
		}
	})

	t.Run("access", func(t *testing.T) {
		cs := mustConnect(t, agg, keys["narrow"])
		if got := toolNames(t, cs); !slices.Equal(got, []string{"alpha__echo"}) {
			t.Fatalf("narrow tools: %v", got)
		}
		if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "beta__fetch", Arguments: map[string]any{"text": "x"}}); err == nil {
			t.Error("narrow key called beta__fetch")
		}
		if _, err := mcpConnect(t, agg+"/beta", nil, map[string]string{"Authorization": "Bearer " + keys["narrow"]}); err == nil {
			t.Error("narrow key reached /mcp/beta")
		}
		none := mustConnect(t, agg, keys["none"])
		if got := toolNames(t, none); len(got) != 0 {
			t.Errorf("a key without mcp_access sees %v", got)
		}
		if _, err := mcpConnect(t, agg, nil, map[string]string{"Authorization": "Bearer sk-wrong"}); err == nil {
			t.Error("an unknown key connected")
		}
	})

	t.Run("guardrail", func(t *testing.T) {
		cs := mustConnect(t, agg, keys["dev"])
		for _, tool := range []string{"beta__leak", "beta__leak_structured"} {
			txt, isErr := callText(t, cs, tool, map[string]any{})
			if !isErr || strings.Contains(txt, "SECRET") || !strings.Contains(txt, "blocked by guardrail") {
				t.Errorf("%s: want an in-band isError block, got %q %v", tool, txt, isErr)
			}
		}
		if txt, isErr := callText(t, cs, "beta__fetch", map[string]any{"text": "fine"}); isErr || txt != "beta:fine" {
			t.Errorf("clean result: %q %v", txt, isErr)
		}
	})

	t.Run("rate-limit", func(t *testing.T) {
		cs := mustConnect(t, agg, keys["limited"])
		for i := 0; i < 2; i++ {
			toolNames(t, cs) // list calls are not counted
			if txt, _ := callText(t, cs, "alpha__echo", map[string]any{"text": "n"}); txt != "alpha:n" {
				t.Fatalf("call %d: %q", i, txt)
			}
		}
		_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "alpha__echo", Arguments: map[string]any{"text": "n"}})
		if err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
			t.Fatalf("third call within the minute: want 429, got %v", err)
		}
		toolNames(t, cs) // the session still works for lists
	})

	t.Run("anonymous", func(t *testing.T) {
		cs, err := mcpConnect(t, agg+"/alpha", fromAddr("127.0.0.2"), nil)
		if err != nil {
			t.Fatalf("anonymous from 127.0.0.2: %v", err)
		}
		if txt, _ := callText(t, cs, "echo", map[string]any{"text": "anon"}); txt != "alpha:anon" {
			t.Errorf("anonymous echo: %q", txt)
		}
		if _, err := mcpConnect(t, agg+"/beta", fromAddr("127.0.0.2"), nil); err == nil {
			t.Error("anonymous reached beta (not in anonymous.servers)")
		}
		if _, err := mcpConnect(t, agg+"/alpha", fromAddr("127.0.0.1"), map[string]string{"X-Forwarded-For": "127.0.0.2", "X-Real-IP": "127.0.0.2"}); err == nil {
			t.Error("anonymous from 127.0.0.1 with a forged header was admitted")
		}
		// The aggregate endpoint has no aggregate_entry: credential-less
		// callers get the 401 that starts OAuth discovery.
		resp := postInit(t, agg, fromAddr("127.0.0.2"), "")
		if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
			t.Errorf("aggregate anonymous: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	})

	t.Run("oauth-discovery", func(t *testing.T) {
		resp := postInit(t, agg, nil, "")
		if resp.StatusCode != 401 {
			t.Fatalf("credential-less: %d", resp.StatusCode)
		}
		ch, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
		if err != nil || len(ch) == 0 || ch[0].Scheme != "bearer" {
			t.Fatalf("WWW-Authenticate: %v %+v", err, ch)
		}
		mdURL := ch[0].Params["resource_metadata"]
		if mdURL != gwURL+"/.well-known/oauth-protected-resource/mcp" {
			t.Fatalf("resource_metadata: %q", mdURL)
		}
		md, err := oauthex.GetProtectedResourceMetadata(context.Background(), mdURL, agg, http.DefaultClient)
		if err != nil || !slices.Equal(md.AuthorizationServers, []string{idp.URL}) {
			t.Fatalf("metadata: %v %+v", err, md)
		}
		// The login exchange is the issuer's; the access token it issues
		// names the resource as audience.
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": md.AuthorizationServers[0], "aud": []string{md.Resource}, "sub": "u-1",
			"exp": time.Now().Add(time.Hour).Unix()})
		tok.Header["kid"] = "corp-1"
		s, err := tok.SignedString(idpKey)
		if err != nil {
			t.Fatal(err)
		}
		cs := mustConnect(t, agg, s)
		if got := toolNames(t, cs); !slices.Equal(got, []string{"beta__fetch"}) {
			t.Errorf("token caller's tools: %v", got)
		}
		bad := postInit(t, agg, nil, "Bearer "+s[:len(s)-4]+"AAAA")
		if bad.StatusCode != 401 || !strings.Contains(bad.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Errorf("tampered token: %d %q", bad.StatusCode, bad.Header.Get("WWW-Authenticate"))
		}
	})
}

func postInit(t *testing.T, url string, rt http.RoundTripper, auth string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}
