package presidio

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/remote/remotetest"
)

func compile(t *testing.T, analyzer, anonymizer, extra string) *guard.Chain {
	t.Helper()
	g := remotetest.Load(t, "name: pres\n    kind: presidio\n    analyzer_url: "+analyzer+"\n    anonymizer_url: "+anonymizer+"\n"+extra)
	return remotetest.Stage(t, g, resources.GuardrailPresidio, New)
}

func TestPresidio(t *testing.T) {
	base := remotetest.Mock(t)
	sum := sha256.Sum256([]byte("a@b.com"))
	hash := hex.EncodeToString(sum[:])
	f := func(name, analyzer, anonymizer, extra string, p guard.Phase, texts []string, want guard.Decision, wantTexts, enforced, bypass string) {
		t.Helper()
		remotetest.Expect(t, name, compile(t, analyzer, anonymizer, extra), p, texts,
			remotetest.Want{Decision: want, Texts: wantTexts, Enforced: enforced, Bypass: bypass, NoLeak: []string{"a@b.com", "malformed]"}})
	}
	f("allow", base, base, "", guard.Input, []string{"nothing here", ""}, guard.Pass, "nothing here|", "", "")
	f("replace", base, base, "", guard.Input, []string{"mail a@b.com or call 212-555-0199", "ok", "ssn 123-45-6789"}, guard.Masked,
		"mail <EMAIL_ADDRESS> or call <PHONE_NUMBER>|ok|ssn <US_SSN>", "pres:mask", "")
	f("mask", base, base, "    operator: mask\n", guard.Input, []string{"é a@b.com é"}, guard.Masked, "é ******* é", "pres:mask", "")
	f("hash", base, base, "    operator: hash\n", guard.Input, []string{"x a@b.com"}, guard.Masked, "x "+hash, "pres:mask", "")
	f("redact", base, base, "    operator: redact\n", guard.Output, []string{"[a@b.com]"}, guard.Masked, "[]", "pres:mask", "")
	// entities restrict what is looked for; each has its action.
	f("entities subset", base, base, "    entities: [US_SSN]\n", guard.Input, []string{"a@b.com 123-45-6789"}, guard.Masked, "a@b.com <US_SSN>", "pres:mask", "")
	f("entity block", base, base, "    entities: [EMAIL_ADDRESS, {name: CREDIT_CARD, action: block}]\n", guard.Input,
		[]string{"a@b.com", "card 4111 1111 1111 1111"}, guard.Blocked, "", "pres:block", "")
	f("default_action block", base, base, "    default_action: block\n", guard.Input, []string{"call 212-555-0199"}, guard.Blocked, "", "pres:block", "")
	f("score_threshold", base, base, "    score_threshold: 0.8\n", guard.Input, []string{"ip 10.1.2.3 mail a@b.com"}, guard.Masked, "ip 10.1.2.3 mail <EMAIL_ADDRESS>", "pres:mask", "")
	f("monitor", base, base, "    enforcement_mode: monitor\n", guard.Input, []string{"a@b.com"}, guard.Pass, "a@b.com", "", "")
	// Failures of either container: fail_open decides.
	f("analyzer 5xx fail closed", base+"/knobs/status=500", base, "", guard.Input, []string{"a@b.com"}, guard.Unavailable, "", "pres:blocked_fail_closed", "")
	f("analyzer 5xx fail open", base+"/knobs/status=500", base, "    fail_open: true\n", guard.Input, []string{"a@b.com"}, guard.Pass, "a@b.com", "", guard.BypassCheckFailed)
	f("anonymizer 5xx fail closed", base, base+"/knobs/status=503", "", guard.Input, []string{"a@b.com"}, guard.Unavailable, "", "pres:blocked_fail_closed", "")
	f("anonymizer 5xx output_fail_open", base, base+"/knobs/status=503", "    output_fail_open: true\n", guard.Output, []string{"a@b.com"}, guard.Pass, "a@b.com", "", guard.BypassCheckFailed)
	f("timeout fail closed", base+"/knobs/latency=300ms", base, "    timeout_ms: 50\n", guard.Input, []string{"x"}, guard.Unavailable, "", "pres:blocked_fail_closed", "")
	f("timeout fail open", base+"/knobs/latency=300ms", base, "    timeout_ms: 50\n    fail_open: true\n", guard.Input, []string{"x"}, guard.Pass, "x", "", guard.BypassCheckFailed)
	f("malformed analyzer", base, base, "", guard.Input, []string{"[malformed]"}, guard.Unavailable, "", "pres:blocked_fail_closed", "")
	f("malformed anonymizer", base, base, "    fail_open: true\n", guard.Input, []string{"a@b.com [malformed]"}, guard.Pass, "a@b.com [malformed]", "", guard.BypassCheckFailed)
	f("unsupported language", base, base, "    language: xx\n", guard.Input, []string{"x"}, guard.Unavailable, "", "pres:blocked_fail_closed", "")
}

// TestPresidioPerCallTimeout: timeout_ms bounds each call, not the check:
// three texts at 60 ms each pass a 100 ms timeout.
func TestPresidioPerCallTimeout(t *testing.T) {
	base := remotetest.Mock(t)
	d, _, e := remotetest.Judge(compile(t, base+"/knobs/latency=60ms", base, "    timeout_ms: 150\n"), guard.Input, "a", "b", "c")
	if d != guard.Pass {
		t.Fatalf("decision %d (err %v); want Pass", d, e.Err)
	}
}

func TestPresidioConcurrent(t *testing.T) {
	f := func(extra string, want bool) {
		t.Helper()
		c := compile(t, "http://127.0.0.1:1", "http://127.0.0.1:1", extra).Input[0].Checker.(*Checker)
		if c.Concurrent() != want {
			t.Fatalf("%q: Concurrent %v; want %v", extra, c.Concurrent(), want)
		}
	}
	f("", false)
	f("    default_action: block\n", true)
	f("    entities: [{name: A, action: block}]\n", true)
	f("    default_action: block\n    entities: [A, {name: B, action: mask}]\n", false)
}

func TestPresidioRequest(t *testing.T) {
	c := compile(t, "http://127.0.0.1:1", "http://127.0.0.1:1", "    entities: [EMAIL_ADDRESS]\n    language: de\n    score_threshold: 0.5\n    operator: hash\n").Input[0].Checker.(*Checker)
	if got := string(c.analyzeTail); got != `,"language":"de","entities":["EMAIL_ADDRESS"],"score_threshold":0.5}` {
		t.Fatalf("analyze tail %s", got)
	}
	if got := string(c.anonymizeTail); got != `],"anonymizers":{"DEFAULT":{"type":"hash","hash_type":"sha256"}}}` {
		t.Fatalf("anonymize tail %s", got)
	}
}

func TestPresidioResults(t *testing.T) {
	c := compile(t, "http://127.0.0.1:1", "http://127.0.0.1:1", "    entities: [A, {name: B, action: block}]\n    score_threshold: 0.5\n").Input[0].Checker.(*Checker)
	f := func(resp string, blocked bool, rule, results string, wantErr bool) {
		t.Helper()
		var v guard.Verdict
		sc := &scratch{}
		b, err := c.results([]byte(resp), 0, sc, &v)
		if b != blocked || (err != nil) != wantErr || v.Rule != rule || string(sc.results) != results {
			t.Fatalf("results(%s): blocked %v rule %q results %s err %v", resp, b, v.Rule, sc.results, err)
		}
	}
	f(`[]`, false, "", "", false)
	f(`[{"entity_type":"A","start":0,"end":3,"score":0.9,"extra":{}}]`, false, "", `{"entity_type":"A","start":0,"end":3,"score":0.9}`, false)
	f(`[{"entity_type":"A","start":0,"end":3,"score":0.4}]`, false, "", "", false)
	f(`[{"entity_type":"C","start":0,"end":3,"score":0.9}]`, false, "", "", false)
	f(`[{"entity_type":"A","start":0,"end":3,"score":0.9},{"entity_type":"B","start":4,"end":5,"score":1}]`, true, "B", `{"entity_type":"A","start":0,"end":3,"score":0.9}`, false)
	f(`[{"entity_type":"A","start":"0","end":3,"score":0.9}]`, false, "", "", true)
	f(`[{"entity_type":"A","start":5,"end":3,"score":0.9}]`, false, "", "", true)
	f(`{"error":"x"}`, false, "", "", true)
	f(`[1]`, false, "", "", true)
	// Not valid JSON (a raw control character in entity_type): the span
	// would go to the anonymizer as it is.
	f("[{\"entity_type\":\"A\x10\",\"start\":0,\"end\":3,\"score\":0.9}]", false, "", "", true)
}

func TestPresidioStream(t *testing.T) {
	base := remotetest.Mock(t)
	for _, full := range []bool{false, true} {
		chain := compile(t, base, base, "")
		if full {
			chain.Output[0].G.Stream = &resources.StreamControls{Mode: resources.StreamModeBufferFull}
		}
		d, content, e := remotetest.Stream(t, chain, "Write to a@", "b.com today. ", "Thanks.")
		if d >= guard.Blocked || content != "Write to <EMAIL_ADDRESS> today. Thanks." {
			t.Fatalf("full=%v: decision %d content %q (err %v)", full, d, content, e.Err)
		}
	}
	chain := compile(t, base, base, "    default_action: block\n")
	d, content, _ := remotetest.Stream(t, chain, "SSN is 123-45", "-6789 ok")
	if d != guard.Blocked || strings.Contains(content, "6789") {
		t.Fatalf("block: decision %d content %q", d, content)
	}
	chain = compile(t, base, base, "    max_buffer_bytes: 8\n")
	chain.Output[0].G.Stream = &resources.StreamControls{Mode: resources.StreamModeBufferFull}
	d, content, e := remotetest.Stream(t, chain, "0123456789", "more")
	if d < guard.Blocked || content != "" || remotetest.Hits(e.Outcome.Enforced) != "pres:blocked_buffer_exceeded" {
		t.Fatalf("buffer exceeded: decision %d content %q hits %q", d, content, remotetest.Hits(e.Outcome.Enforced))
	}
}
