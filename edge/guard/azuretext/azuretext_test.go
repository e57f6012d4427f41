package azuretext

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/remote"
	"gw/perf/mock"
)

func startMock(t testing.TB) (string, *mock.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := mock.New(mock.Config{RecordLimit: 256})
	go s.Serve(ln)
	t.Cleanup(func() { _ = s.Shutdown() })
	return "http://" + ln.Addr().String(), s
}

func guardrail(endpoint string, mut func(*resources.Guardrail, *resources.AzureTextModerationOptions)) *resources.Guardrail {
	o := &resources.AzureTextModerationOptions{Endpoint: endpoint, APIKey: resources.NewSecret(mock.AzureContentSafetyKey),
		Categories: resources.AzureTextCategories, SeverityThreshold: 2, SeverityThresholdByCategory: map[string]int64{},
		OutputType: "FourSeverityLevels", TextSource: "concatenate_user_content"}
	g := &resources.Guardrail{Name: "azt", Kind: resources.GuardrailAzureContentSafetyTextModeration, Enabled: true,
		HookPoint: resources.HookPointBoth, InputMessages: resources.InputMessagesAll, EnforcementMode: resources.EnforcementBlock,
		TimeoutMS: 2000, Options: o}
	if mut != nil {
		mut(g, o)
	}
	return g
}

func user(s string) guard.Text { return guard.Text{Role: guard.RoleUser, Data: []byte(s)} }

// judge runs g through the engine (guard.Compile with this kind, Exec.Judge).
func judge(t *testing.T, g *resources.Guardrail, p guard.Phase, texts ...guard.Text) (guard.Decision, *guard.Exec) {
	t.Helper()
	scope := resources.GuardrailScope{Type: "model", Name: "m"}
	ch, err := guard.Compile(map[resources.GuardrailScope]*resources.GuardrailChain{scope: {Input: []*resources.Guardrail{g}, Output: []*resources.Guardrail{g}}},
		guard.Table{g.Kind: New})
	if err != nil {
		t.Fatal(err)
	}
	e := new(guard.Exec)
	e.Reset()
	for _, x := range texts {
		e.AddText(x, false, true)
	}
	stages := ch[scope].Input
	if p == guard.Output {
		stages = ch[scope].Output
	}
	return e.Judge(context.Background(), p, "m", stages), e
}

func TestVerdicts(t *testing.T) {
	base, _ := startMock(t)
	type tc struct {
		name  string
		mut   func(*resources.Guardrail, *resources.AzureTextModerationOptions)
		phase guard.Phase
		texts []guard.Text
		want  guard.Decision
		rule  string
	}
	for _, c := range []tc{
		{name: "allow", texts: []guard.Text{user("hello there")}, want: guard.Pass},
		{name: "block at threshold", texts: []guard.Text{user("Violence:2")}, want: guard.Blocked, rule: "Violence"},
		{name: "below threshold", texts: []guard.Text{user("Violence:1")}, want: guard.Pass},
		{name: "per-category threshold passes", texts: []guard.Text{user("Hate:4")}, want: guard.Pass,
			mut: func(_ *resources.Guardrail, o *resources.AzureTextModerationOptions) {
				o.SeverityThresholdByCategory["Hate"] = 6
			}},
		{name: "per-category threshold blocks", texts: []guard.Text{user("Hate:6")}, want: guard.Blocked, rule: "Hate",
			mut: func(_ *resources.Guardrail, o *resources.AzureTextModerationOptions) {
				o.SeverityThresholdByCategory["Hate"] = 6
			}},
		{name: "eight levels", texts: []guard.Text{user("SelfHarm:3")}, want: guard.Blocked, rule: "SelfHarm",
			mut: func(_ *resources.Guardrail, o *resources.AzureTextModerationOptions) {
				o.OutputType, o.SeverityThreshold = "EightSeverityLevels", 3
			}},
		{name: "four levels round down", texts: []guard.Text{user("SelfHarm:3")}, want: guard.Pass,
			mut: func(_ *resources.Guardrail, o *resources.AzureTextModerationOptions) { o.SeverityThreshold = 3 }},
		{name: "category not configured", texts: []guard.Text{user("Violence:6")}, want: guard.Pass,
			mut: func(_ *resources.Guardrail, o *resources.AzureTextModerationOptions) { o.Categories = []string{"Hate"} }},
		{name: "blocklist", texts: []guard.Text{user("a blocklisted word")}, want: guard.Blocked, rule: "blocklist",
			mut: func(_ *resources.Guardrail, o *resources.AzureTextModerationOptions) {
				o.BlocklistNames, o.HaltOnBlocklistHit = []string{"mine"}, true
			}},
		{name: "no blocklist configured", texts: []guard.Text{user("a blocklisted word")}, want: guard.Pass},
		{name: "user content only skips system", texts: []guard.Text{{Role: guard.RoleSystem, Data: []byte("Violence:6")}, user("hi")}, want: guard.Pass},
		{name: "all content judges system", texts: []guard.Text{{Role: guard.RoleSystem, Data: []byte("Violence:6")}, user("hi")}, want: guard.Blocked, rule: "Violence",
			mut: func(_ *resources.Guardrail, o *resources.AzureTextModerationOptions) {
				o.TextSource = "concatenate_all_content"
			}},
		{name: "output", phase: guard.Output, texts: []guard.Text{{Role: guard.RoleAssistant, Data: []byte("Sexual:4")}}, want: guard.Blocked, rule: "Sexual"},
		{name: "5xx fail closed", texts: []guard.Text{user("hi")}, want: guard.Unavailable,
			mut: func(g *resources.Guardrail, o *resources.AzureTextModerationOptions) {
				o.Endpoint += "/knobs/status=503"
			}},
		{name: "5xx fail open", texts: []guard.Text{user("hi")}, want: guard.Pass,
			mut: func(g *resources.Guardrail, o *resources.AzureTextModerationOptions) {
				o.Endpoint += "/knobs/status=500"
				g.FailOpen = true
			}},
		{name: "timeout fail closed", texts: []guard.Text{user("hi")}, want: guard.Unavailable,
			mut: func(g *resources.Guardrail, o *resources.AzureTextModerationOptions) {
				o.Endpoint += "/knobs/latency=400ms"
				g.TimeoutMS = 50
			}},
		{name: "timeout fail open", texts: []guard.Text{user("hi")}, want: guard.Pass,
			mut: func(g *resources.Guardrail, o *resources.AzureTextModerationOptions) {
				o.Endpoint += "/knobs/latency=400ms"
				g.TimeoutMS, g.FailOpen = 50, true
			}},
		{name: "output timeout output_fail_open", phase: guard.Output, texts: []guard.Text{{Role: guard.RoleAssistant, Data: []byte("x")}}, want: guard.Pass,
			mut: func(g *resources.Guardrail, o *resources.AzureTextModerationOptions) {
				o.Endpoint += "/knobs/latency=400ms"
				g.TimeoutMS, g.OutputFailOpen = 50, true
			}},
		{name: "malformed answer", texts: []guard.Text{user("mock:malformed")}, want: guard.Unavailable},
		{name: "wrong key", texts: []guard.Text{user("hi")}, want: guard.Unavailable,
			mut: func(_ *resources.Guardrail, o *resources.AzureTextModerationOptions) {
				o.APIKey = resources.NewSecret("wrong-key-value")
			}},
		{name: "alias marks the filler", phase: guard.Output, texts: []guard.Text{{Role: guard.RoleAssistant, Data: []byte("deterministic filler")}}, want: guard.Blocked, rule: "Violence",
			mut: func(_ *resources.Guardrail, o *resources.AzureTextModerationOptions) {
				o.Endpoint += "/guardmock/deterministic=Violence:6"
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := guardrail(base, c.mut)
			got, e := judge(t, g, c.phase, c.texts...)
			if got != c.want {
				t.Fatalf("got decision %d; want %d (err %v)", got, c.want, e.Err)
			}
			if c.rule != "" {
				var v guard.Verdict
				ck, _ := New(g)
				req := &guard.Request{Phase: c.phase, Texts: c.texts}
				if err := ck.Check(context.Background(), req, &v); err != nil || v.Rule != c.rule {
					t.Fatalf("rule: got %q (err %v); want %q", v.Rule, err, c.rule)
				}
			}
			if e.Err != nil {
				msg := e.Err.Error()
				for _, secret := range []string{mock.AzureContentSafetyKey, "wrong-key-value", "mock:malformed"} {
					if strings.Contains(msg, secret) {
						t.Fatalf("error %q leaks %q", msg, secret)
					}
				}
			}
		})
	}
}

func TestErrorClasses(t *testing.T) {
	base, _ := startMock(t)
	f := func(endpoint string, timeoutMS int64, text string, want remote.Class) {
		t.Helper()
		g := guardrail(endpoint, func(g *resources.Guardrail, _ *resources.AzureTextModerationOptions) { g.TimeoutMS = timeoutMS })
		ck, err := New(g)
		if err != nil {
			t.Fatal(err)
		}
		var v guard.Verdict
		err = ck.Check(context.Background(), &guard.Request{Texts: []guard.Text{user(text)}}, &v)
		var re *remote.Error
		if !errors.As(err, &re) || re.Class != want {
			t.Fatalf("%s: got %v; want class %v", endpoint, err, want)
		}
	}
	f(base+"/knobs/status=500", 1000, "x", remote.ClassStatus)
	f(base+"/knobs/latency=300ms", 30, "x", remote.ClassTimeout)
	f(base, 1000, "mock:malformed", remote.ClassMalformed)
}

// TestChunking: chunks of at most 10,000 characters, one call each, at
// the exact boundaries; multi-byte characters count once.
func TestChunking(t *testing.T) {
	base, srv := startMock(t)
	ck, err := New(guardrail(base, nil))
	if err != nil {
		t.Fatal(err)
	}
	f := func(texts []string, wantCalls int) {
		t.Helper()
		srv.ClearRequests()
		req := &guard.Request{}
		for _, s := range texts {
			req.Texts = append(req.Texts, user(s))
		}
		var v guard.Verdict
		if err := ck.Check(context.Background(), req, &v); err != nil {
			t.Fatalf("check: %v", err)
		}
		if n := len(srv.Requests()); n != wantCalls {
			t.Fatalf("%d texts of %d bytes: got %d calls; want %d", len(texts), len(texts[0]), n, wantCalls)
		}
	}
	a := func(n int) string { return strings.Repeat("a", n) }
	f([]string{a(ChunkChars - 1)}, 1)
	f([]string{a(ChunkChars)}, 1)
	f([]string{a(ChunkChars + 1)}, 2)
	f([]string{a(2 * ChunkChars)}, 2)
	f([]string{a(2*ChunkChars + 1)}, 3)
	f([]string{strings.Repeat("é", ChunkChars)}, 1)
	f([]string{strings.Repeat("語", ChunkChars+1)}, 2)
	f([]string{a(ChunkChars / 2), a(ChunkChars/2 - 1)}, 1) // joined with one newline: exactly 10,000
	f([]string{a(ChunkChars / 2), a(ChunkChars / 2)}, 2)

	// A block in the second chunk stops there: no third call.
	srv.ClearRequests()
	var v guard.Verdict
	text := a(ChunkChars) + "Violence:6" + a(2*ChunkChars)
	if err := ck.Check(context.Background(), &guard.Request{Texts: []guard.Text{user(text)}}, &v); err != nil || v.Action != guard.Block {
		t.Fatalf("got %v %v; want a block", v.Action, err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("got %d calls; want 2", n)
	}
}

func TestNoTextNoCall(t *testing.T) {
	base, srv := startMock(t)
	ck, _ := New(guardrail(base, nil))
	var v guard.Verdict
	if err := ck.Check(context.Background(), &guard.Request{Texts: []guard.Text{{Role: guard.RoleSystem, Data: []byte("x")}}}, &v); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("got %d calls; want 0", n)
	}
}
