package mcp

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
	sdk.AddTool(s, &sdk.Tool{Name: "ask"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		roots, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "roots: " + err.Error()}}}, nil, nil
		}
		el, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "elicit: " + err.Error()}}}, nil, nil
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: roots.Roots[0].URI + " " + el.Action + " " + el.Content["name"].(string)}}}, nil, nil
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
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
		},
	})
	c.AddRoots(&sdk.Root{URI: "file:///work"})
	ctx, cs := connectAndWork(t, c, url)
	poll(t, "progress and log", func() bool { return rec.has("progress:half") && rec.has("log:working") })
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "up__grow"}); err != nil {
		t.Fatal(err)
	}
	poll(t, "tools/list_changed", func() bool { return rec.has("tools changed") })
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "up__ask"})
	if err != nil {
		t.Fatal(err)
	}
	if txt := res.Content[0].(*sdk.TextContent).Text; txt != "file:///work accept ada" {
		t.Fatalf("roots/list and elicitation/create: %q", txt)
	}

	plain := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}})
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
	// No roots, no elicitation declared: the upstream's roots/list is refused.
	res, err = cs2.CallTool(ctx, &sdk.CallToolParams{Name: "up__ask"})
	if err != nil {
		t.Fatal(err)
	}
	if txt := res.Content[0].(*sdk.TextContent).Text; !res.IsError || !strings.Contains(strings.ToLower(txt), "method not found") {
		t.Fatalf("ask without roots: %q", txt)
	}
}

func TestEventID(t *testing.T) {
	for _, tc := range []struct {
		in          string
		stream, seq uint64
		ok          bool
	}{
		{"0_1", 0, 1, true},
		{"7_42", 7, 42, true},
		{"18446744073709551615_0", 1<<64 - 1, 0, true},
		{"18446744073709551616_0", 0, 0, false}, // overflow
		{"01_2", 0, 0, false},                   // one spelling per event
		{"1_", 0, 0, false},
		{"_1", 0, 0, false},
		{"1_2_3", 0, 0, false},
		{"a_1", 0, 0, false},
		{"", 0, 0, false},
	} {
		s, q, ok := ParseEventID([]byte(tc.in))
		if ok != tc.ok || ok && (s != tc.stream || q != tc.seq) {
			t.Errorf("ParseEventID(%q) = %d, %d, %v; want %d, %d, %v", tc.in, s, q, ok, tc.stream, tc.seq, tc.ok)
		}
		if ok && string(FormatEventID(nil, s, q)) != tc.in {
			t.Errorf("FormatEventID(%d, %d) = %q; want %q", s, q, FormatEventID(nil, s, q), tc.in)
		}
	}
}

// TestReplayBounds: the buffer keeps ReplayEvents events (and ReplayBytes)
// at most, and a resume behind what it still holds is refused.
func TestReplayBounds(t *testing.T) {
	h := newHub()
	st := h.streams0()
	for i := 0; i < ReplayEvents+10; i++ {
		h.emit(st, []byte(`{"jsonrpc":"2.0","method":"x"}`), false)
	}
	if len(h.events) != ReplayEvents {
		t.Fatalf("held %d events; want %d", len(h.events), ReplayEvents)
	}
	if _, err := h.resume(0, 5); err != errReplayGone {
		t.Fatalf("resume behind the buffer: %v; want errReplayGone", err)
	}
	if _, err := h.resume(0, 10); err != nil {
		t.Fatalf("resume at the oldest held event: %v", err)
	}
	if _, err := h.resume(0, ReplayEvents+11); err == nil || err == errReplayGone {
		t.Fatalf("resume from the future: %v", err)
	}
	if _, err := h.resume(3, 1); err == nil || err == errReplayGone {
		t.Fatalf("resume of a stream never opened: %v", err)
	}
	big := make([]byte, ReplayBytes/4)
	for i := 0; i < 8; i++ {
		h.emit(st, big, false)
	}
	if h.bytes > ReplayBytes {
		t.Fatalf("held %d bytes; want at most %d", h.bytes, ReplayBytes)
	}
}

// TestPostStreamMode: a POST's answer without server messages before it
// is JSON (nothing kept); after a message it is the stream's last event.
func TestPostStreamMode(t *testing.T) {
	h := newHub()
	js := h.open("up", nil, nil)
	if h.emit(js, []byte(`{}`), true) || js.mode != modeJSON || len(h.events) != 0 || h.streams[js.id] != nil {
		t.Fatalf("answer only: mode %d, %d events", js.mode, len(h.events))
	}
	sse := h.open("up", []byte(`"t"`), nil)
	if got := h.related("up", `"t"`); got != sse {
		t.Fatal("progress token does not find its POST")
	}
	if got := h.related("other", ""); got != h.streams0() {
		t.Fatal("a message of another server does not go to the standalone stream")
	}
	h.emit(sse, []byte(`{"method":"notifications/progress"}`), false)
	if !h.emit(sse, []byte(`{"id":1}`), true) || sse.mode != modeSSE || !sse.done || len(h.events) != 2 {
		t.Fatalf("message then answer: mode %d done %v, %d events", sse.mode, sse.done, len(h.events))
	}
	if got := h.related("up", ""); got != h.streams0() {
		t.Fatal("a finished POST still takes messages")
	}
}

// TestServerRequestAnswer: the caller's answer reaches the waiting
// request; unknown and repeated answers are dropped; a closed session
// fails the wait.
func TestServerRequestAnswer(t *testing.T) {
	h := newHub()
	st := h.open("up", nil, nil)
	done := make(chan error, 1)
	go func() {
		r, err := h.request(context.Background(), st, "roots/list", nil)
		if err == nil && string(r.Result) != `{"roots":[]}` {
			err = errors.New("wrong answer " + string(r.Result))
		}
		done <- err
	}()
	poll(t, "the request on the stream", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.events) == 1
	})
	id, _ := jsonrpc.MakeID("gw-1")
	before := unmatchedResponses.Get()
	other, _ := jsonrpc.MakeID("gw-99")
	h.deliver(&jsonrpc.Response{ID: other, Result: []byte(`{}`)})
	h.deliver(&jsonrpc.Response{ID: id, Result: []byte(`{"roots":[]}`)})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	h.deliver(&jsonrpc.Response{ID: id, Result: []byte(`{}`)})
	if got := unmatchedResponses.Get() - before; got != 2 {
		t.Fatalf("unmatched answers counted %d; want 2", got)
	}
	go func() {
		_, err := h.request(context.Background(), st, "roots/list", nil)
		done <- err
	}()
	poll(t, "the second request", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.pending) == 1
	})
	h.close()
	if err := <-done; err == nil {
		t.Fatal("a closed session did not fail the waiting request")
	}
}

// TestWriteResume: a POST's stream resumed while its request still runs
// replays what followed the event and goes on live until the answer; a
// newer reader of a stream ends the older one.
func TestWriteResume(t *testing.T) {
	h := newHub()
	st := h.open("up", nil, nil)
	h.emit(st, []byte(`{"n":1}`), false)
	h.emit(st, []byte(`{"n":2}`), false)
	if _, err := h.resume(st.id, 1); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		w := bufio.NewWriter(pw)
		h.write(w, st, 1, func() {})
		w.Flush()
		pw.Close()
		close(done)
	}()
	r := bufio.NewReader(pr)
	var got []string
	next := func() string {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("read: %v (got %v)", err, got)
			}
			if strings.HasPrefix(line, "id: ") {
				return strings.TrimSpace(line[4:])
			}
		}
	}
	got = append(got, next())
	h.emit(st, []byte(`{"n":3}`), true) // the answer, live
	got = append(got, next())
	<-done
	want := []string{"1_2", "1_3"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("resumed events %v; want %v", got, want)
	}

	// Takeover: a second writer of the standalone stream ends the first.
	sa := h.streams0()
	first := make(chan struct{})
	go func() {
		h.write(bufio.NewWriter(io.Discard), sa, 0, func() {})
		close(first)
	}()
	poll(t, "the first writer attached", func() bool { return h.attached(sa) })
	second := make(chan struct{})
	go func() {
		h.write(bufio.NewWriter(io.Discard), sa, 0, func() {})
		close(second)
	}()
	select {
	case <-first:
	case <-time.After(5 * time.Second):
		t.Fatal("the older writer did not end")
	}
	h.close()
	<-second
}

// connectAndWork connects the SDK client c to gw at url (closed with the
// test), turns the server's logging to debug and calls up__work with a
// progress token, whose answer needs the client's sampling handler.
func connectAndWork(t *testing.T, c *sdk.Client, url string) (context.Context, *sdk.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: authRT{}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
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
	return ctx, cs
}
