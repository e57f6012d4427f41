package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpOpenAPIFile: "shop", a type openapi server whose OpenAPI 3.1 YAML
// document is fetched from the backend (servers entry relative to it,
// credential from a provider key); "inv", the same backend described by an
// inline OpenAPI 3.0 JSON document with an explicit url and a header; a
// keyword guardrail on shop's results; a key with a tools/call limit.
const mcpOpenAPIFile = `_format_version: "1"
api_keys:
  - {display_name: dev, key_env: E2E_OA_DEV, mcp_access: {allow: ["*"], deny: [shop__delete_item]}}
  - {display_name: limited, key_env: E2E_OA_LIMITED, mcp_access: {allow: ["inv__*"]}, mcp_rate_limits: {inv: {rpm: 1}}}
provider_keys:
  - {display_name: shop-api, api_key: "${E2E_OA_UPSTREAM_KEY}", api_base: "${E2E_OA_BACKEND}"}
mcp_servers:
  - name: shop
    type: openapi
    spec_url: ${E2E_OA_BACKEND}/spec/openapi.yaml
    provider_key: shop-api
  - name: inv
    type: openapi
    url: ${E2E_OA_BACKEND}/api
    headers: {X-Tenant: t-1}
    spec: |
      {"openapi": "3.0.3", "info": {"title": "Inventory", "version": "1"},
       "paths": {"/stock/{sku}": {"get": {"operationId": "stock", "summary": "Stock of one SKU",
         "parameters": [{"name": "sku", "in": "path", "required": true, "schema": {"type": "string"}}]}}}}
guardrails:
  - name: no-secrets
    kind: keyword
    hook_point: output
    patterns: [{kind: literal, value: SECRET-TOKEN}]
guardrail_attachments:
  - {guardrail_id: no-secrets, scope_type: mcp_server, scope_id: shop}
`

const shopSpec = `openapi: 3.1.0
info: {title: Shop, version: "1"}
servers: [{url: /api}]
paths:
  /items/{id}:
    get:
      operationId: get_item
      summary: Reads an item
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
        - {name: fields, in: query, schema: {type: array, items: {type: string}}}
        - {name: X-Trace, in: header, schema: {type: string}}
    delete:
      operationId: delete_item
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
  /items:
    post:
      operationId: create_item
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Item"}
  /broken:
    get: {operationId: broken}
  /secret:
    get: {operationId: secret}
components:
  schemas:
    Item:
      type: object
      required: [name]
      properties:
        name: {type: string}
        tags: {type: array, items: {type: string}}
`

// openAPIBackend is the HTTP API behind both servers; it records what gw sent.
type openAPIBackend struct {
	mu   sync.Mutex
	seen []string // method path?query | Authorization | X-Tenant | X-Trace | body
}

func (b *openAPIBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	b.mu.Lock()
	b.seen = append(b.seen, r.Method+" "+r.URL.RequestURI()+"|"+r.Header.Get("Authorization")+"|"+r.Header.Get("X-Tenant")+"|"+r.Header.Get("X-Trace")+"|"+string(body))
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/spec/openapi.yaml":
		w.Header().Set("Content-Type", "application/yaml")
		io.WriteString(w, shopSpec)
	case r.URL.Path == "/api/items/42" && r.Method == http.MethodGet:
		io.WriteString(w, `{"id":42,"name":"lamp","fields":"`+strings.Join(r.URL.Query()["fields"], ",")+`"}`)
	case r.URL.Path == "/api/items" && r.Method == http.MethodPost:
		w.WriteHeader(http.StatusCreated)
		w.Write(body)
	case r.URL.Path == "/api/broken":
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":"database down"}`)
	case r.URL.Path == "/api/secret":
		io.WriteString(w, `{"token":"SECRET-TOKEN"}`)
	case strings.HasPrefix(r.URL.Path, "/api/stock/"):
		io.WriteString(w, `{"sku":"`+strings.TrimPrefix(r.URL.Path, "/api/stock/")+`","count":3}`)
	default:
		http.NotFound(w, r)
	}
}

func (b *openAPIBackend) last() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.seen) == 0 {
		return ""
	}
	return b.seen[len(b.seen)-1]
}

func TestMCPOpenAPIE2E(t *testing.T) {
	be := &openAPIBackend{}
	backend := httptest.NewServer(be)
	t.Cleanup(backend.Close)
	addr := freeAddr(t)
	gwURL := "http://" + addr
	t.Setenv("E2E_OA_DEV", "sk-oa-dev")
	t.Setenv("E2E_OA_LIMITED", "sk-oa-limited")
	t.Setenv("E2E_OA_UPSTREAM_KEY", "sk-shop-upstream")
	t.Setenv("E2E_OA_BACKEND", backend.URL)
	startGWAt(t, addr, writeTemp(t, "mcp-openapi.yaml", mcpOpenAPIFile))

	t.Run("aggregate", func(t *testing.T) {
		cs := mustConnect(t, gwURL+"/mcp", "sk-oa-dev")
		want := []string{"inv__stock", "shop__broken", "shop__create_item", "shop__get_item", "shop__secret"}
		if got := toolNames(t, cs); !slices.Equal(got, want) {
			t.Fatalf("tools: got %v, want %v (delete_item denied)", got, want)
		}
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range res.Tools {
			if tl.Name != "shop__create_item" {
				continue
			}
			b, _ := json.Marshal(tl.InputSchema)
			if !strings.Contains(string(b), `"body":{"$ref":"#/$defs/Item"}`) || !strings.Contains(string(b), `"required":["name"]`) {
				t.Errorf("create_item inputSchema: %s", b)
			}
		}

		txt, isErr := callText(t, cs, "shop__get_item", map[string]any{"id": 42, "fields": []string{"name", "price"}, "X-Trace": "tr-9"})
		if isErr || txt != `{"id":42,"name":"lamp","fields":"name,price"}` {
			t.Errorf("get_item: %q %v", txt, isErr)
		}
		if got := be.last(); got != "GET /api/items/42?fields=name&fields=price|Bearer sk-shop-upstream||tr-9|" {
			t.Errorf("backend saw %q (provider key credential, header parameter, repeated query)", got)
		}
		txt, isErr = callText(t, cs, "shop__create_item", map[string]any{"body": map[string]any{"name": "desk", "tags": []string{"oak"}}})
		if isErr || txt != `{"name":"desk","tags":["oak"]}` {
			t.Errorf("create_item: %q %v", txt, isErr)
		}
		if txt, isErr = callText(t, cs, "shop__broken", nil); !isErr || !strings.HasPrefix(txt, "HTTP 500") || !strings.Contains(txt, "database down") {
			t.Errorf("non-2xx: %q %v", txt, isErr)
		}
		if txt, isErr = callText(t, cs, "shop__secret", nil); !isErr || strings.Contains(txt, "SECRET-TOKEN") {
			t.Errorf("guardrail on the result: %q %v", txt, isErr)
		}
		if txt, isErr = callText(t, cs, "inv__stock", map[string]any{"sku": "A-1"}); isErr || txt != `{"sku":"A-1","count":3}` {
			t.Errorf("inline spec: %q %v", txt, isErr)
		}
		if got := be.last(); got != "GET /api/stock/A-1||t-1||" {
			t.Errorf("backend saw %q (server headers)", got)
		}
		_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "shop__delete_item", Arguments: map[string]any{"id": 1}})
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("denied tool: %v", err)
		}
	})

	t.Run("per-server", func(t *testing.T) {
		cs := mustConnect(t, gwURL+"/mcp/inv", "sk-oa-limited")
		if ir := cs.InitializeResult(); ir.ServerInfo.Title != "Inventory" || ir.Capabilities.Tools == nil || ir.Capabilities.Prompts != nil {
			t.Errorf("initialize: %+v %+v", ir.ServerInfo, ir.Capabilities)
		}
		if got := toolNames(t, cs); !slices.Equal(got, []string{"stock"}) {
			t.Errorf("tools: %v", got)
		}
		if txt, _ := callText(t, cs, "stock", map[string]any{"sku": "B"}); txt != `{"sku":"B","count":3}` {
			t.Errorf("stock: %q", txt)
		}
		_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "stock", Arguments: map[string]any{"sku": "B"}})
		if err == nil || !strings.Contains(err.Error(), "Too Many Requests") { // HTTP 429
			t.Errorf("second call within rpm 1: %v", err)
		}
	})

	t.Run("bad document fails the load", func(t *testing.T) {
		bad := strings.Replace(mcpOpenAPIFile, `"schema": {"type": "string"}}]}}}}`, `"schema": {"$ref": "#/components/schemas/Nope"}}]}}}}`, 1)
		if bad == mcpOpenAPIFile {
			t.Fatal("the bad document was not made")
		}
		// A rejected file at startup leaves gw up but not ready, with the
		// report on stderr.
		cmd := gwCmd("serve", "--resources-file", writeTemp(t, "bad.yaml", bad), "--listen", freeAddr(t), "--debug-listen", "")
		buf := &lockedBuffer{}
		cmd.Stderr = buf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer stopCmd(cmd)
		const want = "mcp_servers[1] (name=inv): spec: cannot read the OpenAPI document"
		deadline := time.Now().Add(15 * time.Second)
		for !strings.Contains(buf.String(), want) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if !strings.Contains(buf.String(), want) {
			t.Errorf("gw serve with a dangling $ref: no %q in\n%s", want, buf.String())
		}
	})
}
