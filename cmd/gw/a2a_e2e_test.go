package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"gw/edge/usage/usagetest"
)

const a2aFile = `_format_version: "1"
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_agents: ["ech*"]}
  - {display_name: guarded, key_env: A2A_GUARDED_KEY, allowed_agents: ["echo"], team_id: red}
  - {display_name: monitored, key_env: A2A_MONITORED_KEY, allowed_agents: ["echo"]}
  - {display_name: limited, key_env: A2A_LIMITED_KEY, allowed_agents: ["echo"], rate_limit: {rpm: 2}}
  - {display_name: blue, key_env: A2A_BLUE_KEY, allowed_agents: ["echo"], team_id: blue}
a2a_agents:
  - name: echo
    url: ${A2A_AGENT}
    description: repeats what it is told
    agent_card_path: /card.json
    headers: {x-agent-token: agent-secret}
  - name: hidden
    url: ${A2A_AGENT}
guardrails:
  - {name: in-words, kind: keyword, hook_point: input, patterns: [{kind: literal, value: forbidden-word}]}
  - {name: out-words, kind: keyword, hook_point: output, patterns: [{kind: literal, value: classified}]}
  - {name: pii-mask, kind: pii, detectors: [email]}
  - {name: watch, kind: keyword, enforcement_mode: monitor, patterns: [{kind: literal, value: forbidden-word}]}
guardrail_attachments:
  - {guardrail_id: in-words, scope_type: api_key, scope_id: guarded}
  - {guardrail_id: out-words, scope_type: team, scope_id: red}
  - {guardrail_id: pii-mask, scope_type: api_key, scope_id: guarded}
  - {guardrail_id: watch, scope_type: api_key, scope_id: monitored}
rate_limit_policies:
  - {name: blue-team, scope: team, scope_ref: blue, window: minute, max_requests: 1}
observability_exporters:
  - {name: otel, kind: otlp_http, endpoint: "${E2E_OTLP}", batch_size: 1, flush_interval_ms: 100}
`

// a2aAgent is a real A2A agent over HTTP: its card, and the JSON-RPC
// methods message/send (a Message result) and message/stream (SSE: task
// status updates and an artifact, one event per release).
type a2aAgent struct {
	url     string
	release chan struct{}
	mu      sync.Mutex
	headers []http.Header
	texts   []string // the first text part of each JSON-RPC call
}

func (a *a2aAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.headers = append(a.headers, r.Header.Clone())
	a.mu.Unlock()
	if r.URL.Path == "/card.json" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"protocolVersion":"0.3.0","name":"Echo","description":"echo agent","url":"`+a.url+`",`+
			`"preferredTransport":"JSONRPC","additionalInterfaces":[{"url":"`+a.url+`","transport":"JSONRPC"},{"url":"`+a.url+`/grpc","transport":"GRPC"}],`+
			`"version":"1.0.0","capabilities":{"streaming":true},"securitySchemes":{"agentKey":{"type":"apiKey","in":"header","name":"x-agent-token"}},`+
			`"security":[{"agentKey":[]}],"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],`+
			`"skills":[{"id":"echo","name":"echo","description":"echoes","tags":["echo"]}]}`)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Message struct {
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"message"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad json", 400)
		return
	}
	text := ""
	if len(req.Params.Message.Parts) > 0 {
		text = req.Params.Message.Parts[0].Text
	}
	a.mu.Lock()
	a.texts = append(a.texts, text)
	a.mu.Unlock()
	if text == "who" { // an answer with an address the pii guardrail masks
		text = "ops@example.org"
	}
	switch req.Method {
	case "message/send":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"kind":"message","messageId":"m-2","role":"agent","parts":[{"kind":"text","text":"echo: `+text+`"}]}}`)
	case "message/stream":
		w.Header().Set("Content-Type", "text/event-stream")
		events := []string{
			`{"kind":"status-update","taskId":"t-1","contextId":"c-1","status":{"state":"working"},"final":false}`,
			`{"kind":"artifact-update","taskId":"t-1","contextId":"c-1","artifact":{"artifactId":"a-1","parts":[{"kind":"text","text":"echo: ` + text + `"}]}}`,
			`{"kind":"status-update","taskId":"t-1","contextId":"c-1","status":{"state":"completed"},"final":true}`,
		}
		for i, ev := range events {
			if i > 0 {
				select {
				case <-a.release:
				case <-r.Context().Done(): // gw ended the stream
					return
				}
			}
			io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":"+string(req.ID)+",\"result\":"+ev+"}\n\n")
			w.(http.Flusher).Flush()
		}
	default:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"error":{"code":-32601,"message":"Method not found"}}`)
	}
}

// TestA2AE2E: an A2A agent behind the real binary: its card served with
// gw's address, message/send and message/stream (events relayed one by
// one), allowed_agents, caller auth, JSON-RPC framing errors and usage
// records.
func TestA2AE2E(t *testing.T) {
	agent := &a2aAgent{release: make(chan struct{})}
	agent.url = startHTTP(t, agent)
	rcv := usagetest.StartOTLP(t)
	t.Setenv("A2A_AGENT", agent.url)
	t.Setenv("E2E_OTLP", rcv.URL)
	for k, v := range map[string]string{"A2A_GUARDED_KEY": "guarded-e2e", "A2A_MONITORED_KEY": "monitored-e2e", "A2A_LIMITED_KEY": "limited-e2e", "A2A_BLUE_KEY": "blue-e2e"} {
		t.Setenv(k, v)
	}
	g := startGW(t, writeTemp(t, "a2a.yaml", a2aFile))
	base := "http://" + g.addr

	call := func(t *testing.T, method, path, key, body string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, b
	}
	const send = `{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":{"kind":"message","messageId":"m-1","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`

	t.Run("card", func(t *testing.T) {
		for _, p := range []string{"/a2a/echo/.well-known/agent-card.json", "/a2a/echo"} {
			resp, b := call(t, "GET", p, "caller-e2e", "")
			var card map[string]any
			if err := json.Unmarshal(b, &card); err != nil || resp.StatusCode != 200 {
				t.Fatalf("%s: status %d %v: %s", p, resp.StatusCode, err, b)
			}
			if card["url"] != base+"/a2a/echo" || card["name"] != "Echo" || strings.Contains(string(b), agent.url) {
				t.Fatalf("card not rewritten: %s", b)
			}
			if _, ok := card["securitySchemes"].(map[string]any)["gw"]; !ok {
				t.Fatalf("security schemes: %s", b)
			}
		}
		resp, b := call(t, "GET", "/a2a", "caller-e2e", "")
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"name":"echo"`) || strings.Contains(string(b), "hidden") {
			t.Fatalf("list: status %d: %s", resp.StatusCode, b)
		}
	})
	t.Run("message/send", func(t *testing.T) {
		resp, b := call(t, "POST", "/a2a/echo", "caller-e2e", send)
		var out struct {
			ID     int `json:"id"`
			Result struct {
				Parts []struct{ Text string } `json:"parts"`
			} `json:"result"`
		}
		if err := json.Unmarshal(b, &out); err != nil || resp.StatusCode != 200 || out.ID != 7 || len(out.Result.Parts) != 1 || out.Result.Parts[0].Text != "echo: hi" {
			t.Fatalf("status %d %v: %s", resp.StatusCode, err, b)
		}
		agent.mu.Lock()
		h := agent.headers[len(agent.headers)-1]
		agent.mu.Unlock()
		if h.Get("X-Agent-Token") != "agent-secret" || h.Get("Authorization") != "" {
			t.Fatalf("agent saw token %q authorization %q", h.Get("X-Agent-Token"), h.Get("Authorization"))
		}
	})
	t.Run("message/stream", func(t *testing.T) {
		body := strings.Replace(strings.Replace(send, "message/send", "message/stream", 1), `"id":7`, `"id":"s-1"`, 1)
		req, _ := http.NewRequest("POST", base+"/a2a/echo", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer caller-e2e")
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("status %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		// Each event reaches the caller before the agent sends the next.
		sc := bufio.NewScanner(resp.Body)
		var kinds []string
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "data: ") {
				continue
			}
			var ev struct {
				ID     string `json:"id"`
				Result struct {
					Kind  string `json:"kind"`
					Final bool   `json:"final"`
				} `json:"result"`
			}
			if err := json.Unmarshal([]byte(line[6:]), &ev); err != nil || ev.ID != "s-1" {
				t.Fatalf("event %q: %v", line, err)
			}
			kinds = append(kinds, ev.Result.Kind)
			if ev.Result.Final {
				break
			}
			agent.release <- struct{}{}
		}
		if strings.Join(kinds, ",") != "status-update,artifact-update,status-update" {
			t.Fatalf("events %v (%v)", kinds, sc.Err())
		}
	})
	t.Run("denied and unauthenticated", func(t *testing.T) {
		resp, b := call(t, "POST", "/a2a/hidden", "caller-e2e", send)
		if resp.StatusCode != 403 || !strings.Contains(string(b), `"type":"permission_error"`) || !strings.Contains(string(b), `"code":"agent_not_allowed"`) {
			t.Fatalf("allowed_agents: status %d: %s", resp.StatusCode, b)
		}
		resp, b = call(t, "POST", "/a2a/echo", "", send)
		if resp.StatusCode != 401 {
			t.Fatalf("no key: status %d: %s", resp.StatusCode, b)
		}
		resp, b = call(t, "POST", "/a2a/nope", "caller-e2e", send)
		if resp.StatusCode != 404 {
			t.Fatalf("unknown agent: status %d: %s", resp.StatusCode, b)
		}
	})
	t.Run("framing", func(t *testing.T) {
		for body, code := range map[string]string{`{not json`: "-32700", `[` + send + `]`: "-32600", `{"jsonrpc":"1.0","method":"x","id":1}`: "-32600"} {
			resp, b := call(t, "POST", "/a2a/echo", "caller-e2e", body)
			if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"code":`+code)) {
				t.Fatalf("%s: status %d: %s", body, resp.StatusCode, b)
			}
		}
	})
	sendText := func(method, id, text string) string {
		b, _ := json.Marshal(text)
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":{"message":{"kind":"message","messageId":"m-1","role":"user","parts":[{"kind":"text","text":` +
			string(b) + `},{"kind":"data","data":{"note":"n"}}]}}}`
	}
	type rpcAnswer struct {
		ID     any `json:"id"`
		Result struct {
			Parts []struct{ Text string } `json:"parts"`
		} `json:"result"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Code string `json:"code"`
			} `json:"data"`
		} `json:"error"`
	}
	answer := func(t *testing.T, key, body string) rpcAnswer {
		t.Helper()
		resp, b := call(t, "POST", "/a2a/echo", key, body)
		var out rpcAnswer
		if err := json.Unmarshal(b, &out); err != nil || resp.StatusCode != 200 {
			t.Fatalf("status %d %v: %s", resp.StatusCode, err, b)
		}
		return out
	}
	agentSaw := func(sub string) bool {
		agent.mu.Lock()
		defer agent.mu.Unlock()
		for _, x := range agent.texts {
			if strings.Contains(x, sub) {
				return true
			}
		}
		return false
	}
	t.Run("guardrails", func(t *testing.T) {
		// Input block: a JSON-RPC error on HTTP 200; the agent never sees it.
		out := answer(t, "guarded-e2e", sendText("message/send", "7", "a forbidden-word here"))
		if out.Error == nil || out.Error.Code != -32050 || out.Error.Data.Code != "content_filter" || out.ID != 7.0 || agentSaw("forbidden-word") {
			t.Fatalf("input block: %+v %+v agent saw it: %v", out, *out.Error, agentSaw("forbidden-word"))
		}
		// Input mask: the agent gets the masked text.
		out = answer(t, "guarded-e2e", sendText("message/send", "8", "mail bob@example.com please"))
		if out.Error != nil || len(out.Result.Parts) != 1 || strings.Contains(out.Result.Parts[0].Text, "bob@example.com") ||
			!strings.HasPrefix(out.Result.Parts[0].Text, "echo: mail ") || agentSaw("bob@example.com") || !agentSaw("mail ") {
			t.Fatalf("input mask: %+v", out)
		}
		// Output mask: the agent's own address is masked in its answer.
		out = answer(t, "guarded-e2e", sendText("message/send", "9", "who"))
		if out.Error != nil || len(out.Result.Parts) != 1 || strings.Contains(out.Result.Parts[0].Text, "ops@example.org") || !strings.HasPrefix(out.Result.Parts[0].Text, "echo: ") {
			t.Fatalf("output mask: %+v", out)
		}
		// Output block (the team's guardrail), whole answer.
		out = answer(t, "guarded-e2e", sendText("message/send", `"b-1"`, "classified"))
		if out.Error == nil || out.Error.Code != -32050 || out.Error.Message != "The response was blocked by guardrail policy" || out.ID != "b-1" {
			t.Fatalf("output block: %+v", out)
		}
		// Output block in a stream: the first event passes, the artifact
		// becomes an error event and the stream ends.
		req, _ := http.NewRequest("POST", base+"/a2a/echo", strings.NewReader(sendText("message/stream", `"s-2"`, "classified")))
		req.Header.Set("Authorization", "Bearer guarded-e2e")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var events []rpcAnswer
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "data: ") {
				continue
			}
			var ev rpcAnswer
			if err := json.Unmarshal([]byte(line[6:]), &ev); err != nil {
				t.Fatalf("event %q: %v", line, err)
			}
			events = append(events, ev)
			if len(events) == 1 {
				agent.release <- struct{}{}
			}
		}
		if len(events) != 2 || events[0].Error != nil || events[1].Error == nil || events[1].Error.Data.Code != "content_filter" || events[1].ID != "s-2" {
			t.Fatalf("stream events: %+v (%v)", events, sc.Err())
		}
		// Input block on a stream: one error event.
		resp, b := call(t, "POST", "/a2a/echo", "guarded-e2e", sendText("message/stream", `"s-3"`, "forbidden-word"))
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") ||
			!strings.HasPrefix(string(b), `data: {"jsonrpc":"2.0","id":"s-3","error":{"code":-32050,`) || !strings.HasSuffix(string(b), "}}}\n\n") {
			t.Fatalf("stream input block: status %d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
		// Monitor mode passes and records.
		out = answer(t, "monitored-e2e", sendText("message/send", "10", "forbidden-word again"))
		if out.Error != nil || len(out.Result.Parts) != 1 || out.Result.Parts[0].Text != "echo: forbidden-word again" {
			t.Fatalf("monitor: %+v", out)
		}
	})
	t.Run("limits", func(t *testing.T) {
		for _, tc := range []struct {
			key     string
			allowed int
			limit   string
		}{{"limited-e2e", 2, "2"}, {"blue-e2e", 1, ""}} {
			for i := 0; i <= tc.allowed; i++ {
				resp, b := call(t, "POST", "/a2a/echo", tc.key, send)
				if i < tc.allowed {
					if resp.StatusCode != 200 || (tc.limit != "" && resp.Header.Get("X-Ratelimit-Limit-Requests") != tc.limit) {
						t.Fatalf("%s call %d: status %d %v: %s", tc.key, i, resp.StatusCode, resp.Header, b)
					}
					continue
				}
				var out rpcAnswer
				if err := json.Unmarshal(b, &out); err != nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" ||
					out.Error == nil || out.Error.Code != -32029 || out.Error.Data.Code != "rate_limit_exceeded" || out.ID != 7.0 {
					t.Fatalf("%s over the limit: status %d %v: %s", tc.key, resp.StatusCode, err, b)
				}
			}
			// Discovery is not counted.
			if resp, b := call(t, "GET", "/a2a/echo/.well-known/agent-card.json", tc.key, ""); resp.StatusCode != 200 {
				t.Fatalf("%s card: status %d: %s", tc.key, resp.StatusCode, b)
			}
		}
	})
	t.Run("usage records", func(t *testing.T) {
		deadline := time.Now().Add(10 * time.Second)
		for {
			var blocked, monitored, limited int
			for _, sp := range rcv.Spans() {
				if usagetest.Attr(sp, "gw.usage.inbound_protocol") != "a2a" {
					continue
				}
				switch usagetest.Attr(sp, "gw.usage.api_key_name") {
				case "guarded":
					if usagetest.Attr(sp, "error.type") == "guardrail_blocked" && usagetest.Attr(sp, "gw.usage.guardrail_enforced_hits") != nil {
						blocked++
					}
				case "monitored":
					if usagetest.Attr(sp, "gw.usage.guardrail_monitor_hits") != nil {
						monitored++
					}
				}
				if usagetest.Attr(sp, "error.type") == "rate_limited" {
					limited++
				}
			}
			if blocked == 4 && monitored == 1 && limited == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("records: %d blocked, %d monitored, %d rate limited", blocked, monitored, limited)
			}
			time.Sleep(50 * time.Millisecond)
		}
		for {
			ops := map[string]int{}
			for _, sp := range rcv.Spans() {
				if usagetest.Attr(sp, "gw.usage.inbound_protocol") == "a2a" && usagetest.Attr(sp, "gw.usage.api_key_name") == "dev" {
					op, _ := usagetest.Attr(sp, "gw.usage.operation").(string)
					ops[op]++
				}
			}
			if ops["message/send"] == 1 && ops["message/stream"] == 1 && ops["agent/card"] == 2 && ops["other"] >= 3 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("records by operation: %v", ops)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}
