package mock

import (
	"context"
	"net/http"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// The mock's MCP server at /mcp, written with the official Go SDK: a few
// deterministic tools, a prompt and a resource, so `make run` (and gw's
// MCP endpoints) have a real MCP upstream. Stateless Streamable HTTP with
// JSON answers: the fasthttp adaptor buffers each answer, which is all
// a stateless server needs.

type mcpTextIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type mcpAddIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type mcpSumOut struct {
	Sum float64 `json:"sum"`
}

func newMCPServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "gw-mock", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes its text argument"}, func(_ context.Context, _ *sdk.CallToolRequest, in mcpTextIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "upper", Description: "Upper-cases its text argument"}, func(_ context.Context, _ *sdk.CallToolRequest, in mcpTextIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.ToUpper(in.Text)}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Adds two numbers (structured result)"}, func(_ context.Context, _ *sdk.CallToolRequest, in mcpAddIn) (*sdk.CallToolResult, mcpSumOut, error) {
		return nil, mcpSumOut{Sum: in.A + in.B}, nil
	})
	s.AddPrompt(&sdk.Prompt{Name: "greet", Description: "A fixed greeting"}, func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "Hello from the gw mock"}}}}, nil
	})
	s.AddResource(&sdk.Resource{Name: "readme", URI: "mock://readme", MIMEType: "text/plain"}, func(_ context.Context, r *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: r.Params.URI, MIMEType: "text/plain", Text: "gw mock MCP server"}}}, nil
	})
	return s
}

var strMCPPath = []byte("/mcp")

// mcpHandler serves /mcp; built on the first MCP request (the SDK server is
// safe for concurrent sessions), not at package init: every gw process links
// the mock, and `gw serve` must not pay for its MCP server in start time and
// idle memory.
var mcpHandler = sync.OnceValue(func() fasthttp.RequestHandler {
	srv := newMCPServer()
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	return fasthttpadaptor.NewFastHTTPHandler(h)
})

func (s *Server) serveMCP(ctx *fasthttp.RequestCtx) { mcpHandler()(ctx) }
