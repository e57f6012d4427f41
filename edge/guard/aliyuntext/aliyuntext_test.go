package aliyuntext

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

func guardrail(endpoint string, mut func(*resources.Guardrail, *resources.AliyunTextModerationOptions)) *resources.Guardrail {
	o := &resources.AliyunTextModerationOptions{RiskLevelThreshold: "high", AliyunCredentials: resources.AliyunCredentials{
		Region: "cn-shanghai", AccessKeyID: mock.AliyunAccessKeyID, AccessKeySecret: resources.NewSecret(mock.AliyunAccessKeySecret), Endpoint: endpoint}}
	g := &resources.Guardrail{Name: "ali", Kind: resources.GuardrailAliyunTextModeration, Enabled: true,
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
	threshold := func(l string) func(*resources.Guardrail, *resources.AliyunTextModerationOptions) {
		return func(_ *resources.Guardrail, o *resources.AliyunTextModerationOptions) { o.RiskLevelThreshold = l }
	}
	for _, c := range []struct {
		name    string
		mut     func(*resources.Guardrail, *resources.AliyunTextModerationOptions)
		phase   guard.Phase
		texts   []guard.Text
		want    guard.Decision
		service string
	}{
		{name: "allow", texts: u("hello, 世界"), want: guard.Pass, service: ServiceInput},
		{name: "high blocks", texts: u("risk:high"), want: guard.Blocked, service: ServiceInput},
		{name: "medium passes at high", texts: u("risk:medium"), want: guard.Pass},
		{name: "medium blocks at medium", texts: u("risk:medium"), want: guard.Blocked, mut: threshold("medium")},
		{name: "low blocks at low", texts: u("risk:low"), want: guard.Blocked, mut: threshold("low")},
		{name: "none passes at low", texts: u("fine"), want: guard.Pass, mut: threshold("low")},
		{name: "output service", phase: guard.Output, texts: []guard.Text{{Role: guard.RoleAssistant, Data: []byte("risk:high")}}, want: guard.Blocked, service: ServiceOutput},
		{name: "5xx fail closed", texts: u("x"), want: guard.Unavailable,
			mut: func(_ *resources.Guardrail, o *resources.AliyunTextModerationOptions) {
				o.Endpoint += "/knobs/status=500/aliyun"
			}},
		{name: "5xx fail open", texts: u("x"), want: guard.Pass,
			mut: func(g *resources.Guardrail, o *resources.AliyunTextModerationOptions) {
				o.Endpoint += "/knobs/status=500/aliyun"
				g.FailOpen = true
			}},
		{name: "timeout fail closed", texts: u("x"), want: guard.Unavailable,
			mut: func(g *resources.Guardrail, o *resources.AliyunTextModerationOptions) {
				o.Endpoint += "/knobs/latency=400ms/aliyun"
				g.TimeoutMS = 40
			}},
		{name: "timeout fail open", texts: u("x"), want: guard.Pass,
			mut: func(g *resources.Guardrail, o *resources.AliyunTextModerationOptions) {
				o.Endpoint += "/knobs/latency=400ms/aliyun"
				g.TimeoutMS, g.FailOpen = 40, true
			}},
		{name: "malformed", texts: u("mock:malformed"), want: guard.Unavailable},
		{name: "bad signature", texts: u("x"), want: guard.Unavailable,
			mut: func(_ *resources.Guardrail, o *resources.AliyunTextModerationOptions) {
				o.AccessKeySecret = resources.NewSecret("not-the-secret")
			}},
		{name: "unknown key", texts: u("x"), want: guard.Unavailable,
			mut: func(_ *resources.Guardrail, o *resources.AliyunTextModerationOptions) { o.AccessKeyID = "LTAIother" }},
		{name: "signed through a path prefix", texts: u("risk:high"), want: guard.Blocked,
			mut: func(_ *resources.Guardrail, o *resources.AliyunTextModerationOptions) {
				o.Endpoint += "/guardmock/x=y/aliyun"
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv.ClearRequests()
			got, e := judge(t, guardrail(base, c.mut), c.phase, c.texts...)
			if got != c.want {
				t.Fatalf("got %d; want %d (err %v)", got, c.want, e.Err)
			}
			if e.Err != nil {
				for _, s := range []string{mock.AliyunAccessKeySecret, "not-the-secret", "mock:malformed"} {
					if strings.Contains(e.Err.Error(), s) {
						t.Fatalf("error %q leaks %q", e.Err, s)
					}
				}
			}
			if c.service != "" {
				rs := srv.Requests()
				if len(rs) != 1 || rs[0].Header.Get("X-Acs-Action") != Action || !strings.Contains(rs[0].Query, "Service="+c.service) {
					t.Fatalf("requests: %+v", rs)
				}
			}
		})
	}
}

// TestChunking: at most 2,000 characters a call, at the exact boundaries.
func TestChunking(t *testing.T) {
	base, srv := startMock(t)
	ck, err := New(guardrail(base, nil))
	if err != nil {
		t.Fatal(err)
	}
	f := func(text string, want int) {
		t.Helper()
		srv.ClearRequests()
		var v guard.Verdict
		if err := ck.Check(context.Background(), &guard.Request{Texts: []guard.Text{{Role: guard.RoleUser, Data: []byte(text)}}}, &v); err != nil {
			t.Fatal(err)
		}
		if n := len(srv.Requests()); n != want {
			t.Fatalf("%d bytes: got %d calls; want %d", len(text), n, want)
		}
	}
	n := aliyunapi.ChunkChars
	f(strings.Repeat("a", n-1), 1)
	f(strings.Repeat("a", n), 1)
	f(strings.Repeat("a", n+1), 2)
	f(strings.Repeat("中", n), 1)
	f(strings.Repeat("中", n+1), 2)
	f(strings.Repeat("a", 3*n), 3)
}
