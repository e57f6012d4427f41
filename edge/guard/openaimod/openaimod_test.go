package openaimod

import (
	"context"
	"errors"
	"strings"
	"testing"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/remote"
	"gw/edge/guard/remote/remotetest"
)

const secret = "sk-mod-secret-123"

func compile(t *testing.T, base, extra string) *guard.Chain {
	t.Helper()
	g := remotetest.Load(t, "name: mod\n    kind: openai_moderation\n    api_key: "+secret+"\n    endpoint: "+base+"\n"+extra)
	return remotetest.Stage(t, g, resources.GuardrailOpenAIModeration, New)
}

func TestModeration(t *testing.T) {
	base := remotetest.Mock(t)
	f := func(name, base, extra string, p guard.Phase, texts []string, want guard.Decision, enforced, bypass string) {
		t.Helper()
		remotetest.Expect(t, name, compile(t, base, extra), p, texts,
			remotetest.Want{Decision: want, Enforced: enforced, Bypass: bypass, NoLeak: []string{secret, "[flag", "malformed]"}})
	}
	f("allow", base, "", guard.Input, []string{"hello", "world"}, guard.Pass, "", "")
	f("flagged verdict blocks", base, "", guard.Input, []string{"hello", "I will [flag:violence] you"}, guard.Blocked, "mod:block", "")
	f("output flagged", base, "", guard.Output, []string{"[flag:hate]"}, guard.Blocked, "mod:block", "")
	// With thresholds the provider's flag is ignored: only listed categories count.
	f("threshold below", base, "    category_thresholds: {violence: 0.9}\n", guard.Input, []string{"[flag:violence=0.8]"}, guard.Pass, "", "")
	f("threshold reached", base, "    category_thresholds: {violence: 0.8}\n", guard.Input, []string{"[flag:violence=0.8]"}, guard.Blocked, "mod:block", "")
	f("threshold low score, unflagged by provider", base, "    category_thresholds: {hate: 0.2}\n", guard.Input, []string{"[flag:hate=0.3]"}, guard.Blocked, "mod:block", "")
	f("unlisted category ignored", base, "    category_thresholds: {hate: 0.2}\n", guard.Input, []string{"[flag:violence]"}, guard.Pass, "", "")
	// Failures: fail_open decides.
	f("5xx fail closed", base+"/knobs/status=503", "", guard.Input, []string{"x"}, guard.Unavailable, "mod:blocked_fail_closed", "")
	f("5xx fail open", base+"/knobs/status=500", "    fail_open: true\n", guard.Input, []string{"x"}, guard.Pass, "", guard.BypassCheckFailed)
	f("timeout fail closed", base+"/knobs/latency=300ms", "    timeout_ms: 50\n", guard.Input, []string{"x"}, guard.Unavailable, "mod:blocked_fail_closed", "")
	f("timeout fail open", base+"/knobs/latency=300ms", "    timeout_ms: 50\n    fail_open: true\n", guard.Input, []string{"x"}, guard.Pass, "", guard.BypassCheckFailed)
	f("output timeout output_fail_open", base+"/knobs/latency=300ms", "    timeout_ms: 50\n    output_fail_open: true\n", guard.Output, []string{"x"}, guard.Pass, "", guard.BypassCheckFailed)
	f("malformed fail closed", base, "", guard.Input, []string{"[malformed]"}, guard.Unavailable, "mod:blocked_fail_closed", "")
	f("malformed fail open", base, "    fail_open: true\n", guard.Input, []string{"[malformed]"}, guard.Pass, "", guard.BypassCheckFailed)
}

func TestModerationRequestAndErrors(t *testing.T) {
	base := remotetest.Mock(t)
	g := remotetest.Load(t, "name: mod\n    kind: openai_moderation\n    api_key: "+secret+"\n    endpoint: "+base+"/knobs/latency=300ms/v1\n    timeout_ms: 40\n")
	c, err := New(g)
	if err != nil {
		t.Fatal(err)
	}
	var v guard.Verdict
	err = c.Check(context.Background(), &guard.Request{Texts: []guard.Text{{Data: []byte("my text")}}}, &v)
	var re *remote.Error
	if !errors.As(err, &re) || !re.Timeout() {
		t.Fatalf("got %v; want a timeout *remote.Error", err)
	}
	if s := err.Error(); strings.Contains(s, secret) || strings.Contains(s, "my text") {
		t.Fatalf("error leaks: %q", s)
	}
}

// TestModerationJudge covers answer shapes the mock does not produce.
func TestModerationJudge(t *testing.T) {
	c := &Checker{ep: mustEndpoint(t), thresholds: []threshold{{"violence", 0.5}}}
	flagged := &Checker{ep: c.ep}
	f := func(ck *Checker, resp string, n int, wantAction guard.Action, wantRule string, wantErr bool) {
		t.Helper()
		var v guard.Verdict
		err := ck.ReadAnswer([]byte(resp), n, &v)
		if (err != nil) != wantErr || v.Action != wantAction || v.Rule != wantRule {
			t.Fatalf("judge(%s): %v %q err %v; want %v %q err %v", resp, v.Action, v.Rule, err, wantAction, wantRule, wantErr)
		}
	}
	f(flagged, `{"results":[{"flagged":true,"categories":{"hate":false,"violence":true}}]}`, 1, guard.Block, "violence", false)
	f(flagged, `{"results":[{"flagged":true}]}`, 1, guard.Block, "flagged", false)
	f(flagged, `{"results":[{"flagged":false}]}`, 1, guard.Allow, "", false)
	f(flagged, `{"results":[{"flagged":"yes"}]}`, 1, guard.Allow, "", true)
	f(flagged, `{"results":[{"flagged":false}]}`, 2, guard.Allow, "", true)
	f(flagged, `{"results":[{"flagged":true},{"flagged":false}]}`, 1, guard.Allow, "", true)
	f(flagged, `{"results":{}}`, 1, guard.Allow, "", true)
	f(flagged, `not json`, 1, guard.Allow, "", true)
	f(c, `{"results":[{"flagged":true,"category_scores":{"violence":0.4}}]}`, 1, guard.Allow, "", false)
	f(c, `{"results":[{"category_scores":{"violence":0.5}}]}`, 1, guard.Block, "violence", false)
	f(c, `{"results":[{"category_scores":{"violence":"high"}}]}`, 1, guard.Allow, "", true)
	f(c, `{"results":[{"flagged":true}]}`, 1, guard.Allow, "", true)
	f(c, `{"results":[{"category_scores":{}}]}`, 1, guard.Allow, "", false)
}

func mustEndpoint(t *testing.T) *remote.Endpoint {
	b, err := remote.New(remote.Config{Name: "openai_moderation", BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	return b.Endpoint("/v1/moderations")
}

func TestSplitEndpoint(t *testing.T) {
	f := func(in, base, path string) {
		t.Helper()
		if b, p := SplitEndpoint(in, "/v1", "/moderations"); b != base || p != path {
			t.Fatalf("SplitEndpoint(%q): %q %q; want %q %q", in, b, p, base, path)
		}
	}
	f("https://api.openai.com", "https://api.openai.com", "/v1/moderations")
	f("https://api.openai.com/", "https://api.openai.com", "/v1/moderations")
	f("https://p.example/openai/v1", "https://p.example/openai", "/v1/moderations")
	f("https://p.example/v1/moderations", "https://p.example", "/v1/moderations")
}

func TestModerationStream(t *testing.T) {
	base := remotetest.Mock(t)
	for _, full := range []bool{false, true} {
		chain := compile(t, base, "")
		if full {
			// The chain's policy: another member asked for buffer_full.
			chain.Output[0].G.Stream = &resources.StreamControls{Mode: resources.StreamModeBufferFull}
		}
		d, content, _ := remotetest.Stream(t, chain, "The weather ", "is fine ", "today.")
		if d >= guard.Blocked || content != "The weather is fine today." {
			t.Fatalf("full=%v allow: decision %d content %q", full, d, content)
		}
		d, content, e := remotetest.Stream(t, chain, "Some text, then [fla", "g:violence] and more")
		if d != guard.Blocked || strings.Contains(content, "violence") {
			t.Fatalf("full=%v block: decision %d content %q (err %v)", full, d, content, e.Err)
		}
		if full && content != "" {
			t.Fatalf("buffer_full released %q before the verdict", content)
		}
	}
}
