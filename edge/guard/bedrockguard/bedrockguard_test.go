package bedrockguard

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"gw/admin/resources"
	"gw/edge/guard"
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

func options() *resources.BedrockGuardrailOptions {
	return &resources.BedrockGuardrailOptions{GuardrailID: "gr-mock1", GuardrailVersion: "DRAFT", Region: "us-east-1",
		Credentials: resources.AWSStaticCredentials{AccessKeyID: mock.BedrockAccessKeyID, SecretAccessKey: resources.NewSecret(mock.BedrockSecretAccessKey)},
		LatencyMode: resources.BedrockLatencySerial}
}

func guardrail(o *resources.BedrockGuardrailOptions, mut func(*resources.Guardrail)) *resources.Guardrail {
	g := &resources.Guardrail{Name: "bg", Kind: resources.GuardrailBedrock, Enabled: true,
		HookPoint: resources.HookPointBoth, InputMessages: resources.InputMessagesAll, EnforcementMode: resources.EnforcementBlock, Options: o}
	if mut != nil {
		mut(g)
	}
	return g
}

func judge(t *testing.T, endpoint string, g *resources.Guardrail, p guard.Phase, texts ...guard.Text) (guard.Decision, *guard.Exec) {
	t.Helper()
	env := func(k string) (string, bool) { return endpoint, k == Env[0] }
	ctor := func(g *resources.Guardrail) (guard.Checker, error) {
		return NewChecker(g.Name, g.Options.(*resources.BedrockGuardrailOptions), env)
	}
	scope := resources.GuardrailScope{Type: "model", Name: "m"}
	ch, err := guard.Compile(map[resources.GuardrailScope]*resources.GuardrailChain{scope: {Input: []*resources.Guardrail{g}, Output: []*resources.Guardrail{g}}},
		guard.Table{g.Kind: ctor})
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
	base, srv := startMock(t)
	old := serialTimeout
	serialTimeout = 300 * time.Millisecond
	t.Cleanup(func() { serialTimeout = old })
	u := func(s ...string) []guard.Text {
		var out []guard.Text
		for _, x := range s {
			out = append(out, guard.Text{Role: guard.RoleUser, Data: []byte(x)})
		}
		return out
	}
	timed := func(ms int64) *resources.BedrockGuardrailOptions {
		o := options()
		o.LatencyMode, o.LatencyTimeoutMS = resources.BedrockLatencyTimed, ms
		return o
	}
	for _, c := range []struct {
		name     string
		endpoint string
		o        *resources.BedrockGuardrailOptions
		mut      func(*resources.Guardrail)
		phase    guard.Phase
		texts    []guard.Text
		want     guard.Decision
		bypass   string
		rewrites []string // per text, "" unchanged
		source   string
	}{
		{name: "allow", texts: u("hello"), want: guard.Pass, source: `"source":"INPUT"`},
		{name: "block", texts: u("hi", "please BLOCKME now"), want: guard.Blocked},
		{name: "output block", phase: guard.Output, texts: []guard.Text{{Role: guard.RoleAssistant, Data: []byte("BLOCKME")}}, want: guard.Blocked, source: `"source":"OUTPUT"`},
		{name: "anonymized rewrites", texts: u("mail me at a.b@example.com", "no pii here", "", "x@y.org and z@w.io"), want: guard.Masked,
			rewrites: []string{"mail me at {EMAIL}", "", "", "{EMAIL} and {EMAIL}"}},
		{name: "5xx fail closed", endpoint: "/knobs/status=500", texts: u("x"), want: guard.Unavailable},
		{name: "5xx fail open", endpoint: "/knobs/status=500", texts: u("x"), want: guard.Pass, bypass: guard.BypassCheckFailed,
			mut: func(g *resources.Guardrail) { g.FailOpen = true }},
		{name: "serial timeout fail closed", endpoint: "/knobs/latency=800ms", texts: u("x"), want: guard.Unavailable},
		{name: "serial timeout fail open", endpoint: "/knobs/latency=800ms", texts: u("x"), want: guard.Pass, bypass: guard.BypassCheckFailed,
			mut: func(g *resources.Guardrail) { g.FailOpen = true }},
		{name: "timed in time blocks", o: timed(1000), texts: u("BLOCKME"), want: guard.Blocked},
		{name: "timed late is released though fail closed", endpoint: "/knobs/latency=600ms", o: timed(100), texts: u("BLOCKME"),
			want: guard.Pass, bypass: guard.BypassTimedRelease},
		{name: "timed late output released", endpoint: "/knobs/latency=600ms", o: timed(100), phase: guard.Output,
			texts: []guard.Text{{Role: guard.RoleAssistant, Data: []byte("BLOCKME")}}, want: guard.Pass, bypass: guard.BypassTimedRelease},
		{name: "timed 5xx is a failure, not a release", endpoint: "/knobs/status=503", o: timed(1000), texts: u("x"), want: guard.Unavailable},
		{name: "malformed", texts: u("mock:malformed"), want: guard.Unavailable},
		{name: "wrong secret", texts: u("x"), want: guard.Unavailable, o: func() *resources.BedrockGuardrailOptions {
			o := options()
			o.Credentials.SecretAccessKey = resources.NewSecret("wrong/secret")
			return o
		}()},
		{name: "guardrail ARN and a version number", texts: u("BLOCKME"), want: guard.Blocked, o: func() *resources.BedrockGuardrailOptions {
			o := options()
			o.GuardrailID, o.GuardrailVersion = "arn:aws:bedrock:us-east-1:123456789012:guardrail/abc123", "3"
			return o
		}()},
		{name: "endpoint with a path prefix", endpoint: "/guardmock/filler=BLOCKME", texts: u("some filler"), want: guard.Blocked},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv.ClearRequests()
			o := c.o
			if o == nil {
				o = options()
			}
			got, e := judge(t, base+c.endpoint, guardrail(o, c.mut), c.phase, c.texts...)
			if got != c.want {
				t.Fatalf("got %d; want %d (err %v)", got, c.want, e.Err)
			}
			if e.Outcome.BypassedReason != c.bypass {
				t.Fatalf("bypass: got %q; want %q", e.Outcome.BypassedReason, c.bypass)
			}
			for i, w := range c.rewrites {
				if w == "" {
					if e.Changed(i) {
						t.Fatalf("text %d rewritten to %q", i, e.Texts()[i].Data)
					}
					continue
				}
				if !e.Changed(i) || string(e.Texts()[i].Data) != w {
					t.Fatalf("text %d: got %q; want %q", i, e.Texts()[i].Data, w)
				}
			}
			if e.Err != nil && (strings.Contains(e.Err.Error(), mock.BedrockSecretAccessKey) || strings.Contains(e.Err.Error(), "wrong/secret")) {
				t.Fatalf("error leaks the secret: %v", e.Err)
			}
			if c.source != "" {
				rs := srv.Requests()
				if len(rs) != 1 || !strings.Contains(rs[0].Body, c.source) || !strings.HasSuffix(rs[0].Path, "/guardrail/gr-mock1/version/DRAFT/apply") {
					t.Fatalf("requests: %+v", rs)
				}
			}
		})
	}
}

// TestJudge covers answers the mock does not produce.
func TestJudge(t *testing.T) {
	base, _ := startMock(t)
	ck, err := NewChecker("bg", options(), func(k string) (string, bool) { return base, k == Env[0] })
	if err != nil {
		t.Fatal(err)
	}
	c := ck
	req := &guard.Request{Texts: []guard.Text{{Data: []byte("a@b.cd")}}}
	f := func(resp string, want guard.Action, rule string, wantErr bool) {
		t.Helper()
		var v guard.Verdict
		err := c.Judge([]byte(resp), req, []int{0}, &v)
		if (err != nil) != wantErr || v.Action != want || v.Rule != rule {
			t.Fatalf("%s: got %v %q %v", resp, v.Action, v.Rule, err)
		}
	}
	f(`{"action":"NONE","outputs":[]}`, guard.Allow, "", false)
	f(`{"action":"GUARDRAIL_INTERVENED","assessments":[{"contentPolicy":{"filters":[{"type":"VIOLENCE","confidence":"HIGH","action":"BLOCKED"}]}}]}`, guard.Block, "contentPolicy", false)
	f(`{"action":"GUARDRAIL_INTERVENED","assessments":[{"wordPolicy":{"customWords":[{"match":"x","action":"BLOCKED"}]},"sensitiveInformationPolicy":{"piiEntities":[{"action":"ANONYMIZED"}]}}],"outputs":[{"text":"x"}]}`,
		guard.Block, "wordPolicy", false)
	f(`{"action":"GUARDRAIL_INTERVENED","assessments":[{"sensitiveInformationPolicy":{"piiEntities":[{"type":"EMAIL","action":"ANONYMIZED"}]}}],"outputs":[{"text":"{EMAIL}"}]}`,
		guard.Rewrite, "sensitiveInformationPolicy", false)
	f(`{"action":"GUARDRAIL_INTERVENED","assessments":[{"sensitiveInformationPolicy":{"piiEntities":[{"action":"ANONYMIZED"}]}}],"outputs":[{"text":"a"},{"text":"b"}]}`,
		guard.Allow, "", true)
	f(`{"action":"GUARDRAIL_INTERVENED","assessments":[]}`, guard.Block, "guardrail_intervened", false)
	f(`{"action":"MAYBE"}`, guard.Allow, "", true)
	f(`{"outputs":[]}`, guard.Allow, "", true)
	f(`{"action":"GUARDRAIL_INTERVENED","assessments":{}}`, guard.Allow, "", true)
}

func TestReleasedIsWrapped(t *testing.T) {
	base, _ := startMock(t)
	o := options()
	o.LatencyMode, o.LatencyTimeoutMS = resources.BedrockLatencyTimed, 100
	ck, err := NewChecker("bg", o, func(k string) (string, bool) { return base + "/knobs/latency=500ms", k == Env[1] })
	if err != nil {
		t.Fatal(err)
	}
	var v guard.Verdict
	err = ck.Check(context.Background(), &guard.Request{Texts: []guard.Text{{Data: []byte("x")}}}, &v)
	if !errors.Is(err, guard.ErrReleased) {
		t.Fatalf("got %v; want ErrReleased", err)
	}
}
