package aliyunguard

import (
	"context"
	"net"
	"strings"
	"testing"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/aliyunapi"
	"gw/perf/mock"
)

func startMock(t *testing.T) (string, *mock.Server) {
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

func guardrail(endpoint string, mut func(*resources.Guardrail, *resources.AliyunAIGuardrailOptions)) *resources.Guardrail {
	o := &resources.AliyunAIGuardrailOptions{ServiceLevel: "pro", AliyunCredentials: resources.AliyunCredentials{
		Region: "cn-shanghai", AccessKeyID: mock.AliyunAccessKeyID, AccessKeySecret: resources.NewSecret(mock.AliyunAccessKeySecret), Endpoint: endpoint}}
	g := &resources.Guardrail{Name: "aig", Kind: resources.GuardrailAliyunAIGuardrail, Enabled: true,
		HookPoint: resources.HookPointBoth, InputMessages: resources.InputMessagesAll, EnforcementMode: resources.EnforcementBlock,
		TimeoutMS: 2000, Options: o}
	if mut != nil {
		mut(g, o)
	}
	return g
}

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
	base, srv := startMock(t)
	u := func(s string) []guard.Text { return []guard.Text{{Role: guard.RoleUser, Data: []byte(s)}} }
	basic := func(_ *resources.Guardrail, o *resources.AliyunAIGuardrailOptions) { o.ServiceLevel = "basic" }
	for _, c := range []struct {
		name    string
		mut     func(*resources.Guardrail, *resources.AliyunAIGuardrailOptions)
		phase   guard.Phase
		texts   []guard.Text
		want    guard.Decision
		rule    string
		service string
	}{
		{name: "allow pro", texts: u("hello"), want: guard.Pass, service: "query_security_check_pro"},
		{name: "allow basic", texts: u("hello"), want: guard.Pass, service: "query_security_check", mut: basic},
		{name: "content block", texts: u("risk:high"), want: guard.Blocked, rule: "contentModeration"},
		{name: "prompt attack", texts: u("attack:high"), want: guard.Blocked, rule: "promptAttack"},
		{name: "medium is watched, passes", texts: u("risk:medium"), want: guard.Pass},
		{name: "output pro", phase: guard.Output, texts: []guard.Text{{Role: guard.RoleAssistant, Data: []byte("risk:high")}}, want: guard.Blocked,
			service: "response_security_check_pro"},
		{name: "output basic", phase: guard.Output, texts: []guard.Text{{Role: guard.RoleAssistant, Data: []byte("ok")}}, want: guard.Pass,
			service: "response_security_check", mut: basic},
		{name: "5xx fail closed", texts: u("x"), want: guard.Unavailable,
			mut: func(_ *resources.Guardrail, o *resources.AliyunAIGuardrailOptions) {
				o.Endpoint += "/knobs/status=503/aliyun"
			}},
		{name: "5xx fail open", texts: u("x"), want: guard.Pass,
			mut: func(g *resources.Guardrail, o *resources.AliyunAIGuardrailOptions) {
				o.Endpoint += "/knobs/status=503/aliyun"
				g.FailOpen = true
			}},
		{name: "timeout fail closed", texts: u("x"), want: guard.Unavailable,
			mut: func(g *resources.Guardrail, o *resources.AliyunAIGuardrailOptions) {
				o.Endpoint += "/knobs/latency=400ms/aliyun"
				g.TimeoutMS = 40
			}},
		{name: "timeout fail open", texts: u("x"), want: guard.Pass,
			mut: func(g *resources.Guardrail, o *resources.AliyunAIGuardrailOptions) {
				o.Endpoint += "/knobs/latency=400ms/aliyun"
				g.TimeoutMS, g.FailOpen = 40, true
			}},
		{name: "malformed", texts: u("mock:malformed"), want: guard.Unavailable},
		{name: "bad signature", texts: u("x"), want: guard.Unavailable,
			mut: func(_ *resources.Guardrail, o *resources.AliyunAIGuardrailOptions) {
				o.AccessKeySecret = resources.NewSecret("nope-nope")
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv.ClearRequests()
			g := guardrail(base, c.mut)
			got, e := judge(t, g, c.phase, c.texts...)
			if got != c.want {
				t.Fatalf("got %d; want %d (err %v)", got, c.want, e.Err)
			}
			if e.Err != nil && strings.Contains(e.Err.Error(), mock.AliyunAccessKeySecret) {
				t.Fatalf("error leaks the secret: %v", e.Err)
			}
			if c.service != "" {
				rs := srv.Requests()
				if len(rs) != 1 || rs[0].Header.Get("X-Acs-Action") != Action || !strings.Contains(rs[0].Query, "Service="+c.service) {
					t.Fatalf("requests: %+v", rs)
				}
			}
			if c.rule != "" {
				ck, _ := New(g)
				var v guard.Verdict
				if err := ck.Check(context.Background(), &guard.Request{Phase: c.phase, Texts: c.texts}, &v); err != nil || v.Rule != c.rule {
					t.Fatalf("rule: got %q (%v); want %q", v.Rule, err, c.rule)
				}
			}
		})
	}
}

// TestJudge covers answer shapes the mock does not produce.
func TestJudge(t *testing.T) {
	f := func(data, wantRule string, wantErr bool) {
		t.Helper()
		rule, err := Verdict([]byte(data))
		if (err != nil) != wantErr || rule != wantRule {
			t.Fatalf("%s: got %q, %v; want %q, err %v", data, rule, err, wantRule, wantErr)
		}
	}
	f(`{"Suggestion":"pass"}`, "", false)
	f(`{"Suggestion":"block"}`, "block", false)
	f(`{"Suggestion":"mask","Detail":[{"Type":"sensitiveData","Suggestion":"mask"}]}`, "", false)
	f(`{"Detail":[{"Type":"sensitiveData","Suggestion":"block"}]}`, "sensitiveData", false)
	f(`{"Detail":[{"Type":"has spaces and text","Suggestion":"block"}]}`, "block", false)
	f(`{"RiskLevel":"high"}`, "contentModeration", false)
	f(`{"AttackLevel":"high","RiskLevel":"low"}`, "promptAttack", false)
	f(`{"RiskLevel":"medium"}`, "", false)
	f(`{"Detail":"x"}`, "", true)
	f(`{"Detail":[1]}`, "", true)
	f(`{}`, "", true)
}

func TestChunking(t *testing.T) {
	base, srv := startMock(t)
	ck, _ := New(guardrail(base, nil))
	for _, c := range []struct{ n, want int }{{aliyunapi.ChunkChars, 1}, {aliyunapi.ChunkChars + 1, 2}, {2 * aliyunapi.ChunkChars, 2}} {
		srv.ClearRequests()
		var v guard.Verdict
		text := strings.Repeat("ß", c.n)
		if err := ck.Check(context.Background(), &guard.Request{Texts: []guard.Text{{Role: guard.RoleUser, Data: []byte(text)}}}, &v); err != nil {
			t.Fatal(err)
		}
		if n := len(srv.Requests()); n != c.want {
			t.Fatalf("%d characters: got %d calls; want %d", c.n, n, c.want)
		}
	}
}
