package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// streamFile: one MCP server whose tools send progress, logging and a
// sampling request, and change its tool list.
const streamFile = `_format_version: "1"
api_keys:
  - {display_name: dev, key_env: E2E_MCPS_DEV, mcp_access: {allow: ["*"]}}
mcp_servers:
  - {name: up, url: "${E2E_MCPS_UP}"}
`

// startStreamServer starts an SDK server over Streamable HTTP: work
// reports progress, logs and asks the client for a sampling completion;
// grow adds a tool (a tools/list_changed to every session).
func startStreamServer(t *testing.T) {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "up", Version: "1"}, &sdk.ServerOptions{HasTools: true})
	sdk.AddTool(s, &sdk.Tool{Name: "work"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half"})
		}
		req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Data: "working"})
		res, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 10,
			Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "say hi"}}}})
		if err != nil {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "sampling failed: " + err.Error()}}}, nil, nil
		}
		txt := ""
		if tc, ok := res.Content.(*sdk.TextContent); ok {
			txt = tc.Text
		}
		return textResult("sampled:" + txt), nil, nil
	})
	var n atomic.Int32
	sdk.AddTool(s, &sdk.Tool{Name: "grow"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		name := "extra_" + strconv.Itoa(int(n.Add(1)))
		sdk.AddTool(s, &sdk.Tool{Name: name}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return textResult(name), nil, nil
		})
		return textResult(name), nil, nil
	})
	up := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(up.Close)
	t.Setenv("E2E_MCPS_UP", up.URL)
}

// seen records what a caller received, for polling.
type seen struct {
	mu     sync.Mutex
	events []string
}

func (s *seen) add(e string) {
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
}

func (s *seen) has(e string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.events {
		if x == e {
			return true
		}
	}
	return false
}

// pollUntil polls cond until it holds or 10 s pass.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sseEvent is one event of a caller stream.
type sseEvent struct {
	id   string
	data map[string]any
}

func readEvent(t *testing.T, r *bufio.Reader) sseEvent {
	t.Helper()
	ev, err := nextEvent(r)
	if err != nil {
		t.Fatalf("read event: %v", err)
	}
	return ev
}

// nextEvent reads one SSE event with data (comments are skipped).
func nextEvent(r *bufio.Reader) (sseEvent, error) {
	var ev sseEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "" && ev.data != nil:
			return ev, nil
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[6:]), &ev.data); err != nil {
				return ev, err
			}
		}
	}
}

// seqOf is the event number of an event ID "<stream>_<seq>".
func seqOf(id string) int {
	_, s, _ := strings.Cut(id, "_")
	n, _ := strconv.Atoi(s)
	return n
}

func TestMCPStreams(t *testing.T) {
	startStreamServer(t)
	addr := freeAddr(t)
	t.Setenv("E2E_MCPS_DEV", "sk-mcps-dev")
	startGWAt(t, addr, writeTemp(t, "mcps.yaml", streamFile))
	endpoint := "http://" + addr + "/mcp"
	hdr := map[string]string{"Authorization": "Bearer sk-mcps-dev"}

	t.Run("sdk caller: progress, logging, sampling, list_changed", func(t *testing.T) {
		got := &seen{}
		c := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, &sdk.ClientOptions{
			CreateMessageHandler: func(_ context.Context, r *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
				got.add("sampling")
				return &sdk.CreateMessageResult{Model: "m", Role: "assistant", Content: &sdk.TextContent{Text: "hi there"}}, nil
			},
			ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
				got.add("progress:" + r.Params.Message + ":" + toString(r.Params.ProgressToken))
			},
			LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) {
				got.add("log:" + toString(r.Params.Data))
			},
			ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { got.add("tools changed") },
		})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: headerRT{hdr: hdr, base: http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatalf("logging/setLevel: %v", err)
		}
		p := &sdk.CallToolParams{Name: "up__work"}
		p.SetProgressToken("tok-1")
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if txt := res.Content[0].(*sdk.TextContent).Text; txt != "sampled:hi there" || res.IsError {
			t.Fatalf("work: %q isError=%v", txt, res.IsError)
		}
		pollUntil(t, "progress and log", func() bool { return got.has("progress:half:tok-1") && got.has("log:working") && got.has("sampling") })

		// A list change reaches the caller (standalone stream); the
		// merged list then has the new tool.
		if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "up__grow"}); err != nil {
			t.Fatal(err)
		}
		pollUntil(t, "tools/list_changed", func() bool { return got.has("tools changed") })
		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, tl := range lt.Tools {
			found = found || strings.HasPrefix(tl.Name, "up__extra_")
		}
		if !found {
			t.Fatalf("tools after list_changed: %v", lt.Tools)
		}
	})

	t.Run("caller without sampling: method not found upstream", func(t *testing.T) {
		cs := mustConnect(t, endpoint, "sk-mcps-dev")
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "up__work"})
		if err != nil {
			t.Fatal(err)
		}
		if txt := res.Content[0].(*sdk.TextContent).Text; !res.IsError || !strings.Contains(strings.ToLower(txt), "method not found") {
			t.Fatalf("work without sampling: %q isError=%v", txt, res.IsError)
		}
	})

	// Raw HTTP: the SSE answer of a POST, its resumption, and the
	// standalone stream resumed after a dropped connection.
	post := func(t *testing.T, sid, accept, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", endpoint, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer sk-mcps-dev")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", accept)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	get := func(t *testing.T, sid, last string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", endpoint, nil)
		req.Header.Set("Authorization", "Bearer sk-mcps-dev")
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		if last != "" {
			req.Header.Set("Last-Event-ID", last)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	both := "application/json, text/event-stream"
	init := post(t, "", both, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}`)
	init.Body.Close()
	sid := init.Header.Get("Mcp-Session-Id")
	if init.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d", init.StatusCode)
	}

	t.Run("POST answered as SSE, then resumed", func(t *testing.T) {
		resp := post(t, sid, both, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"up__work","_meta":{"progressToken":42}}}`)
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("status %d content-type %q", resp.StatusCode, ct)
		}
		r := bufio.NewReader(resp.Body)
		prog := readEvent(t, r)
		if prog.data["method"] != "notifications/progress" || prog.data["params"].(map[string]any)["progressToken"] != float64(42) {
			t.Fatalf("first event: %+v", prog)
		}
		final := readEvent(t, r)
		if final.data["id"] != float64(7) || final.data["result"] == nil {
			t.Fatalf("final event: %+v", final)
		}
		stream, _, _ := strings.Cut(prog.id, "_")
		if prog.id != stream+"_1" || final.id != stream+"_2" {
			t.Fatalf("event ids %q %q", prog.id, final.id)
		}
		// Resuming after the progress event replays the answer, and the
		// stream ends after it.
		g := get(t, sid, prog.id)
		defer g.Body.Close()
		if g.StatusCode != 200 {
			t.Fatalf("resume: %d", g.StatusCode)
		}
		gr := bufio.NewReader(g.Body)
		if ev := readEvent(t, gr); ev.id != final.id || ev.data["id"] != float64(7) {
			t.Fatalf("replayed: %+v", ev)
		}
		if _, err := gr.ReadString('\n'); err == nil {
			t.Fatal("the resumed POST stream did not end after its answer")
		}
	})

	t.Run("JSON-only caller gets JSON", func(t *testing.T) {
		resp := post(t, sid, "application/json", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"up__work","_meta":{"progressToken":43}}}`)
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "application/json" {
			t.Fatalf("status %d content-type %q", resp.StatusCode, ct)
		}
	})

	t.Run("standalone stream resumed after a dropped connection", func(t *testing.T) {
		g := get(t, sid, "")
		if g.StatusCode != 200 {
			t.Fatalf("GET: %d", g.StatusCode)
		}
		evs := make(chan sseEvent, 16)
		go func() {
			defer close(evs)
			r := bufio.NewReader(g.Body)
			for {
				ev, err := nextEvent(r)
				if err != nil {
					return
				}
				evs <- ev
			}
		}()
		// The upstream's own GET stream may open after the first change:
		// grow until a change comes through.
		var first sseEvent
		deadline := time.Now().Add(10 * time.Second)
		for first.id == "" {
			if time.Now().After(deadline) {
				t.Fatal("no list_changed on the standalone stream")
			}
			post(t, sid, "application/json", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"up__grow"}}`).Body.Close()
			select {
			case first = <-evs:
			case <-time.After(500 * time.Millisecond):
			}
		}
		if first.data["method"] != "notifications/tools/list_changed" || !strings.HasPrefix(first.id, "0_") {
			t.Fatalf("standalone event: %+v", first)
		}
		g.Body.Close() // the connection drops
		for range evs {
		}
		// Missed while disconnected: a change, buffered for the resume.
		post(t, sid, "application/json", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"up__grow"}}`).Body.Close()
		var missed sseEvent
		pollUntil(t, "the missed event replayed", func() bool {
			g2 := get(t, sid, first.id)
			defer g2.Body.Close()
			if g2.StatusCode != 200 {
				t.Fatalf("resume: %d", g2.StatusCode)
			}
			done := make(chan sseEvent, 1)
			go func() {
				if ev, err := nextEvent(bufio.NewReader(g2.Body)); err == nil {
					done <- ev
				}
			}()
			select {
			case missed = <-done:
				return true
			case <-time.After(300 * time.Millisecond):
				return false
			}
		})
		if missed.data["method"] != "notifications/tools/list_changed" || seqOf(missed.id) <= seqOf(first.id) || !strings.HasPrefix(missed.id, "0_") {
			t.Fatalf("replayed %+v after %s", missed, first.id)
		}
		for _, tc := range []struct {
			last string
			want int
		}{{"x_1", 400}, {"0_999999", 400}, {"999_1", 400}} {
			r := get(t, sid, tc.last)
			r.Body.Close()
			if r.StatusCode != tc.want {
				t.Errorf("Last-Event-ID %q: %d, want %d", tc.last, r.StatusCode, tc.want)
			}
		}
	})
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
