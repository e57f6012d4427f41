package guard

import (
	"errors"
	"strings"
	"testing"

	"gw/admin/resources"
)

func guardrail(name string, idx int, created string) *resources.Guardrail {
	g := &resources.Guardrail{Name: name, Index: idx, Kind: "test", Enabled: true, HookPoint: resources.HookPointBoth, EnforcementMode: resources.EnforcementBlock}
	if created != "" {
		g.CreatedAt = at(created)
	}
	return g
}

// TestMergeScopes: the chains of the alias, the key and the team merge in
// evaluation order (created_at first, entries without it last, file order
// on ties), a guardrail attached to several scopes once.
func TestMergeScopes(t *testing.T) {
	a := guardrail("a", 0, "")
	b := guardrail("b", 1, "2026-01-02T00:00:00Z")
	c := guardrail("c", 2, "2026-01-01T00:00:00Z")
	d := guardrail("d", 3, "")
	model := resources.GuardrailScope{Type: "model", Name: "gpt"}
	key := resources.GuardrailScope{Type: "api_key", Name: "dev"}
	team := resources.GuardrailScope{Type: "team", Name: "t1"}
	chains := map[resources.GuardrailScope]*resources.GuardrailChain{
		model: {Input: []*resources.Guardrail{b, a}, Output: []*resources.Guardrail{a}},
		key:   {Input: []*resources.Guardrail{c, d}},
		team:  {Input: []*resources.Guardrail{b, d}, Output: []*resources.Guardrail{d}},
	}
	ctor := func(*resources.Guardrail) (Checker, error) { return &wordChecker{}, nil }
	comp, err := Compile(chains, Table{"test": ctor})
	if err != nil {
		t.Fatal(err)
	}
	names := func(ss []*Stage) string {
		var n []string
		for _, s := range ss {
			n = append(n, s.Name())
		}
		return strings.Join(n, ",")
	}
	var dst Chain
	f := func(m, k, tm *Chain, wantIn, wantOut string, wantOK bool) {
		t.Helper()
		ok := Merge(&dst, m, k, tm)
		if ok != wantOK || names(dst.Input) != wantIn || names(dst.Output) != wantOut {
			t.Fatalf("merge: %v in=%s out=%s; want %v in=%s out=%s", ok, names(dst.Input), names(dst.Output), wantOK, wantIn, wantOut)
		}
	}
	f(nil, nil, nil, "", "", false)
	f(comp[model], nil, nil, "b,a", "a", true)
	f(comp[model], comp[key], nil, "c,b,a,d", "a", true)
	f(comp[model], comp[key], comp[team], "c,b,a,d", "a,d", true)
	f(nil, nil, comp[team], "b,d", "d", true)
	if testing.AllocsPerRun(100, func() { Merge(&dst, comp[model], comp[key], comp[team]) }) != 0 {
		t.Fatal("Merge allocates once warm")
	}

	// A constructor error names the entry and fails the compile.
	_, err = Compile(chains, Table{"test": func(g *resources.Guardrail) (Checker, error) {
		if g.Name == "c" {
			return nil, errors.New("`script`: SyntaxError at line 1")
		}
		return ctor(g)
	}})
	if err == nil || !strings.Contains(err.Error(), "guardrails[2] (name=c)") || !strings.Contains(err.Error(), "`script`") {
		t.Fatalf("compile error: %v", err)
	}
}
