package snapshot

import (
	"testing"
	"time"

	"gw/admin/resources"
)

func compile(t *testing.T, src string, opt Options) *Snapshot {
	t.Helper()
	r := resources.Load([]byte(src), testEnv)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	s, err := Compile(r.Resources, opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const file = `_format_version: "1"
provider_keys:
  - display_name: oa
    api_key: ${OPENAI_KEY}
models:
  - display_name: own
    provider: openai
    model_name: gpt-4o
    provider_key: oa
    timeout: 1000
    stream_timeout: 50
    retries: 3
  - display_name: bare
    provider: openai
    model_name: "gpt-\"q\""
    provider_key: oa
  - display_name: off
    provider: openai
    model_name: x
    provider_key: oa
    timeout: 0
  - display_name: grp
    timeout: 2000
    stream_timeout: 70
    routing:
      retries: 1
      targets: [{model: own}, {model: bare}, {model: off}]
  - display_name: grp2
    routing:
      targets: [{model: bare}]
api_keys:
  - display_name: all
    key_hash: 8d969eef6ecad3c29a3a629280e686cf0c3f5d5a86aff3ca12020c923adc6c92
    allowed_models: ["*"]
  - display_name: some
    key_hash: 03ac674216f3e15c761ee1a5e255f067953623c8b388b4459e13f978d7c846f4
    allowed_models: ["gr*", bare]
  - display_name: none
    key_hash: 5994471abb01112afcc18159f6cc74b4f511b99806da59b3caf5a9c173cacfc5
`

func TestTimeoutChain(t *testing.T) {
	s := compile(t, file, Options{UpstreamTimeout: 9 * time.Second})
	f := func(name string, got, want time.Duration) {
		t.Helper()
		if got != want {
			t.Fatalf("%s = %v; want %v", name, got, want)
		}
	}
	f("own.timeout", s.Plans["own"].Timeout, time.Second)
	f("own.stream", s.Plans["own"].StreamTimeout, 50*time.Millisecond)
	f("bare.timeout (deployment)", s.Plans["bare"].Timeout, 9*time.Second)
	f("bare.stream (deployment)", s.Plans["bare"].StreamTimeout, 9*time.Second)
	f("off.timeout (0 disables)", s.Plans["off"].Timeout, 0)
	g := s.Plans["grp"].Targets
	f("grp→own timeout (own wins)", g[0].Timeout, time.Second)
	f("grp→own stream (own wins)", g[0].StreamTimeout, 50*time.Millisecond)
	f("grp→bare timeout (group slot)", g[1].Timeout, 2*time.Second)
	f("grp→bare stream (group slot)", g[1].StreamTimeout, 70*time.Millisecond)
	f("grp→off timeout (own 0 disables)", g[2].Timeout, 0)
	g2 := s.Plans["grp2"].Targets
	f("grp2→bare timeout (deployment)", g2[0].Timeout, 9*time.Second)
	if g[0].Retries != 3 || g[1].Retries != 1 {
		t.Fatalf("retries: target own overrides routing.retries: %d %d", g[0].Retries, g[1].Retries)
	}
	if string(s.Plans["bare"].UpstreamModelJSON) != `"gpt-\"q\""` {
		t.Fatalf("upstream json = %s", s.Plans["bare"].UpstreamModelJSON)
	}
}

func TestGrants(t *testing.T) {
	s := compile(t, file, DefaultOptions())
	all, some, none := s.Lookup([]byte("123456")), s.Lookup([]byte("1234")), s.Lookup([]byte("12345"))
	if all == nil || some == nil || none == nil {
		t.Fatal("callers not found by key hash")
	}
	vis := func(c *Caller) (out []string) {
		for _, p := range s.Visible(c) {
			out = append(out, p.Alias)
		}
		return out
	}
	if got := vis(all); len(got) != 5 {
		t.Fatalf("all sees %v", got)
	}
	if got := vis(some); len(got) != 3 || got[0] != "bare" || got[1] != "grp" || got[2] != "grp2" {
		t.Fatalf("some sees %v", got)
	}
	if got := vis(none); len(got) != 0 {
		t.Fatalf("none sees %v", got)
	}
	if s.Lookup([]byte("wrong")) != nil {
		t.Fatal("unknown key found")
	}
}

func TestBigCompile(t *testing.T) {
	r := resources.Load(bigFile(1000, 10000), testEnv)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	s, _ := Compile(r.Resources, DefaultOptions())
	if len(s.PlanList) != 1100 || len(s.Callers) != 10000 {
		t.Fatalf("plans=%d callers=%d", len(s.PlanList), len(s.Callers))
	}
	c := s.CallersByName["k1"] // team-1/*
	if !c.Allowed(s.Plans["team-1/m11"]) || c.Allowed(s.Plans["team-2/m12"]) {
		t.Fatal("glob grant wrong")
	}
}
