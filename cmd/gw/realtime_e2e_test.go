package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"gw/edge/usage/usagetest"
	"gw/perf/mock"
)

// realtimeFile: a Realtime model on the mock, one whose upstream fails the
// second response (error event, then close 1011), one that cuts the TCP
// connection, a provider without Realtime, a group, and an OTLP exporter
// to read the sessions' usage records.
const realtimeFile = `_format_version: "1"
provider_keys:
  - {display_name: rt, api_key: "${E2E_OPENAI_KEY}", api_base: "${E2E_RT_MOCK}/v1"}
  - {display_name: rt-broken, api_key: "${E2E_OPENAI_KEY}", api_base: "${E2E_RT_MOCK}/knobs/stream_error_after=1/v1"}
  - {display_name: rt-cut, api_key: "${E2E_OPENAI_KEY}", api_base: "${E2E_RT_MOCK}/knobs/fail_after=0/v1"}
  - {display_name: rt-denied, api_key: "${E2E_OPENAI_KEY}", api_base: "${E2E_RT_MOCK}/knobs/status=429/v1"}
  - {display_name: rt-dead, api_key: "${E2E_OPENAI_KEY}", api_base: "http://127.0.0.1:1/v1"}
  - {display_name: claude-key, provider: anthropic, api_key: "${E2E_OPENAI_KEY}", api_base: "${E2E_RT_MOCK}/v1"}
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_models: ["*"]}
  - {display_name: one, key_env: E2E_RT_ONE_KEY, allowed_models: ["*"], rate_limit: {concurrency: 1}}
models:
  - {display_name: voice, provider: openai, model_name: gpt-4o-realtime-preview, provider_key: rt, cost: {input_per_1k: 1, output_per_1k: 2}}
  - {display_name: voice-broken, provider: openai, model_name: gpt-4o-realtime-preview, provider_key: rt-broken}
  - {display_name: voice-cut, provider: openai, model_name: gpt-4o-realtime-preview, provider_key: rt-cut}
  - {display_name: claude, provider: anthropic, model_name: claude-sonnet-4-5, provider_key: claude-key}
  - {display_name: voice-denied, provider: openai, model_name: gpt-4o-realtime-preview, provider_key: rt-denied}
  - {display_name: voice-dead, provider: openai, model_name: gpt-4o-realtime-preview, provider_key: rt-dead}
  - {display_name: voice-guarded, provider: openai, model_name: gpt-4o-realtime-preview, provider_key: rt}
  - display_name: voices
    routing: {targets: [{model: voice}]}
guardrails:
  - {name: no-codenames, kind: keyword, hook_point: input, patterns: [{kind: literal, value: PROJECT-ZEUS}]}
guardrail_attachments:
  - {guardrail_id: no-codenames, scope_type: model, scope_id: voice-guarded}
observability_exporters:
  - {name: otel, kind: otlp_http, endpoint: "${E2E_OTLP}", batch_size: 1, flush_interval_ms: 100}
`

// openaiNPMVersion is the openai npm package the Realtime e2e test drives
// (with its `ws` peer), installed by `make deps` or on first use into
// $HOME/.cache/gw/openai-realtime.
const (
	openaiNPMVersion = "7.55.0"
	wsNPMVersion     = "8.23.0"
)

// realtimeNodeDir returns the directory whose node_modules hold openai and
// ws, installing them with npm when missing; it skips the test without node.
func realtimeNodeDir(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not found; the Realtime e2e test drives the openai npm package (apt-get install nodejs npm)")
	}
	dir := os.Getenv("GW_OPENAI_NPM")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(home, ".cache", "gw", "openai-realtime")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "realtime", "ws.js")); err == nil {
		return dir
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm not found; run `make deps`")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "--silent",
		"openai@"+openaiNPMVersion, "ws@"+wsNPMVersion).CombinedOutput()
	if err != nil {
		t.Fatalf("npm install openai: %v\n%s", err, out)
	}
	return dir
}

// realtimeScript drives one session through the official SDK. The SDK
// insists on wss:// URLs; gw's loopback listener is plain, so the ws
// client is handed a plain TCP connection (ws's documented
// createConnection option) while the URL, headers and subprotocols stay
// exactly the SDK's.
const realtimeScript = `
const net = require('net');
const WS = require('ws');
const { OpenAI } = require('openai');
const [host, port] = process.env.GW_ADDR.split(':');
const mode = process.env.MODE, model = process.env.MODEL;
const responses = Number(process.env.RESPONSES || '2');
const connect = () => net.connect(Number(port), host);
const client = new OpenAI({ apiKey: process.env.GW_KEY, baseURL: 'http://' + process.env.GW_ADDR + '/v1' });
let rt;
if (mode === 'beta') {
  const { OpenAIRealtimeWS } = require('openai/beta/realtime/ws');
  rt = new OpenAIRealtimeWS({ model, options: { createConnection: connect } }, client);
} else if (mode === 'ga') {
  const { OpenAIRealtimeWS } = require('openai/realtime/ws');
  rt = new OpenAIRealtimeWS({ model, options: { createConnection: connect } }, client);
} else {
  // The browser entry point: the runtime's WebSocket, the key in the
  // openai-insecure-api-key subprotocol.
  globalThis.WebSocket = class extends WS.WebSocket {
    constructor(url, protocols) { super(url, protocols, { createConnection: connect, perMessageDeflate: false }); }
  };
  const { OpenAIRealtimeWebSocket } = require('openai/realtime/websocket');
  rt = new OpenAIRealtimeWebSocket({ model, dangerouslyAllowBrowser: true }, client);
}
const beta = mode === 'beta';
const out = { events: {}, text: '', transcript: '', audioBytes: 0, usage: [], errors: [], sessionModel: null, close: null };
const count = (t) => { out.events[t] = (out.events[t] || 0) + 1; };
rt.on('event', (ev) => count(ev.type));
rt.on('error', (err) => out.errors.push(String(err.message || err)));
const ask = () => rt.send({ type: 'response.create', response: beta ? { modalities: ['text', 'audio'] } : { output_modalities: ['text', 'audio'] } });
rt.on('session.created', (ev) => {
  out.sessionModel = ev.session.model;
  rt.send({ type: 'session.update', session: beta ? { modalities: ['text', 'audio'], instructions: 'be brief' } : { type: 'realtime', instructions: 'be brief' } });
});
rt.on('session.updated', () => {
  rt.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Say hello, then tell me a long story about WebSockets.' }] } });
  rt.send({ type: 'input_audio_buffer.append', audio: Buffer.alloc(4000, 7).toString('base64') });
  rt.send({ type: 'input_audio_buffer.commit' });
  ask();
});
rt.on(beta ? 'response.text.delta' : 'response.output_text.delta', (ev) => { out.text += ev.delta; });
rt.on(beta ? 'response.audio.delta' : 'response.output_audio.delta', (ev) => { out.audioBytes += Buffer.from(ev.delta, 'base64').length; });
rt.on(beta ? 'response.audio_transcript.delta' : 'response.output_audio_transcript.delta', (ev) => { out.transcript += ev.delta; });
let done = 0;
rt.on('response.done', (ev) => {
  out.usage.push(ev.response.usage);
  if (++done < responses) { ask(); } else { rt.close({ code: 1000, reason: 'done' }); }
});
const onClose = (code, reason) => { out.close = { code, reason: String(reason || '') }; console.log(JSON.stringify(out)); process.exit(0); };
if (mode === 'browser') {
  rt.socket.addEventListener('close', (ev) => onClose(ev.code, ev.reason));
} else {
  rt.socket.on('close', onClose);
}
setTimeout(() => { out.close = { code: -1, reason: 'test timeout' }; console.log(JSON.stringify(out)); process.exit(2); }, 15000);
`

type realtimeResult struct {
	Events       map[string]int   `json:"events"`
	Text         string           `json:"text"`
	Transcript   string           `json:"transcript"`
	AudioBytes   int              `json:"audioBytes"`
	Usage        []map[string]any `json:"usage"`
	Errors       []string         `json:"errors"`
	SessionModel string           `json:"sessionModel"`
	Close        struct {
		Code   int    `json:"code"`
		Reason string `json:"reason"`
	} `json:"close"`
}

func runRealtimeSDK(t *testing.T, dir, addr, mode, model string, responses int) realtimeResult {
	t.Helper()
	script := filepath.Join(t.TempDir(), "realtime.cjs")
	if err := os.WriteFile(script, []byte(realtimeScript), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script)
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"), "GW_ADDR="+addr, "GW_KEY=caller-e2e",
		"MODE="+mode, "MODEL="+model, "RESPONSES="+string(rune('0'+responses)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\nstdout: %s\nstderr: %s", mode, err, out, stderr.String())
	}
	var r realtimeResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("node %s output %q: %v (stderr %s)", mode, out, err, stderr.String())
	}
	return r
}

// TestRealtimeSDKE2E: sessions through the real binary with the official
// openai npm package — the beta protocol (OpenAI-Beta header), the GA
// protocol, and the browser entry point (key in the subprotocol) — each
// with text and audio events, usage in response.done, and a clean close;
// then one usage record per session with the summed tokens and cost_usd.
func TestRealtimeSDKE2E(t *testing.T) {
	dir := realtimeNodeDir(t)
	rcv := usagetest.StartOTLP(t)
	t.Setenv("E2E_OTLP", rcv.URL)
	m := startMock(t, "E2E_RT_MOCK", mock.Config{})
	g := startRealtimeGW(t)

	for _, mode := range []string{"beta", "ga", "browser"} {
		t.Run(mode, func(t *testing.T) {
			r := runRealtimeSDK(t, dir, g.addr, mode, "voice", 2)
			if len(r.Errors) > 0 {
				t.Fatalf("SDK errors: %v", r.Errors)
			}
			if r.Close.Code != 1000 {
				t.Fatalf("close %+v; want 1000 (the caller's own close answered by the upstream)", r.Close)
			}
			if r.SessionModel != "gpt-4o-realtime-preview" {
				t.Fatalf("session.created model %q; want the upstream model name", r.SessionModel)
			}
			// The mock's defaults: 5 chunks of 8 bytes per modality and response.
			if want := fillerPrefix(40); r.Text != want+want || r.Transcript != want+want {
				t.Fatalf("text %q transcript %q; want twice %q", r.Text, r.Transcript, want)
			}
			if r.AudioBytes != 2*5*8 {
				t.Fatalf("audio bytes %d; want 80 (base64 decoded)", r.AudioBytes)
			}
			if len(r.Usage) != 2 || r.Usage[0]["output_tokens"].(float64) != 10 {
				t.Fatalf("usage %v", r.Usage)
			}
			for _, ev := range []string{"session.created", "session.updated", "conversation.item.created", "input_audio_buffer.committed", "response.created", "response.done"} {
				if r.Events[ev] == 0 {
					t.Fatalf("no %s event: %v", ev, r.Events)
				}
			}
		})
	}
	// The provider credential reached the mock, the caller's key did not.
	for _, rec := range m.Requests() {
		if !strings.HasSuffix(rec.Path, "/realtime") {
			continue
		}
		if got := rec.Header.Get("Authorization"); got != "Bearer sk-e2e" {
			t.Fatalf("upstream Authorization %q; want the provider key", got)
		}
		if strings.Contains(rec.Header.Get("Sec-Websocket-Protocol"), "caller-e2e") || rec.Header.Get("X-Api-Key") != "" {
			t.Fatal("the caller's key went upstream in a subprotocol")
		}
	}

	// One record per session, with the summed usage of its two responses.
	usagetest.Eventually(t, 10*time.Second, "three session records", func() bool { return len(rcv.Spans()) >= 3 })
	for _, sp := range rcv.Spans() {
		if usagetest.Attr(sp, "gw.usage.operation") != "realtime" {
			t.Fatalf("operation %v", usagetest.Attr(sp, "gw.usage.operation"))
		}
		in, _ := usagetest.Attr(sp, "gen_ai.usage.input_tokens").(int64)
		out, _ := usagetest.Attr(sp, "gen_ai.usage.output_tokens").(int64)
		cost, _ := usagetest.Attr(sp, "gw.usage.cost_usd").(float64)
		if out != 20 || in < 2 {
			t.Fatalf("session usage in=%d out=%d; want out=20 (2 responses × 10)", in, out)
		}
		if want := float64(in)/1000*1 + float64(out)/1000*2; cost < want-1e-9 || cost > want+1e-9 {
			t.Fatalf("cost_usd %v; want %v", cost, want)
		}
	}
	if !strings.Contains(g.stderr.String(), `"path":"/v1/realtime","status":101`) {
		t.Fatalf("no access-log line for the sessions:\n%s", g.stderr.String())
	}
}

// startRealtimeGW serves realtimeFile (E2E_RT_MOCK and E2E_OTLP set by the caller).
func startRealtimeGW(t *testing.T) *proc {
	t.Helper()
	t.Setenv("E2E_RT_ONE_KEY", "one-session-key")
	return startGW(t, writeTemp(t, "realtime.yaml", realtimeFile))
}

// fillerPrefix is the mock's first n content bytes.
func fillerPrefix(n int) string {
	return string(mock.Filler(0, n))
}

// TestRealtimeRefusalsE2E: upgrades refused before any upgrade, in
// OpenAI's envelope: no key, a wrong key, a group, a provider without
// Realtime, an unknown model, an upstream that refuses the upgrade (its
// answer relayed) or cannot be reached, a guardrail that cannot judge the session and
// does not fail open, a plain GET.
func TestRealtimeRefusalsE2E(t *testing.T) {
	t.Setenv("E2E_OTLP", "http://127.0.0.1:1")
	startMock(t, "E2E_RT_MOCK", mock.Config{})
	g := startRealtimeGW(t)
	url := "ws://" + g.addr + "/v1/realtime?model="
	for _, tc := range []struct {
		name, model string
		header      http.Header
		status      int
		code        string
	}{
		{"no key", "voice", nil, 401, "missing_api_key"},
		{"wrong key", "voice", http.Header{"Authorization": {"Bearer nope"}}, 401, "invalid_api_key"},
		{"wrong key in subprotocol", "voice", http.Header{"Sec-WebSocket-Protocol": {"realtime, openai-insecure-api-key.nope"}}, 401, "invalid_api_key"},
		{"group", "voices", http.Header{"Authorization": {"Bearer caller-e2e"}}, 400, "model_group_not_supported"},
		{"no realtime", "claude", http.Header{"Authorization": {"Bearer caller-e2e"}}, 501, "not_implemented"},
		{"unknown model", "nope", http.Header{"Authorization": {"Bearer caller-e2e"}}, 404, "model_not_found"},
		{"upstream refuses: its answer relayed", "voice-denied", http.Header{"Authorization": {"Bearer caller-e2e"}}, 429, "rate_limit_exceeded"},
		{"upstream unreachable", "voice-dead", http.Header{"Authorization": {"Bearer caller-e2e"}}, 502, "upstream_unreachable"},
		{"fail-closed guardrail", "voice-guarded", http.Header{"Authorization": {"Bearer caller-e2e"}}, 422, "guardrail_unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, resp, err := websocket.DefaultDialer.Dial(url+tc.model, tc.header)
			if err == nil {
				c.Close()
				t.Fatal("upgraded")
			}
			if resp == nil || resp.StatusCode != tc.status {
				t.Fatalf("err %v resp %v; want %d", err, resp, tc.status)
			}
			var env struct {
				Error struct{ Type, Code, Message string }
			}
			if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || env.Error.Code != tc.code {
				t.Fatalf("envelope %+v (%v); want code %s", env, err, tc.code)
			}
		})
	}
	// A concurrency slot is held for the whole session.
	one := http.Header{"Authorization": {"Bearer one-session-key"}}
	c1, _, err := websocket.DefaultDialer.Dial(url+"voice", one)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c1.ReadMessage(); err != nil {
		t.Fatal(err)
	}
	if c, resp, err := websocket.DefaultDialer.Dial(url+"voice", one); err == nil || resp == nil || resp.StatusCode != 429 {
		if c != nil {
			c.Close()
		}
		t.Fatalf("second session of a concurrency-1 key: %v %v; want 429", err, resp)
	}
	_ = c1.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(1000, ""))
	for {
		if _, _, err := c1.ReadMessage(); err != nil {
			break
		}
	}
	c1.Close()
	usagetest.Eventually(t, 5*time.Second, "the slot freed", func() bool {
		c, _, err := websocket.DefaultDialer.Dial(url+"voice", one)
		if err == nil {
			c.Close()
		}
		return err == nil
	})

	resp, err := http.Get("http://" + g.addr + "/v1/realtime?model=voice")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired && resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("plain GET: %d", resp.StatusCode)
	}
}

// TestRealtimeUpstreamCloseE2E: the upstream ends the session — with an
// error event and close 1011 after one response, or by cutting its TCP
// connection — and the caller sees that close code (1011 from gw for the
// cut), through the SDK and through a plain client; gw's shutdown closes an
// open session with 1001.
func TestRealtimeUpstreamCloseE2E(t *testing.T) {
	dir := realtimeNodeDir(t)
	t.Setenv("E2E_OTLP", "http://127.0.0.1:1")
	startMock(t, "E2E_RT_MOCK", mock.Config{})
	g := startRealtimeGW(t)

	r := runRealtimeSDK(t, dir, g.addr, "beta", "voice-broken", 3)
	if len(r.Usage) != 1 || r.Close.Code != 1011 || r.Close.Reason != "mock stream error" || len(r.Errors) == 0 {
		t.Fatalf("got %d responses, close %+v, errors %v; want 1 response, the error event, then 1011", len(r.Usage), r.Close, r.Errors)
	}

	hdr := http.Header{"Authorization": {"Bearer caller-e2e"}}
	c, _, err := websocket.DefaultDialer.Dial("ws://"+g.addr+"/v1/realtime?model=voice-cut", hdr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, err := c.ReadMessage(); err != nil { // session.created
		t.Fatal(err)
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"type":"response.create"}`)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		if !websocket.IsCloseError(err, 1011) {
			t.Fatalf("after the upstream cut: %v; want close 1011", err)
		}
		break
	}

	// Shutting gw down closes open sessions with 1001.
	c2, _, err := websocket.DefaultDialer.Dial("ws://"+g.addr+"/v1/realtime?model=voice", hdr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, _, err := c2.ReadMessage(); err != nil {
		t.Fatal(err)
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	_ = c2.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, _, err := c2.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != 1001 || ce.Text != "gateway shutting down" {
			t.Fatalf("on shutdown: %v; want close 1001 gateway shutting down", err)
		}
		break
	}
}
