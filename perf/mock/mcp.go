package mock

import (
	"context"
	"encoding/json"
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

// The mock's OpenAPI API under /docs (examples/gw.yaml's type openapi
// server "docs"): /docs/openapi.json describes two operations, which
// answer deterministically.
var strDocsPrefix = []byte("/docs/")

const docsOpenAPI = `{
  "openapi": "3.0.3",
  "info": {"title": "gw mock docs", "version": "1"},
  "servers": [{"url": "/docs"}],
  "paths": {
    "/pages/{slug}": {
      "get": {
        "operationId": "get_page",
        "summary": "Reads one documentation page",
        "parameters": [
          {"name": "slug", "in": "path", "required": true, "schema": {"type": "string"}},
          {"name": "lang", "in": "query", "schema": {"type": "string", "enum": ["en", "fr"]}}
        ],
        "responses": {"200": {"description": "the page", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Page"}}}}}
      }
    },
    "/search": {
      "post": {
        "operationId": "search",
        "summary": "Searches the documentation",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Query"}}}},
        "responses": {"200": {"description": "matching page slugs"}}
      }
    }
  },
  "components": {"schemas": {
    "Page": {"type": "object", "properties": {"slug": {"type": "string"}, "lang": {"type": "string"}, "text": {"type": "string"}}},
    "Query": {"type": "object", "required": ["q"], "properties": {"q": {"type": "string", "description": "words to find"}, "limit": {"type": "integer", "minimum": 1}}}
  }}
}`

func (s *Server) serveDocs(ctx *fasthttp.RequestCtx) {
	path := string(ctx.Path()[len(strDocsPrefix)-1:])
	ctx.SetContentType("application/json")
	switch {
	case path == "/openapi.json" && ctx.IsGet():
		ctx.SetBodyString(docsOpenAPI)
	case strings.HasPrefix(path, "/pages/") && ctx.IsGet():
		slug := path[len("/pages/"):]
		lang := string(ctx.QueryArgs().Peek("lang"))
		if lang == "" {
			lang = "en"
		}
		b, _ := json.Marshal(map[string]string{"slug": slug, "lang": lang, "text": "Page " + slug + " of the gw mock docs"})
		ctx.SetBody(b)
	case path == "/search" && ctx.IsPost():
		var q struct {
			Q string `json:"q"`
		}
		if err := json.Unmarshal(ctx.PostBody(), &q); err != nil || q.Q == "" {
			ctx.SetStatusCode(fasthttp.StatusBadRequest)
			ctx.SetBodyString(`{"error":"q is required"}`)
			return
		}
		b, _ := json.Marshal(map[string]any{"q": q.Q, "results": []string{"getting-started", "mcp"}})
		ctx.SetBody(b)
	default:
		ctx.SetStatusCode(fasthttp.StatusNotFound)
		ctx.SetBodyString(`{"error":"not found"}`)
	}
}
