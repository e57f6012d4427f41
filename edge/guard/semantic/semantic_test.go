package semantic

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"gw/adapters/upstream"
	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/embed"
	"gw/edge/guard"
	"gw/perf/mock"
)

func texts(ts ...guard.Text) *guard.Request { return &guard.Request{Phase: guard.Input, Texts: ts} }

func user(s string) guard.Text { return guard.Text{Role: guard.RoleUser, Data: []byte(s)} }

func TestScreened(t *testing.T) {
	f := func(req *guard.Request, all bool, max int, want ...string) {
		t.Helper()
		got := Screened(nil, req, all, max)
		var gs []string
		for _, g := range got {
			gs = append(gs, string(g))
		}
		if strings.Join(gs, "|") != strings.Join(want, "|") {
			t.Errorf("Screened = %q; want %q", gs, want)
		}
	}
	sys := guard.Text{Role: guard.RoleSystem, Data: []byte("sys")}
	asst := guard.Text{Role: guard.RoleAssistant, Data: []byte("asst")}
	tool := guard.Text{Role: guard.RoleTool, Part: guard.PartToolResult, Data: []byte("tool")}
	args := guard.Text{Role: guard.RoleAssistant, Part: guard.PartToolArguments, Data: []byte("args")}
	req := texts(sys, user("u1"), asst, tool, args, user(""), user("u2"))
	f(req, false, 8, "u1", "u2")
	f(req, true, 8, "sys", "u1", "asst", "u2")
	f(req, true, 2, "asst", "u2") // the most recent
	f(req, false, 1, "u2")
	out := &guard.Request{Phase: guard.Output, Texts: []guard.Text{asst, args}}
	f(out, false, 8, "asst", "args") // every answer text
	f(texts(), false, 8)
}

const guardFile = `_format_version: "1"
provider_keys:
  - {display_name: oa, provider: openai, api_key: sk-test, api_base: "${MOCK}/v1"}
  - {display_name: oa-slow, provider: openai, api_key: sk-test, api_base: "${MOCK}/knobs/latency=300ms/v1"}
models:
  - {display_name: emb, provider: openai, model_name: text-embedding-3-small, provider_key: oa, embedding: {dimensions: 1536}}
  - {display_name: emb-slow, provider: openai, model_name: text-embedding-3-small, provider_key: oa-slow, embedding: {dimensions: 1536}}
guardrails:
  - {name: deny, kind: semantic, embedding_model: emb, deny_examples: ["bad thing", "worse thing"], deny_threshold: 0.95}
  - {name: allow, kind: semantic, embedding_model: emb, allow_examples: ["good topic"], allow_threshold: 0.95}
  - {name: both, kind: semantic, embedding_model: emb, text_source: all_messages, max_screened_texts: 2, allow_examples: ["good topic", "bad thing"], allow_threshold: 0.95, deny_examples: ["bad thing"], deny_threshold: 0.95}
  - {name: idle, kind: semantic, embedding_model: emb}
  - {name: slow, kind: semantic, embedding_model: emb-slow, timeout_ms: 50, deny_examples: ["bad thing"], deny_threshold: 0.9}
`

// checkers compiles guardFile against a live mock and prepares every
// semantic checker as the snapshot's prepare hook does.
func checkers(t *testing.T, prepare bool) (map[string]*Checker, *mock.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := mock.New(mock.Config{})
	go m.Serve(ln)
	t.Cleanup(func() { m.Shutdown() })
	r := resources.Load([]byte(guardFile), func(k string) (string, bool) { return "http://" + ln.Addr().String(), k == "MOCK" })
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	opt := snapshot.DefaultOptions()
	opt.Pool = upstream.NewPool(upstream.Options{})
	s, err := snapshot.Compile(r.Resources, opt)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*Checker{}
	sess := embed.NewCache().Session()
	for _, g := range r.Resources.Guardrails {
		ck, err := New(g)
		if err != nil {
			t.Fatal(err)
		}
		c := ck.(*Checker)
		if prepare {
			if err := c.Prepare(context.Background(), s, sess); err != nil {
				t.Fatal(err)
			}
		}
		out[g.Name] = c
	}
	return out, m
}

func TestCheck(t *testing.T) {
	cs, m := checkers(t, true)
	f := func(name string, req *guard.Request, want guard.Action, rule string) {
		t.Helper()
		var v guard.Verdict
		if err := cs[name].Check(context.Background(), req, &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if v.Action != want || v.Rule != rule {
			t.Errorf("%s %v: %v %q; want %v %q", name, req.Texts, v.Action, v.Rule, want, rule)
		}
	}
	f("deny", texts(user("hello")), guard.Allow, "")
	f("deny", texts(user("hello"), user("worse thing")), guard.Block, RuleDeny)
	f("deny", &guard.Request{Phase: guard.Output, Texts: []guard.Text{{Role: guard.RoleAssistant, Data: []byte("bad thing")}}}, guard.Block, RuleDeny)
	f("allow", texts(user("good topic")), guard.Allow, "")
	f("allow", texts(user("good topic"), user("off topic")), guard.Block, RuleAllow)
	f("allow", texts(guard.Text{Role: guard.RoleSystem, Data: []byte("off topic")}, user("good topic")), guard.Allow, "") // user_messages only
	// both: deny wins over a matching allow example; only the last two texts.
	f("both", texts(user("bad thing")), guard.Block, RuleDeny)
	f("both", texts(user("off topic"), guard.Text{Role: guard.RoleSystem, Data: []byte("good topic")}, user("good topic")), guard.Allow, "")
	// Nothing to screen, or no examples: no embedding call.
	n := len(m.Requests())
	f("deny", texts(guard.Text{Role: guard.RoleSystem, Data: []byte("bad thing")}), guard.Allow, "")
	f("idle", texts(user("bad thing")), guard.Allow, "")
	if len(m.Requests()) != n {
		t.Fatal("an embedding call for nothing to screen")
	}
	// One batch request per check.
	f("deny", texts(user("a"), user("b"), user("c")), guard.Allow, "")
	if got := m.Requests()[len(m.Requests())-1].Body; len(m.Requests()) != n+1 || !strings.Contains(got, `"input":["a","b","c"]`) {
		t.Fatalf("batch: %d calls, last %s", len(m.Requests())-n, got)
	}
	// A timed-out call is an error: fail_open decides in the engine.
	ctx, cancel := context.WithTimeout(context.Background(), cs["slow"].timeout)
	defer cancel()
	var v guard.Verdict
	if err := cs["slow"].Check(ctx, texts(user("x")), &v); !errors.Is(err, embed.ErrTimeout) {
		t.Fatalf("slow: %v", err)
	}
}

func TestNotPrepared(t *testing.T) {
	cs, _ := checkers(t, false)
	var v guard.Verdict
	if err := cs["deny"].Check(context.Background(), texts(user("x")), &v); err != ErrNotPrepared {
		t.Fatalf("unprepared: %v", err)
	}
	if err := cs["idle"].Check(context.Background(), texts(user("x")), &v); err != nil {
		t.Fatalf("inactive: %v", err)
	}
	if !cs["deny"].BuffersFull() {
		t.Fatal("semantic output must be buffered whole")
	}
}
