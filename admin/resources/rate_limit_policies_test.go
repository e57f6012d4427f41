package resources

import (
	"testing"
	"time"
)

func rlpFile(entries string) string { return miscBase + "rate_limit_policies:\n" + entries }

func TestRateLimitPolicyWindow(t *testing.T) {
	r := miscOK(t, rlpFile(`  - {name: s, scope: model, window: second, max_requests: 1}
  - {name: m, scope: model, window: minute, max_requests: 1}
  - {name: h, scope: model, window: hour, max_tokens: 1}
  - {name: d, scope: model, window: day, max_requests: 1, max_tokens: 2}
`))
	for i, want := range []time.Duration{time.Second, time.Minute, time.Hour, 24 * time.Hour} {
		p := r.RateLimitPolicies[i]
		if p.Window() != want || !p.Enabled || p.Match != nil || p.ID != DeriveID(KindRateLimitPolicy, p.Name) {
			t.Errorf("%s: got %+v", p.Name, p)
		}
	}
	if d := r.RateLimitPolicies[3]; d.MaxRequests != 1 || d.MaxTokens != 2 {
		t.Fatalf("got %+v", d)
	}
}

func TestRateLimitPolicyScopeRef(t *testing.T) {
	r := miscOK(t, rlpFile(`  - {name: m, scope: model, scope_ref: gpt, window: minute, max_requests: 1}
  - {name: k, scope: api_key, scope_ref: alice, window: minute, max_requests: 1}
  - {name: t, scope: team, scope_ref: not-a-defined-team, window: minute, max_requests: 1}
  - {name: u, scope: member, scope_ref: u9, window: minute, max_requests: 1}
`))
	ps := r.RateLimitPolicies
	if ps[0].Model == nil || ps[0].Model.DisplayName != "gpt" || ps[1].APIKey == nil || ps[1].APIKey.DisplayName != "alice" ||
		ps[2].ScopeRef != "not-a-defined-team" || ps[3].ScopeRef != "u9" {
		t.Fatalf("got %+v %+v", ps[0], ps[1])
	}
}

func TestRateLimitPolicySubject(t *testing.T) {
	r := miscOK(t, rlpFile(`  - {name: per-model, scope: model, window: minute, max_requests: 1}
  - {name: gpt-only, scope: model, scope_ref: gpt, window: minute, max_requests: 1}
  - {name: per-key, scope: api_key, window: minute, max_requests: 1}
  - {name: alice-only, scope: api_key, scope_ref: alice, window: minute, max_requests: 1}
  - {name: per-team, scope: team, window: minute, max_requests: 1}
  - {name: t1, scope: team, scope_ref: t1, window: minute, max_requests: 1}
  - {name: per-member, scope: member, window: minute, max_requests: 1}
  - {name: cond, scope: member, window: minute, max_requests: 1, match: {models: ["gp*"], teams: [t1], api_keys: [ali*], members: [u1]}}
  - {name: off, scope: model, window: minute, max_requests: 1, enabled: false}
`))
	var alice, bob *APIKey
	for _, k := range r.APIKeys {
		switch k.DisplayName {
		case "alice":
			alice = k
		case "bob":
			bob = k
		}
	}
	f := func(i int, model string, key *APIKey, want string, wantOK bool) {
		t.Helper()
		p := r.RateLimitPolicies[i]
		got, ok := p.Subject(model, key)
		if got != want || ok != wantOK {
			t.Errorf("%s.Subject(%q, %v): got %q %v; want %q %v", p.Name, model, key != nil, got, ok, want, wantOK)
		}
	}
	f(0, "gpt", nil, "gpt", true)
	f(1, "gpt", bob, "gpt", true)
	f(1, "embed", bob, "", false)
	f(2, "gpt", bob, bob.ID, true)
	f(2, "gpt", nil, "", false)
	f(3, "gpt", alice, alice.ID, true)
	f(3, "gpt", bob, "", false)
	f(4, "gpt", alice, "t1", true)
	f(4, "gpt", bob, "", false) // no team_id: no subject
	f(5, "gpt", alice, "t1", true)
	f(6, "gpt", alice, "u1", true)
	f(7, "gpt", alice, "u1", true)
	f(7, "embed", alice, "", false) // a match condition fails
	f(7, "gpt", bob, "", false)
	f(8, "gpt", alice, "", false) // disabled
	if a := testing.AllocsPerRun(100, func() { r.RateLimitPolicies[7].Subject("gpt", alice) }); a != 0 {
		t.Fatalf("Subject allocates %v times", a)
	}
}

func TestRateLimitPolicyRejections(t *testing.T) {
	f := func(entry, want string) {
		t.Helper()
		miscErrLine(t, rlpFile(entry), want)
	}
	at := "rate_limit_policies[0] (name=p): "
	f("  - {name: p, window: minute, max_requests: 1}\n", at+"scope: required; one of model, api_key, team, member")
	f("  - {name: p, scope: user, window: minute, max_requests: 1}\n", at+`scope: unknown value "user"; allowed: model, api_key, team, member`)
	f("  - {name: p, scope: model, max_requests: 1}\n", at+"window: required; one of second, minute, hour, day")
	f("  - {name: p, scope: model, window: week, max_requests: 1}\n", at+`window: unknown value "week"; allowed: second, minute, hour, day`)
	f("  - {name: p, scope: model, window: minute}\n", at+"max_requests: required (or max_tokens); set at least one limit")
	f("  - {name: p, scope: model, window: minute, max_requests: 0}\n", at+"max_requests: must be between 1 and 9223372036854775807, got 0")
	f("  - {name: p, scope: model, window: minute, max_tokens: 0}\n", at+"max_tokens: must be between 1 and 9223372036854775807, got 0")
	f("  - {name: p, scope: model, scope_ref: nope, window: minute, max_requests: 1}\n", at+`scope_ref: unknown model "nope"; available: embed, gpt`)
	f("  - {name: p, scope: model, scope_ref: \"gp*\", window: minute, max_requests: 1}\n", at+`scope_ref: unknown model "gp*"; available: embed, gpt`)
	f("  - {name: p, scope: api_key, scope_ref: carol, window: minute, max_requests: 1}\n", at+`scope_ref: unknown api key "carol"; available: alice, bob`)
	f("  - {name: p, scope: team, scope_ref: \"\", window: minute, max_requests: 1}\n", at+"scope_ref: must not be empty")
	f("  - {name: p, scope: model, window: minute, max_requests: 1, match: {}}\n", at+"match: must set at least one condition (models, api_keys, teams, members); omit it for an unconditional policy")
	f("  - {name: p, scope: model, window: minute, max_requests: 1, match: {models: []}}\n", at+"match.models: must hold at least one entry (omit the field to drop the condition)")
	f("  - {name: p, scope: model, window: minute, max_requests: 1, match: {models: [nope]}}\n", at+`match.models[0]: unknown model "nope"; available: embed, gpt`)
	f("  - {name: p, scope: model, window: minute, max_requests: 1, match: {api_keys: [carol]}}\n", at+`match.api_keys[0]: unknown api key "carol"; available: alice, bob`)
	f("  - {name: p, scope: model, window: minute, max_requests: 1, match: {teams: [\"*a*\"]}}\n", at+"match.teams[0]: a glob may hold a single '*'")
	f("  - {name: p, scope: model, window: minute, max_requests: 1, match: {paths: [x]}}\n", at+"match.paths: unknown field")
	f("  - {name: p, scope: model, window: minute, max_requests: 1, rpm: 3}\n", at+"rpm: unknown field")
}
