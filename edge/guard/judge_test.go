package guard

import (
	"context"
	"testing"

	"gw/admin/resources"
)

// TestJudgeFailOpen is the spec's fail_open / output_fail_open table and the
// monitor-mode failure rules.
func TestJudgeFailOpen(t *testing.T) {
	f := func(name string, p Phase, monitor, failOpen, outFailOpen bool, want Decision, enforced, mon, bypass string, failClosed bool) {
		t.Helper()
		st := stage("g", &wordChecker{err: errBoom}, func(g *resources.Guardrail) {
			g.FailOpen, g.OutputFailOpen = failOpen, outFailOpen
			if monitor {
				g.EnforcementMode = resources.EnforcementMonitor
			}
		})
		var e Exec
		e.AddText(Text{Data: []byte("hello")}, false, true)
		got := e.Judge(context.Background(), p, "m", []*Stage{st})
		if got != want {
			t.Fatalf("%s: decision %d; want %d", name, got, want)
		}
		if h := hitsString(e.Outcome.Enforced); h != enforced {
			t.Errorf("%s: enforced %q; want %q", name, h, enforced)
		}
		if h := hitsString(e.Outcome.Monitor); h != mon {
			t.Errorf("%s: monitor %q; want %q", name, h, mon)
		}
		if e.Outcome.BypassedReason != bypass || e.Outcome.BlockedFailClosed != failClosed {
			t.Errorf("%s: bypass %q fail_closed %v; want %q %v", name, e.Outcome.BypassedReason, e.Outcome.BlockedFailClosed, bypass, failClosed)
		}
		if len(e.Outcome.Applied) != 1 || e.Outcome.Applied[0] != "g" {
			t.Errorf("%s: applied %v", name, e.Outcome.Applied)
		}
	}
	f("input block fail_open=false", Input, false, false, false, Unavailable, "g:blocked_fail_closed", "", "", true)
	f("input block fail_open=true", Input, false, true, false, Pass, "", "", BypassCheckFailed, false)
	f("input: output_fail_open does not apply", Input, false, false, true, Unavailable, "g:blocked_fail_closed", "", "", true)
	f("output block output_fail_open=false", Output, false, true, false, Unavailable, "g:blocked_fail_closed", "", "", true)
	f("output block output_fail_open=true", Output, false, false, true, Pass, "", "", BypassCheckFailed, false)
	f("monitor fail_open=false: would_block", Input, true, false, false, Pass, "", "g:would_block", "", false)
	f("monitor fail_open=true: bypass", Input, true, true, false, Pass, "", "", BypassCheckFailed, false)
	f("monitor output_fail_open=false", Output, true, true, false, Pass, "", "g:would_block", "", false)
}

func hitsString(hs []Hit) string {
	s := ""
	for i, h := range hs {
		if i > 0 {
			s += ","
		}
		s += h.Guardrail + ":" + h.Action
	}
	return s
}

// TestJudgeActions: block stops the chain, a mask is seen by later stages,
// monitor records would_*, a mask on fixed (signed) text is unsupported.
func TestJudgeActions(t *testing.T) {
	mask := stage("mask", &wordChecker{word: "secret", mask: true}, nil)
	block := stage("block", &wordChecker{word: "secret"}, nil)
	blockX := stage("blockX", &wordChecker{word: "[X]"}, nil)
	monBlock := stage("mon", &wordChecker{word: "secret"}, func(g *resources.Guardrail) { g.EnforcementMode = resources.EnforcementMonitor })
	monMask := stage("monmask", &wordChecker{word: "secret", mask: true}, func(g *resources.Guardrail) { g.EnforcementMode = resources.EnforcementMonitor })

	var e Exec
	run := func(fixed bool, stages ...*Stage) Decision {
		e.Reset()
		e.AddText(Text{Data: []byte("a secret here")}, fixed, true)
		e.AddText(Text{Data: []byte("nothing")}, false, true)
		return e.Judge(context.Background(), Input, "m", stages)
	}
	if d := run(false, block, mask); d != Blocked || hitsString(e.Outcome.Enforced) != "block:block" || len(e.Outcome.Applied) != 1 {
		t.Fatalf("block: %d %v %v", d, e.Outcome.Enforced, e.Outcome.Applied)
	}
	if d := run(false, mask, block); d != Masked || string(e.Texts()[0].Data) != "a [X] here" || !e.Changed(0) || e.Changed(1) {
		t.Fatalf("mask then block: %d %q", d, e.Texts()[0].Data)
	}
	if d := run(false, mask, blockX); d != Blocked {
		t.Fatalf("a later stage must see the masked text: %d", d)
	}
	if d := run(false, monBlock, monMask); d != Pass || hitsString(e.Outcome.Monitor) != "mon:would_block,monmask:would_mask" || string(e.Texts()[0].Data) != "a secret here" {
		t.Fatalf("monitor: %d %v %q", d, e.Outcome.Monitor, e.Texts()[0].Data)
	}
	if d := run(true, mask); d != Pass || hitsString(e.Outcome.Enforced) != "mask:mask_unsupported" {
		t.Fatalf("fixed: %d %v", d, e.Outcome.Enforced)
	}
	if d := run(true, monMask); d != Pass || hitsString(e.Outcome.Monitor) != "monmask:would_mask_unsupported" {
		t.Fatalf("fixed monitor: %d %v", d, e.Outcome.Monitor)
	}
}

// TestJudgeLatestTurn: input_messages latest_turn judges only texts of the
// latest turn, system texts excluded; masks map back to the full list.
func TestJudgeLatestTurn(t *testing.T) {
	latest := stage("l", &wordChecker{word: "secret", mask: true}, func(g *resources.Guardrail) { g.InputMessages = resources.InputMessagesLatestTurn })
	var e Exec
	e.AddText(Text{Role: RoleUser, Data: []byte("old secret")}, false, false)
	e.AddText(Text{Role: RoleSystem, Data: []byte("system secret")}, false, true)
	e.AddText(Text{Role: RoleUser, Data: []byte("new secret")}, false, true)
	if d := e.Judge(context.Background(), Input, "m", []*Stage{latest}); d != Masked {
		t.Fatalf("decision %d", d)
	}
	for i, want := range []string{"old secret", "system secret", "new [X]"} {
		if got := string(e.Texts()[i].Data); got != want {
			t.Errorf("text %d: %q; want %q", i, got, want)
		}
	}
}

// TestKindNotBuilt: a kind without a constructor is compiled to a checker
// that fails, so fail_open decides (never skipped).
func TestKindNotBuilt(t *testing.T) {
	g := &resources.Guardrail{Name: "lk", Kind: resources.GuardrailLakera, Enabled: true, HookPoint: resources.HookPointBoth, EnforcementMode: resources.EnforcementBlock}
	ch, err := Compile(map[resources.GuardrailScope]*resources.GuardrailChain{{Type: "model", Name: "m"}: {Input: []*resources.Guardrail{g}}}, Table{})
	if err != nil {
		t.Fatal(err)
	}
	var e Exec
	e.AddText(Text{Data: []byte("x")}, false, true)
	if d := e.Judge(context.Background(), Input, "m", ch[resources.GuardrailScope{Type: "model", Name: "m"}].Input); d != Unavailable {
		t.Fatalf("fail closed: %d", d)
	}
	g.FailOpen = true
	e.Reset()
	e.AddText(Text{Data: []byte("x")}, false, true)
	if d := e.Judge(context.Background(), Input, "m", ch[resources.GuardrailScope{Type: "model", Name: "m"}].Input); d != Pass || e.Outcome.BypassedReason != BypassKindNotBuilt {
		t.Fatalf("fail open: %d %q", d, e.Outcome.BypassedReason)
	}
}
