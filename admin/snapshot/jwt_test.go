package snapshot

import (
	"testing"

	"gw/admin/resources"
)

const jwtMapFile = `_format_version: "1"
api_keys:
  - {display_name: alice, key_env: K1, jwt_provider: p, jwt_subject: alice}
  - {display_name: other-provider, key_env: K2, jwt_provider: q, jwt_subject: alice}
  - {display_name: eng, key_env: K3}
  - {display_name: ops, key_env: K4}
oidc_providers:
  - {name: p, issuer: https://p.example.com, audiences: [gw], identity_claim: user.id}
  - {name: q, hmac_secret: q-secret-is-at-least-thirty-two-bytes}
claim_mappings:
  - {name: z, jwt_provider: p, priority: 1, match: [{claim: groups, op: contains, values: [eng]}], resolve: {api_key: eng}}
  - {name: a, jwt_provider: p, priority: 1, match: [{claim: groups, op: contains, values: [ops]}], resolve: {api_key: ops}}
  - {name: first, jwt_provider: p, priority: 0, enabled: false, match: [{claim: groups, op: contains, values: [eng]}], resolve: {api_key: ops}}
  - {name: q-map, jwt_provider: q, match: [{claim: team, op: exact, values: [eng]}], resolve: {api_key: eng}}
`

func TestResolveJWT(t *testing.T) {
	env := map[string]string{"K1": "1", "K2": "2", "K3": "3", "K4": "4"}
	r := resources.Load([]byte(jwtMapFile), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	s, err := Compile(r.Resources, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if s.JWT.Providers != 2 {
		t.Fatalf("providers %d", s.JWT.Providers)
	}
	p, q := r.Resources.OIDCProviders[0], r.Resources.OIDCProviders[1]
	f := func(prov *resources.OIDCProvider, claims map[string]any, want string) {
		t.Helper()
		got := ""
		if c := s.ResolveJWT(prov, claims); c != nil {
			got = c.Key.DisplayName
		}
		if got != want {
			t.Fatalf("%s %v: got %q; want %q", prov.Name, claims, got, want)
		}
	}
	f(p, map[string]any{"user": map[string]any{"id": "alice"}}, "alice")
	f(q, map[string]any{"sub": "alice"}, "other-provider")
	f(p, map[string]any{"sub": "alice"}, "")                                                        // identity_claim is user.id
	f(p, map[string]any{"user": map[string]any{"id": "bob"}, "groups": []any{"eng", "ops"}}, "ops") // tie by name: a before z
	f(p, map[string]any{"groups": []any{"eng"}}, "eng")                                             // the disabled mapping is skipped
	f(p, map[string]any{"groups": "eng"}, "")
	f(q, map[string]any{"team": "eng"}, "eng")
	f(q, map[string]any{"team": []any{"eng"}}, "")
	if s2, _ := Compile(r.Resources, DefaultOptions()); s2.JWT.Gen == s.JWT.Gen {
		t.Fatal("two compilations share a generation")
	}
}
