// Package remotetest holds what the remote kinds' tests share: the mock
// services of perf/mock on a loopback port, guardrails loaded through the
// real loader, and the engine run over a kind (Judge for one phase,
// Stream for a chat-completions stream through the output policy).
package remotetest

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/perf/mock"
)

// Mock starts the mock provider (which speaks presidio, moderation and
// lakera) and returns its base URL; it stops with the test.
func Mock(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	s := mock.New(mock.Config{RecordLimit: -1})
	go s.Serve(ln)
	t.Cleanup(func() { s.Shutdown() })
	return "http://" + ln.Addr().String()
}

// Load loads one guardrails entry (YAML mapping lines, indented by 4)
// through the real loader.
func Load(t testing.TB, entry string) *resources.Guardrail {
	t.Helper()
	r := resources.Load([]byte("_format_version: \"1\"\nguardrails:\n  - "+strings.TrimLeft(entry, " ")), func(string) (string, bool) { return "", false })
	if err := r.Err(); err != nil {
		t.Fatalf("load: %v", err)
	}
	return r.Resources.Guardrails[0]
}

// Stage compiles g with ctor into a one-stage chain and returns it.
func Stage(t testing.TB, g *resources.Guardrail, kind string, ctor guard.Constructor) *guard.Chain {
	t.Helper()
	scope := resources.GuardrailScope{Type: "model", Name: "m"}
	c, err := guard.Compile(map[resources.GuardrailScope]*resources.GuardrailChain{scope: {Input: []*resources.Guardrail{g}, Output: []*resources.Guardrail{g}}},
		guard.Table{kind: ctor})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return c[scope]
}

// Judge runs one phase of chain over texts (user texts on input, one
// assistant text on output) and returns the decision, the rewritten texts
// and the Exec for its outcome.
func Judge(chain *guard.Chain, p guard.Phase, texts ...string) (guard.Decision, []string, *guard.Exec) {
	var e guard.Exec
	role := guard.RoleUser
	stages := chain.Input
	if p == guard.Output {
		role, stages = guard.RoleAssistant, chain.Output
	}
	for _, s := range texts {
		e.AddText(guard.Text{Role: role, Data: []byte(s)}, false, true)
	}
	d := e.Judge(context.Background(), p, "m", stages)
	var out []string
	for _, t := range e.Texts() {
		out = append(out, string(t.Data))
	}
	return d, out, &e
}

// Stream feeds an assistant answer, split into deltas, through the chat
// stream output policy of chain and returns the decision and the content
// the caller would see.
func Stream(t testing.TB, chain *guard.Chain, deltas ...string) (guard.Decision, string, *guard.Exec) {
	t.Helper()
	var e guard.Exec
	var s guard.ChatStream
	s.Reset(context.Background(), &e, "m", chain.Output)
	var content strings.Builder
	drain := func() {
		for {
			c, ok := s.Next()
			if !ok {
				return
			}
			var v struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(c, &v); err != nil {
				t.Fatalf("released invalid JSON %q: %v", c, err)
			}
			for _, ch := range v.Choices {
				content.WriteString(ch.Delta.Content)
			}
		}
	}
	chunk := func(delta, finish string) []byte {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return []byte(`{"id":"c1","object":"chat.completion.chunk","created":7,"model":"up","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`)
	}
	push := func(c []byte) (guard.Decision, bool) {
		if d := s.Push(c); d >= guard.Blocked {
			drain()
			return d, true
		}
		drain()
		return guard.Pass, false
	}
	if d, stop := push(chunk(`{"role":"assistant","content":""}`, "")); stop {
		return d, content.String(), &e
	}
	for _, d := range deltas {
		q, _ := json.Marshal(d)
		if dec, stop := push(chunk(`{"content":`+string(q)+`}`, "")); stop {
			return dec, content.String(), &e
		}
	}
	if d, stop := push(chunk(`{}`, "stop")); stop {
		return d, content.String(), &e
	}
	d := s.End()
	drain()
	return d, content.String(), &e
}

// Hits renders an outcome's hits as "guardrail:action,...".
func Hits(hs []guard.Hit) string {
	var b strings.Builder
	for i, h := range hs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(h.Guardrail + ":" + h.Action)
	}
	return b.String()
}

// Want is what one judged case must give.
type Want struct {
	Decision guard.Decision
	Texts    string // the texts after the check, joined by "|"; "" is not checked
	Enforced string // Hits of the enforced outcome
	Bypass   string // the recorded bypass reason
	NoLeak   []string
}

// Expect judges texts with one phase of chain and checks w; a check error
// must carry none of w.NoLeak (credentials, judged text).
func Expect(t testing.TB, name string, chain *guard.Chain, p guard.Phase, texts []string, w Want) {
	t.Helper()
	d, out, e := Judge(chain, p, texts...)
	if d != w.Decision {
		t.Fatalf("%s: decision %d; want %d (err %v)", name, d, w.Decision, e.Err)
	}
	if w.Texts != "" && strings.Join(out, "|") != w.Texts {
		t.Fatalf("%s: texts %q; want %q", name, strings.Join(out, "|"), w.Texts)
	}
	if h := Hits(e.Outcome.Enforced); h != w.Enforced {
		t.Fatalf("%s: hits %q; want %q", name, h, w.Enforced)
	}
	if e.Outcome.BypassedReason != w.Bypass {
		t.Fatalf("%s: bypass %q; want %q", name, e.Outcome.BypassedReason, w.Bypass)
	}
	for _, s := range w.NoLeak {
		if e.Err != nil && strings.Contains(e.Err.Error(), s) {
			t.Fatalf("%s: error carries %q: %v", name, s, e.Err)
		}
	}
}
