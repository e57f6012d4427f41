package mcp

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fasthttp"

	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/guard/kinds"
	"gw/edge/usage"
)

type collectSink struct {
	mu  sync.Mutex
	evs []usage.Record
}

func (s *collectSink) AppendRecord(body []byte, r *usage.Record) []byte {
	s.mu.Lock()
	s.evs = append(s.evs, *r)
	s.mu.Unlock()
	return body
}

func (s *collectSink) Finish(dst, _ []byte, _ int) ([]byte, error) { return dst, nil }

func (s *collectSink) Send(context.Context, *usage.Batch) error { return nil }

func (s *collectSink) wait(t *testing.T, n int) []usage.Record {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		got := append([]usage.Record(nil), s.evs...)
		s.mu.Unlock()
		if len(got) >= n {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("want %d usage records", n)
	return nil
}

const policyFile = `_format_version: "1"
api_keys:
  - {display_name: dev, key_hash: "HASH", mcp_access: {allow: ["*"]}}
mcp_servers:
  - {name: up, url: "URL"}
guardrails:
  - {name: no-drop, kind: keyword, hook_point: input, patterns: [{kind: literal, value: DROP TABLE}]}
  - name: mask-ids
    kind: custom
    hook_point: output
    script: |
      export function checkOutput(input) {
        const texts = input.texts.map(t => /id-[0-9]+/.test(t.text) ? t.text.replace(/id-[0-9]+/g, "[ID]") : null);
        return texts.some(t => t !== null) ? { action: "replace", texts } : { action: "allow" };
      }
guardrail_attachments:
  - {guardrail_id: no-drop, scope_type: mcp_server, scope_id: up}
  - {guardrail_id: mask-ids, scope_type: api_key, scope_id: dev}
`

// TestToolCallPolicy: an input guardrail blocks before the upstream is
// called (in-band isError on HTTP 200), an output mask rewrites the
// result's text and structuredContent values, and every call leaves a
// usage record naming the server and the tool.
func TestToolCallPolicy(t *testing.T) {
	var calls atomic.Int32
	srv := sdk.NewServer(&sdk.Implementation{Name: "up", Version: "1"}, nil)
	type in struct {
		Q string `json:"q"`
		Z []any  `json:"z,omitempty"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "query"}, func(_ context.Context, _ *sdk.CallToolRequest, i in) (*sdk.CallToolResult, map[string]any, error) {
		calls.Add(1)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "row id-42 for " + i.Q}}}, map[string]any{"ids": []any{"id-7"}, "n": 1}, nil
	})
	// The bodies the upstream receives, to check arguments a guardrail
	// read but did not change are relayed byte for byte.
	var bodies struct {
		sync.Mutex
		all []string
	}
	sdkH := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies.Lock()
		bodies.all = append(bodies.all, string(b))
		bodies.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		sdkH.ServeHTTP(w, r)
	}))
	defer up.Close()
	src := strings.NewReplacer("URL", up.URL, "HASH", sha256Hex("sk-bench")).Replace(policyFile)
	r := resources.Load([]byte(src), func(string) (string, bool) { return "", false })
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	opt := snapshot.DefaultOptions()
	opt.Guardrails = kinds.Table()
	snap, err := snapshot.Compile(r.Resources, opt)
	if err != nil {
		t.Fatal(err)
	}
	var hold snapshot.Holder
	hold.Store(snap)
	sink := &collectSink{}
	pipe := usage.New(usage.Options{})
	defer pipe.Close(time.Second)
	pipe.SetSinks([]usage.SinkSpec{{Config: usage.SinkConfig{Name: "collect", Kind: "test", BatchSize: 1, FlushInterval: time.Millisecond},
		Build: func() (usage.Sink, error) { return sink, nil }}})
	h := &Handler{Holder: &hold, Usage: pipe, ClientIP: func(*fasthttp.RequestCtx) (netip.Addr, bool) { return netip.Addr{}, false }}
	defer h.Close()
	ctx := serveOnce(h, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, "")
	sid := string(ctx.Response.Header.Peek(hdrSession))

	ctx = serveOnce(h, "", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"up__query","arguments":{"q":"x; DROP TABLE users"}}}`, sid)
	body := string(ctx.Response.Body())
	if ctx.Response.StatusCode() != 200 || !strings.Contains(body, `"isError":true`) || !strings.Contains(body, "blocked by guardrail") || strings.Contains(body, "DROP") {
		t.Fatalf("blocked arguments: %d %s", ctx.Response.StatusCode(), body)
	}
	if calls.Load() != 0 {
		t.Fatal("the upstream was called with blocked arguments")
	}

	const args = `{ "q" : "ok",  "z":[1.50, "\u0041"] }`
	ctx = serveOnce(h, "", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"up__query","arguments":`+args+`}}`, sid)
	body = string(ctx.Response.Body())
	if strings.Contains(body, "id-42") || strings.Contains(body, "id-7") || strings.Contains(body, `"isError":true`) || !strings.Contains(body, "for ok") {
		t.Fatalf("masked result: %s", body)
	}
	bodies.Lock()
	relayed := slices.ContainsFunc(bodies.all, func(b string) bool { return strings.Contains(b, `"arguments":`+args) })
	bodies.Unlock()
	if !relayed {
		t.Errorf("arguments the input guardrail passed were not relayed as sent; upstream bodies: %q", bodies.all)
	}

	recs := sink.wait(t, 2)
	for i, want := range []string{"guardrail_blocked", ""} {
		e := recs[i]
		if e.InboundProtocol != "mcp" || e.Operation != "tools/call" || e.MCPServer != "up" || e.MCPTool != "query" || e.APIKeyName != "dev" ||
			e.ErrorClass != want || e.StatusCode != 200 || len(e.AppliedGuardrails) == 0 {
			t.Errorf("record %d: %+v", i, e)
		}
	}
	if len(recs[1].GuardrailEnforcedHits) == 0 || recs[1].GuardrailEnforcedHits[0].Guardrail != "mask-ids" {
		t.Errorf("mask hit not recorded: %+v", recs[1].GuardrailEnforcedHits)
	}
}
