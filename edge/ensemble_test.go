package edge

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gw/adapters"
	"gw/admin/snapshot"
)

func TestEnsembleMemberBody(t *testing.T) {
	f := func(body string, temp, seed string, want string) {
		t.Helper()
		em := &snapshot.EnsembleMember{}
		if temp != "" {
			em.Temperature = []byte(temp)
		}
		if seed != "" {
			em.Seed = []byte(seed)
		}
		var scratch [2][]byte
		got := string(memberBody(nil, &scratch, []byte(body), em))
		if got != want {
			t.Fatalf("memberBody(%s, %q, %q)\ngot  %s\nwant %s", body, temp, seed, got, want)
		}
	}
	f(`{"model":"p","messages":[]}`, "", "", `{"model":"p","messages":[]}`)
	f(`{"model":"p","stream":true,"stream_options":{"include_usage":true},"messages":[]}`, "", "", `{"model":"p","messages":[]}`)
	f(`{"model":"p","messages":[],"temperature":1}`, "0.3", "", `{"model":"p","messages":[],"temperature":0.3}`)
	f(`{"model":"p","messages":[]}`, "0.3", "7", `{"model":"p","messages":[],"temperature":0.3,"seed":7}`)
	f(`{"stream":false,"model":"p","seed":1,"messages":[]}`, "", "42", `{"model":"p","seed":42,"messages":[]}`)
}

func TestEnsembleJudgeBody(t *testing.T) {
	body := []byte(`{"model":"panel","stream":true,"max_tokens":50,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi \"there\""}]}`)
	ms := []member{{text: []byte("Hello!"), ok: true}, {ok: false, text: []byte("never shown")}, {text: []byte("Hi, \"you\".\nBye"), ok: true}}
	f := func(prompt, wantPrompt string) {
		t.Helper()
		var scratch [2][]byte
		out, err := judgeBody(nil, &scratch, body, prompt, ms)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Model     string `json:"model"`
			Stream    bool   `json:"stream"`
			MaxTokens int    `json:"max_tokens"`
			Messages  []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("judge body is not JSON: %v\n%s", err, out)
		}
		if got.Model != "panel" || !got.Stream || got.MaxTokens != 50 || len(got.Messages) != 4 {
			t.Fatalf("judge body: %s", out)
		}
		if got.Messages[0].Role != "system" || got.Messages[0].Content != wantPrompt || got.Messages[2].Content != `Hi "there"` {
			t.Fatalf("judge messages: %+v", got.Messages)
		}
		last := got.Messages[3]
		want := "Candidate answers to the last request:\n\n### Answer 1\n\nHello!\n\n### Answer 2\n\nHi, \"you\".\nBye"
		if last.Role != "user" || last.Content != want {
			t.Fatalf("answers message: got %q; want %q", last.Content, want)
		}
	}
	f("", defaultSynthesisPrompt)
	f("Merge them.", "Merge them.")

	var scratch [2][]byte
	out, err := judgeBody(nil, &scratch, []byte(`{"model":"p","messages":[]}`), "x", ms[:1])
	if err != nil || !json.Valid(out) || !strings.Contains(string(out), `"messages":[{"role":"system","content":"x"},{"role":"user"`) {
		t.Fatalf("empty conversation: %s %v", out, err)
	}
}

func TestEnsembleAnswerText(t *testing.T) {
	f := func(body, want string, wantOK bool) {
		t.Helper()
		got, ok := answerText(nil, []byte(body))
		if string(got) != want || ok != wantOK {
			t.Fatalf("answerText(%s) = %q, %v; want %q, %v", body, got, ok, want, wantOK)
		}
	}
	f(`{"choices":[{"index":0,"message":{"role":"assistant","content":"Hi \u00e9\n"}}]}`, "Hi é\n", true)
	f(`{"choices":[{"message":{"content":"first"}},{"message":{"content":"second"}}]}`, "first", true)
	f(`{"choices":[{"message":{"content":null,"tool_calls":[]}}]}`, "", false)
	f(`{"choices":[{"message":{"content":""}}]}`, "", false)
	f(`{"choices":[]}`, "", false)
	f(`{"error":{"message":"x"}}`, "", false)
	f(`not json`, "", false)
}

func TestEnsembleDeadline(t *testing.T) {
	var c call
	if c.capTimeout(5*time.Second) != 5*time.Second || c.capTimeout(0) != 0 || c.pastDeadline() || !c.readDeadline(0).IsZero() {
		t.Fatal("no deadline must leave timeouts alone")
	}
	c.deadline = time.Now().Add(time.Second)
	if d := c.capTimeout(5 * time.Second); d > time.Second || d < 900*time.Millisecond {
		t.Fatalf("capTimeout(5s) = %v; want about 1s", d)
	}
	if d := c.capTimeout(0); d > time.Second || d <= 0 {
		t.Fatalf("capTimeout(0) = %v; want about 1s (0 means no timeout, the deadline still applies)", d)
	}
	if d := c.capTimeout(time.Millisecond); d != time.Millisecond {
		t.Fatalf("capTimeout(1ms) = %v", d)
	}
	if dl := c.readDeadline(time.Hour); !dl.Equal(c.deadline) {
		t.Fatalf("readDeadline(1h) = %v; want the deadline", dl)
	}
	if dl := c.readDeadline(time.Millisecond); !dl.Before(c.deadline) {
		t.Fatal("readDeadline(1ms) must be the gap")
	}
	c.deadline = time.Now().Add(-time.Second)
	if !c.pastDeadline() || c.capTimeout(time.Hour) != time.Nanosecond {
		t.Fatal("a spent deadline must time attempts out at once")
	}
}

// TestEnsembleHandler runs ensemble requests through the proxy handler
// against the mock (under -race: the members' concurrent calls): all
// members answering, one failing and one past timeout_ms with
// min_responses 1, and min_responses not reached (a member answering with
// tool calls only has no text for the judge).
func TestEnsembleHandler(t *testing.T) {
	base := startMock(t)
	env := map[string]string{"K": "sk-upstream", "CALLER": "caller-key", "BASE": base}
	src := `_format_version: "1"
provider_keys:
  - {display_name: oa, api_key: "${K}", api_base: "${BASE}/v1"}
  - {display_name: slow, api_key: "${K}", api_base: "${BASE}/knobs/latency=2s/v1"}
  - {display_name: broken, api_key: "${K}", api_base: "${BASE}/knobs/status=500/v1"}
  - {display_name: tools, api_key: "${K}", api_base: "${BASE}/knobs/tool_calls=1/v1"}
api_keys:
  - {display_name: caller, key_env: CALLER, allowed_models: ["*"]}
models:
  - {display_name: gpt, provider: openai, model_name: gpt-4o, provider_key: oa, cost: {input_per_1k: 1, output_per_1k: 1}}
  - {display_name: slow, provider: openai, model_name: gpt-4o, provider_key: slow, retries: 0}
  - {display_name: broken, provider: openai, model_name: gpt-4o, provider_key: broken, retries: 0}
  - {display_name: toolsonly, provider: openai, model_name: gpt-4o, provider_key: tools}
  - display_name: notext
    ensemble: {panel: [{model: gpt}, {model: toolsonly}], judge: {model: gpt}}
  - display_name: all
    ensemble: {panel: [{model: gpt}, {model: gpt, seed: 1}, {model: gpt, temperature: 0}], judge: {model: gpt}}
  - display_name: some
    ensemble: {panel: [{model: gpt}, {model: slow}, {model: broken}], judge: {model: gpt}, min_responses: 1, timeout_ms: 200}
  - display_name: few
    ensemble: {panel: [{model: gpt}, {model: slow}, {model: broken}], judge: {model: gpt}, timeout_ms: 200}
`
	h := &snapshot.Holder{}
	h.Store(compileFile(t, src, env))
	p := &Proxy{Holder: h}
	f := func(alias string, status int, members, inBody string) {
		t.Helper()
		ctx := newChatCtx([]byte(`{"model":"` + alias + `","messages":[{"role":"user","content":"hi"}]}`))
		start := time.Now()
		if !p.Handle(ctx) {
			t.Fatal("not handled")
		}
		if took := time.Since(start); took > 1500*time.Millisecond {
			t.Fatalf("%s took %v: timeout_ms not applied", alias, took)
		}
		body := string(ctx.Response.Body())
		if ctx.Response.StatusCode() != status || string(ctx.Response.Header.Peek("x-gw-ensemble-members")) != members || !strings.Contains(body, inBody) {
			t.Fatalf("%s: %d members %q %s", alias, ctx.Response.StatusCode(), ctx.Response.Header.Peek("x-gw-ensemble-members"), body)
		}
	}
	f("all", 200, "gpt,gpt,gpt", `"model":"all"`)
	f("some", 200, "gpt", `"model":"some"`)
	f("notext", 502, "gpt", "1 of 2 panel members answered, 2 required: toolsonly: the answer has no text")
	f("few", 502, "gpt", "1 of 3 panel members answered, 2 required: slow: upstream timeout; broken: upstream returned 500")
}

// TestAppendPanelUsage: the answer's usage becomes the panel's sum; the
// answer's own counts are returned; a body without usage is left alone.
func TestAppendPanelUsage(t *testing.T) {
	add := adapters.Usage{Prompt: 10, Completion: 20, Total: 30, Cached: 4, Reasoning: 5}
	for _, c := range []struct {
		in, want string
		own      adapters.Usage
		ok       bool
	}{
		{`{"id":"x","usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3},"model":"m"}`,
			`{"id":"x","usage":{"prompt_tokens":11,"completion_tokens":22,"total_tokens":33,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":5}},"model":"m"}`,
			adapters.Usage{Prompt: 1, Completion: 2, Total: 3}, true},
		{`{"usage":{"prompt_tokens":1,"completion_tokens":2}}`, // no total: prompt + completion
			`{"usage":{"prompt_tokens":11,"completion_tokens":22,"total_tokens":33,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":5}}}`,
			adapters.Usage{Prompt: 1, Completion: 2, Total: 3}, true},
		{`{"choices":[],"usage":null}`, "", adapters.Usage{}, false},
		{`{"choices":[]}`, "", adapters.Usage{}, false},
	} {
		out, own, ok := appendPanelUsage(nil, []byte(c.in), &add)
		if ok != c.ok || string(out) != c.want || own != c.own {
			t.Errorf("%s: %v %s %+v; want %v %s %+v", c.in, ok, out, own, c.ok, c.want, c.own)
		}
	}
}
