package resources

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func oidcFile(entries string) string { return miscBase + "oidc_providers:\n" + entries }

const jwksCorp = "  - name: corp\n    issuer: https://login.example.com\n    audiences: [gw]\n"

func TestOIDCProviderDefaults(t *testing.T) {
	r := miscOK(t, oidcFile(jwksCorp))
	p := r.OIDCProviders[0]
	if p.ID != DeriveID(KindOIDCProvider, "corp") || !p.Enabled || p.IdentityClaim != "sub" ||
		len(p.IdentityClaimPath) != 1 || p.LeewaySecs != 0 || p.UsesHMAC() || p.JWKSURI != "" {
		t.Fatalf("got %+v", p)
	}
	if got, want := p.DiscoveryURL(), "https://login.example.com/.well-known/openid-configuration"; got != want {
		t.Fatalf("DiscoveryURL: got %q; want %q", got, want)
	}
}

func TestOIDCProviderHMACSecret(t *testing.T) {
	// The brief's example line: entry 1, secret under 32 bytes.
	miscErrLine(t, oidcFile(jwksCorp+"  - name: corp2\n    hmac_secret: ${SHORT_SECRET}\n"),
		"oidc_providers[1] (name=corp2): hmac_secret: must be at least 32 bytes")

	// Bytes, not characters: 16 two-byte runes are 32 bytes and pass;
	// 31 ASCII bytes fail. Base64-looking text is not decoded.
	env := map[string]string{
		"SEC_UTF8": strings.Repeat("é", 16),
		"SEC_31":   strings.Repeat("a", 31),
		"SEC_B64":  "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3", // 32 chars, 24 bytes when decoded
	}
	for k, v := range miscEnv {
		env[k] = v
	}
	load := func(v string) *Result {
		return Load([]byte(oidcFile("  - name: s\n    hmac_secret: ${"+v+"}\n")), envOf(env))
	}
	if r := load("SEC_UTF8"); len(r.Errors) > 0 {
		t.Fatalf("32-byte UTF-8 secret rejected:\n%s", r.Err())
	}
	if r := load("SEC_B64"); len(r.Errors) > 0 || r.Resources.OIDCProviders[0].HMACSecret.Reveal() != env["SEC_B64"] {
		t.Fatalf("base64-looking secret must be used unchanged: %v", r.Err())
	}
	r := load("SEC_31")
	if len(r.Errors) != 1 || r.Errors[0].String() != "oidc_providers[0] (name=s): hmac_secret: must be at least 32 bytes" {
		t.Fatalf("got %v", r.Errors)
	}
	if strings.Contains(r.Err().Error(), env["SEC_31"]) {
		t.Fatal("error text holds the secret")
	}

	// Literal secret: a warning. The secret is a Secret: never printed.
	lit := strings.Repeat("x", 40)
	src := oidcFile("  - name: ci\n    hmac_secret: " + lit + "\n")
	miscWarnLine(t, src, "oidc_providers[0] (name=ci): hmac_secret: credential written literally; supply it as ${VAR} so it stays out of the file")
	p := miscOK(t, src).OIDCProviders[0]
	if !p.UsesHMAC() || p.DiscoveryURL() != "" {
		t.Fatalf("got %+v", p)
	}
	for _, s := range []string{fmt.Sprintf("%v", p), fmt.Sprintf("%+v", p), fmt.Sprintf("%#v", p)} {
		if strings.Contains(s, lit) {
			t.Fatalf("provider prints its secret: %s", s)
		}
	}
	miscNoWarn(t, oidcFile("  - name: ci\n    hmac_secret: ${HMAC_SECRET}\n"))
}

func TestOIDCProviderRejections(t *testing.T) {
	f := func(entry, want string) {
		t.Helper()
		miscErrLine(t, oidcFile(entry), want)
	}
	f("  - {name: p, hmac_secret: \"${HMAC_SECRET}\", jwks_uri: https://k.example/jwks}\n",
		"oidc_providers[0] (name=p): jwks_uri: cannot be set with hmac_secret (shared-secret providers fetch no signing keys)")
	f("  - {name: p, audiences: [a]}\n",
		"oidc_providers[0] (name=p): issuer: required without hmac_secret (JWKS verification compares it with the token's iss)")
	f("  - {name: p, issuer: https://i.example}\n",
		"oidc_providers[0] (name=p): audiences: required without hmac_secret; list the accepted aud values")
	f("  - {name: p, issuer: https://i.example, audiences: []}\n",
		"oidc_providers[0] (name=p): audiences: must hold at least one audience without hmac_secret")
	f("  - {name: p, issuer: https://i.example, audiences: [\"\"]}\n",
		"oidc_providers[0] (name=p): audiences[0]: must not be empty")
	f("  - {name: p, issuer: https://i.example, audiences: [a], leeway_secs: 301}\n",
		"oidc_providers[0] (name=p): leeway_secs: must be between 0 and 300, got 301")
	f("  - {name: p, issuer: https://i.example, audiences: [a], leeway_secs: -1}\n",
		"oidc_providers[0] (name=p): leeway_secs: must be between 0 and 300, got -1")
	f("  - {name: p, issuer: https://i.example, audiences: [a], identity_claim: a..b}\n",
		"oidc_providers[0] (name=p): identity_claim: must be a claim name; dots separate nested claims and no segment may be empty")
	f("  - {name: p, issuer: https://i.example, audiences: [a], required_scopes: [\"a b\"]}\n",
		"oidc_providers[0] (name=p): required_scopes[0]: must be a single scope token (no spaces)")
	f("  - {name: p, issuer: https://i.example, audiences: [a], enabled: \"yes\"}\n",
		"oidc_providers[0] (name=p): enabled: must be a boolean, got a string")
	// Discovery needs the issuer to be a URL; with jwks_uri it is opaque.
	f("  - {name: p, issuer: corp, audiences: [a]}\n",
		"oidc_providers[0] (name=p): issuer: must be an absolute http or https URL (scheme http or https)")
	miscOK(t, oidcFile("  - {name: p, issuer: corp, audiences: [a], jwks_uri: https://k.example/jwks}\n"))
	f("  - {name: p, issuer: corp, audiences: [a], jwks_uri: k.example/jwks}\n",
		"oidc_providers[0] (name=p): jwks_uri: must be an absolute http or https URL (scheme http or https)")
	f("  - {name: p, issuer: https://i.example, audiences: [a], bogus: 1}\n",
		"oidc_providers[0] (name=p): bogus: unknown field")
}

func TestOIDCProviderSharedSecretOptionalFields(t *testing.T) {
	// Issuer and audiences are optional with hmac_secret; [] skips the audience
	// check; a null jwks_uri counts as absent.
	r := miscOK(t, oidcFile("  - {name: p, hmac_secret: \"${HMAC_SECRET}\", audiences: [], jwks_uri: null}\n"))
	if p := r.OIDCProviders[0]; p.Issuer != "" || len(p.Audiences) != 0 {
		t.Fatalf("got %+v", p)
	}
}

func TestOIDCProviderCredentialQueryParams(t *testing.T) {
	f := func(entry, want string) {
		t.Helper()
		miscErrLine(t, oidcFile(entry), want)
	}
	f("  - {name: p, issuer: \"https://i.example/?access_token=SEKRET\", audiences: [a]}\n",
		`oidc_providers[0] (name=p): issuer: query parameter "access_token" looks like a credential; credentials must not appear in issuer`)
	f("  - {name: p, issuer: https://i.example, audiences: [a], jwks_uri: \"https://k.example/jwks?x=1&Client-Secret=SEKRET\"}\n",
		`oidc_providers[0] (name=p): jwks_uri: query parameter "Client-Secret" looks like a credential; credentials must not appear in jwks_uri`)
	// Shared-secret providers' opaque issuers are checked too.
	f("  - {name: p, hmac_secret: \"${HMAC_SECRET}\", issuer: \"svc?token=SEKRET\"}\n",
		`oidc_providers[0] (name=p): issuer: query parameter "token" looks like a credential; credentials must not appear in issuer`)
	r := miscLoad(oidcFile("  - {name: p, issuer: \"https://i.example/?access_token=SEKRET\", audiences: [a]}\n"))
	if strings.Contains(r.Err().Error(), "SEKRET") {
		t.Fatal("error text holds the parameter value")
	}
	// client_id is not a secret; user-info is accepted as written.
	r2 := miscOK(t, oidcFile("  - {name: p, issuer: \"https://u:pw@i.example/?client_id=gw\", audiences: [a]}\n"))
	if r2.OIDCProviders[0].Issuer != "https://u:pw@i.example/?client_id=gw" {
		t.Fatalf("issuer not kept as written: %q", r2.OIDCProviders[0].Issuer)
	}
	for _, p := range []string{"id_token", "refresh_token", "api_key", "apikey", "key", "secret", "password", "code", "sig", "signature", "X-Amz-Signature"} {
		if got := credentialParams("https://x/?" + p + "=v"); len(got) != 1 || got[0] != p {
			t.Errorf("credentialParams(%s): got %v", p, got)
		}
	}
}

func TestOIDCProviderPlainHTTPWarning(t *testing.T) {
	miscWarnLine(t, oidcFile("  - {name: p, issuer: http://login.example.com, audiences: [a]}\n"),
		"oidc_providers[0] (name=p): issuer: plain http to a non-loopback host; signing keys fetched over it can be tampered with, use https")
	miscNoWarn(t, oidcFile("  - {name: p, issuer: http://127.0.0.1:8080/realms/x, audiences: [a]}\n"))
}

func TestOIDCProviderBoundClaims(t *testing.T) {
	r := miscOK(t, oidcFile("  - name: p\n    issuer: https://i.example\n    audiences: [a]\n    required_scopes: [gw.use, read]\n    bound_claims:\n      tenant: acme\n      realm.roles: [x, y]\n"))
	p := r.OIDCProviders[0]
	if len(p.RequiredScopes) != 2 || len(p.BoundClaims) != 2 {
		t.Fatalf("got %+v", p)
	}
	b0, b1 := p.BoundClaims[0], p.BoundClaims[1]
	if b0.Claim != "tenant" || len(b0.Values) != 1 || b1.Claim != "realm.roles" || len(b1.Path) != 2 || len(b1.Values) != 2 {
		t.Fatalf("got %+v %+v", b0, b1)
	}
	claims := map[string]any{"tenant": "acme", "realm": map[string]any{"roles": []any{1.0, "y"}}}
	for _, b := range p.BoundClaims {
		v, ok := LookupClaim(claims, b.Path)
		if !ok || !b.Holds(v) {
			t.Fatalf("bound claim %s does not hold", b.Claim)
		}
	}
	if b0.Holds("other") || b0.Holds(1.0) || b1.Holds([]any{"z"}) {
		t.Fatal("Holds accepted a non-matching value")
	}

	f := func(bc, want string) {
		t.Helper()
		miscErrLine(t, oidcFile("  - name: p\n    issuer: https://i.example\n    audiences: [a]\n    bound_claims: "+bc+"\n"), want)
	}
	f("{tenant: []}", "oidc_providers[0] (name=p): bound_claims.tenant: must be a string or a non-empty list of strings")
	f("{tenant: null}", "oidc_providers[0] (name=p): bound_claims.tenant: must be a string or a non-empty list of strings")
	f("{tenant: [a, 1]}", "oidc_providers[0] (name=p): bound_claims.tenant[1]: must be a string, got an integer")
	f("{tenant: {a: b}}", "oidc_providers[0] (name=p): bound_claims.tenant: must be a string, got a mapping")
	f("{.tenant: a}", "oidc_providers[0] (name=p): bound_claims..tenant: must be a claim name; dots separate nested claims and no segment may be empty")
	f("[a]", "oidc_providers[0] (name=p): bound_claims: must be a mapping, got a sequence")
}

func TestOIDCProviderIssuerUnique(t *testing.T) {
	two := "  - {name: a, issuer: https://i.example, audiences: [x]}\n  - {name: b, issuer: https://i.example, audiences: [y]%s}\n"
	miscErrLine(t, oidcFile(fmt.Sprintf(two, "")),
		"oidc_providers[1] (name=b): issuer: same issuer as oidc_providers[0] (name=a); issuer must be unique among enabled providers")
	miscOK(t, oidcFile(fmt.Sprintf(two, ", enabled: false")))
}

func TestOIDCProviderIssuerlessSecretsDistinct(t *testing.T) {
	src := oidcFile("  - {name: a, hmac_secret: \"${HMAC_SECRET}\"}\n  - {name: b, hmac_secret: \"${HMAC_SECRET}\"}\n")
	miscErrLine(t, src, "oidc_providers[1] (name=b): hmac_secret: same secret as oidc_providers[0] (name=a); shared-secret providers without issuer must each have a distinct secret")
	if strings.Contains(miscLoad(src).Err().Error(), miscEnv["HMAC_SECRET"]) {
		t.Fatal("error text holds the secret")
	}
	// The same secret is fine when one of them checks an issuer, or secrets differ.
	miscOK(t, oidcFile("  - {name: a, hmac_secret: \"${HMAC_SECRET}\"}\n  - {name: b, hmac_secret: \"${HMAC_SECRET}\", issuer: svc}\n"))
	miscOK(t, oidcFile("  - {name: a, hmac_secret: \"${HMAC_SECRET}\"}\n  - {name: b, hmac_secret: \"${HMAC_SECRET_2}\"}\n"))
}

func TestOIDCVerifiersOrder(t *testing.T) {
	r := miscOK(t, oidcFile(`  - {name: zeta, hmac_secret: "${HMAC_SECRET}"}
  - {name: alpha, hmac_secret: "${HMAC_SECRET_2}"}
  - {name: off, hmac_secret: "0123456789abcdef0123456789abcdef-off", enabled: false}
  - {name: corp, issuer: https://i.example, audiences: [a]}
  - {name: old, issuer: https://old.example, audiences: [a], enabled: false}
`))
	v := r.OIDCVerifiers()
	nm := func(ps []*OIDCProvider) string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return strings.Join(out, ",")
	}
	f := func(iss, want string) {
		t.Helper()
		if got := nm(v.For(iss)); got != want {
			t.Errorf("For(%q): got %q; want %q", iss, got, want)
		}
	}
	f("https://i.example", "corp")           // issuer match: only that provider
	f("https://other.example", "alpha,zeta") // else issuer-less HMAC, name order, enabled only
	f("", "alpha,zeta")
	f("https://old.example", "") // a disabled provider's issuer is not handed to others
}

func mcpAuthFile(settings string) string {
	return miscBase + `oidc_providers:
  - {name: corp, issuer: https://i.example, audiences: ["https://gw.example.com/mcp"]}
mcp_servers:
  - {name: docs, url: https://docs.example.com/mcp}
  - {name: gh, url: https://gh.example.com/mcp}
mcp_auth_settings:
` + settings
}

func TestMCPAuthSettings(t *testing.T) {
	aliceID := DeriveID(KindAPIKey, "alice")
	r := miscOK(t, mcpAuthFile("  - resource_url: https://gw.example.com/mcp\n    anonymous: {api_key_id: "+aliceID+", source_cidrs: [10.0.0.0/8], servers: [docs]}\n"))
	s := r.MCPAuthSettings
	if s.ID != DeriveID(KindMCPAuthSettings, "default") || s.Name != "default" || s.Index != 0 {
		t.Fatalf("got %+v", s)
	}
	a := s.Anonymous
	if !a.Enabled || a.AggregateEntry || a.APIKey == nil || a.APIKey.DisplayName != "alice" ||
		len(a.ServerRefs) != 1 || a.ServerRefs[0].Name != "docs" {
		t.Fatalf("got %+v", a)
	}
	if !a.AllowsSource(netip.MustParseAddr("10.1.2.3")) || !a.AllowsSource(netip.MustParseAddr("::ffff:10.1.2.3")) || a.AllowsSource(netip.MustParseAddr("192.168.0.1")) {
		t.Fatal("AllowsSource")
	}
	// User-info in resource_url is accepted (published as written).
	miscOK(t, mcpAuthFile("  - resource_url: https://u@gw.example.com/mcp\n"))
	// No settings at all: nil.
	if miscOK(t, miscBase).MCPAuthSettings != nil {
		t.Fatal("want nil settings")
	}
}

func TestMCPAuthSettingsRejections(t *testing.T) {
	aliceID := DeriveID(KindAPIKey, "alice")
	f := func(settings, want string) {
		t.Helper()
		miscErrLine(t, mcpAuthFile(settings), want)
	}
	f("  - {resource_url: https://gw.example.com/mcp}\n  - {resource_url: https://gw.example.com/mcp}\n",
		"mcp_auth_settings[1]: at most one entry is allowed; mcp_auth_settings[0] already holds the settings (the collection is a singleton)")
	f("  - {resource_url: gw.example.com/mcp}\n", "mcp_auth_settings[0]: resource_url: must be an absolute http or https URL (scheme http or https)")
	f("  - {resource_url: ftp://gw.example.com/mcp}\n", "mcp_auth_settings[0]: resource_url: must be an absolute http or https URL (scheme http or https)")
	f("  - {resource_url: https://gw.example.com/mcp/}\n", "mcp_auth_settings[0]: resource_url: path must be exactly /mcp")
	f("  - {resource_url: https://gw.example.com/}\n", "mcp_auth_settings[0]: resource_url: path must be exactly /mcp")
	f("  - {resource_url: \"https://gw.example.com/mcp?a=1\"}\n", "mcp_auth_settings[0]: resource_url: must not have a query")
	f("  - {resource_url: \"https://gw.example.com/mcp?\"}\n", "mcp_auth_settings[0]: resource_url: must not have a query")
	f("  - {resource_url: \"https://gw.example.com/mcp#\"}\n", "mcp_auth_settings[0]: resource_url: must not have a fragment")
	f("  - {resource_url: \"https://gw.example.com/mcp#x\"}\n", "mcp_auth_settings[0]: resource_url: must not have a fragment")

	anon := func(body string) string { return "  - anonymous: {" + body + "}\n" }
	f(anon("source_cidrs: [10.0.0.0/8], servers: [docs]"), "mcp_auth_settings[0]: anonymous.api_key_id: required")
	f(anon("api_key_id: "+aliceID+", servers: [docs]"), "mcp_auth_settings[0]: anonymous.source_cidrs: required; list at least one CIDR")
	f(anon("api_key_id: "+aliceID+", source_cidrs: [], servers: [docs]"), "mcp_auth_settings[0]: anonymous.source_cidrs: must hold at least one CIDR")
	f(anon("api_key_id: "+aliceID+", source_cidrs: [10.0.0.0], servers: [docs]"), "mcp_auth_settings[0]: anonymous.source_cidrs[0]: must be a CIDR such as 10.0.0.0/8 or 2001:db8::/32")
	f(anon("api_key_id: "+aliceID+", source_cidrs: [10.0.0.0/8]"), "mcp_auth_settings[0]: anonymous.servers: required; list at least one MCP server name")
	f(anon("api_key_id: "+aliceID+", source_cidrs: [10.0.0.0/8], servers: []"), "mcp_auth_settings[0]: anonymous.servers: must hold at least one MCP server name")
	f(anon("api_key_id: "+aliceID+", source_cidrs: [10.0.0.0/8], servers: [nope]"), `mcp_auth_settings[0]: anonymous.servers[0]: unknown MCP server "nope"; available: docs, gh`)
	f(anon("api_key_id: 00000000-0000-0000-0000-000000000000, source_cidrs: [10.0.0.0/8], servers: [docs]"),
		"mcp_auth_settings[0]: anonymous.api_key_id: no api_keys entry has this derived ID; available keys: alice, bob")
	f(anon("api_key_id: alice, source_cidrs: [10.0.0.0/8], servers: [docs]"),
		"mcp_auth_settings[0]: anonymous.api_key_id: no api_keys entry has this derived ID; available keys: alice, bob (the value is a display name; use the key's derived ID, as printed by gw validate --ids)")
	f(anon("api_key_id: "+aliceID+", source_cidrs: [10.0.0.0/8], servers: [docs], extra: 1"), "mcp_auth_settings[0]: anonymous.extra: unknown field")
	f("  - {name: x}\n", "mcp_auth_settings[0]: name: unknown field")

	// enabled: false keeps the settings; aggregate_entry is read.
	r := miscOK(t, mcpAuthFile(anon("enabled: false, aggregate_entry: true, api_key_id: "+aliceID+", source_cidrs: [10.0.0.0/8], servers: [docs, gh]")))
	if a := r.MCPAuthSettings.Anonymous; a.Enabled || !a.AggregateEntry || len(a.ServerRefs) != 2 {
		t.Fatalf("got %+v", a)
	}
}

func TestMCPAuthSettingsWarnings(t *testing.T) {
	miscWarnLine(t, mcpAuthFile("  - resource_url: https://other.example.com/mcp\n"),
		"mcp_auth_settings[0]: resource_url: no enabled oidc_providers entry lists this URL in audiences; OAuth access tokens for /mcp will be rejected")
	miscNoWarn(t, mcpAuthFile("  - resource_url: https://gw.example.com/mcp\n"))
	bobID := DeriveID(KindAPIKey, "bob")
	miscWarnLine(t, mcpAuthFile("  - anonymous: {api_key_id: "+bobID+", source_cidrs: [10.0.0.0/8], servers: [docs]}\n"),
		`mcp_auth_settings[0]: anonymous.api_key_id: api key "bob" has no mcp_access block, so anonymous callers can reach no tool`)
}

func claimFile(mappings string) string {
	return miscBase + `oidc_providers:
  - {name: corp, issuer: https://i.example, audiences: [a]}
  - {name: ci, hmac_secret: "${HMAC_SECRET}"}
claim_mappings:
` + mappings
}

const okMatch = "match: [{claim: groups, op: contains, values: [eng]}]"

func TestClaimMappings(t *testing.T) {
	r := miscOK(t, claimFile(`  - {name: zz, jwt_provider: corp, `+okMatch+`, resolve: {api_key: alice}}
  - {name: bb, jwt_provider: corp, priority: -5, `+okMatch+`, resolve: {api_key_id: `+DeriveID(KindAPIKey, "bob")+`}}
  - {name: aa, jwt_provider: corp, `+okMatch+`, resolve: {api_key: bob}}
  - {name: off, jwt_provider: corp, priority: -10, `+okMatch+`, resolve: {api_key: bob}, enabled: false}
  - {name: ci-map, jwt_provider: ci, `+okMatch+`, resolve: {api_key: alice}}
`))
	m := r.ClaimMappings[1]
	if m.APIKey == nil || m.APIKeyName != "bob" || m.Provider == nil || m.Provider.Name != "corp" || m.Priority != -5 || !m.Enabled {
		t.Fatalf("got %+v", m)
	}
	if r.ClaimMappings[0].Priority != 0 || r.ClaimMappings[3].Enabled {
		t.Fatal("defaults")
	}
	// Per provider: enabled only, priority ascending, then name.
	var got []string
	for _, cm := range r.OIDCProviders[0].ClaimMappings {
		got = append(got, cm.Name)
	}
	if strings.Join(got, ",") != "bb,aa,zz" {
		t.Fatalf("corp mappings: got %v; want bb,aa,zz", got)
	}
	if len(r.OIDCProviders[1].ClaimMappings) != 1 {
		t.Fatalf("ci mappings: got %d", len(r.OIDCProviders[1].ClaimMappings))
	}
}

func TestClaimMappingMatches(t *testing.T) {
	r := miscOK(t, claimFile(`  - name: m
    jwt_provider: corp
    match:
      - {claim: groups, op: contains, values: [eng, ops]}
      - {claim: org.tier, op: exact, values: [paid]}
    resolve: {api_key: alice}
`))
	m := r.ClaimMappings[0]
	f := func(claims map[string]any, want bool) {
		t.Helper()
		if got := m.Matches(claims); got != want {
			t.Errorf("Matches(%v): got %v; want %v", claims, got, want)
		}
	}
	f(map[string]any{"groups": []any{7.0, "ops"}, "org": map[string]any{"tier": "paid"}}, true)
	f(map[string]any{"groups": "ops", "org": map[string]any{"tier": "paid"}}, false)               // contains needs an array
	f(map[string]any{"groups": []any{"ops"}, "org": map[string]any{"tier": []any{"paid"}}}, false) // exact needs a string
	f(map[string]any{"groups": []any{"ops"}}, false)                                               // missing claim
}

func TestClaimMappingRejections(t *testing.T) {
	f := func(mapping, want string) {
		t.Helper()
		miscErrLine(t, claimFile(mapping), want)
	}
	f("  - {name: m, "+okMatch+", resolve: {api_key: alice}}\n", "claim_mappings[0] (name=m): jwt_provider: required")
	f("  - {name: m, jwt_provider: nope, "+okMatch+", resolve: {api_key: alice}}\n",
		`claim_mappings[0] (name=m): jwt_provider: unknown OIDC provider "nope"; available: ci, corp`)
	f("  - {name: m, jwt_provider: corp, resolve: {api_key: alice}}\n", "claim_mappings[0] (name=m): match: required; list at least one condition")
	f("  - {name: m, jwt_provider: corp, match: [], resolve: {api_key: alice}}\n", "claim_mappings[0] (name=m): match: must hold at least one condition")
	f("  - {name: m, jwt_provider: corp, match: [{op: exact, values: [a]}], resolve: {api_key: alice}}\n", "claim_mappings[0] (name=m): match[0].claim: required")
	f("  - {name: m, jwt_provider: corp, match: [{claim: a., op: exact, values: [a]}], resolve: {api_key: alice}}\n",
		"claim_mappings[0] (name=m): match[0].claim: must be a claim name; dots separate nested claims and no segment may be empty")
	f("  - {name: m, jwt_provider: corp, match: [{claim: a, values: [a]}], resolve: {api_key: alice}}\n", "claim_mappings[0] (name=m): match[0].op: required (exact or contains)")
	f("  - {name: m, jwt_provider: corp, match: [{claim: a, op: regex, values: [a]}], resolve: {api_key: alice}}\n",
		`claim_mappings[0] (name=m): match[0].op: unknown value "regex"; allowed: exact, contains`)
	f("  - {name: m, jwt_provider: corp, match: [{claim: a, op: exact}], resolve: {api_key: alice}}\n", "claim_mappings[0] (name=m): match[0].values: required; list at least one value")
	f("  - {name: m, jwt_provider: corp, match: [{claim: a, op: exact, values: []}], resolve: {api_key: alice}}\n", "claim_mappings[0] (name=m): match[0].values: must hold at least one value")
	f("  - {name: m, jwt_provider: corp, match: [{claim: a, op: exact, values: [\"\"]}], resolve: {api_key: alice}}\n", "claim_mappings[0] (name=m): match[0].values[0]: must not be empty")
	f("  - {name: m, jwt_provider: corp, "+okMatch+"}\n", "claim_mappings[0] (name=m): resolve: required (resolve.api_key or resolve.api_key_id)")
	f("  - {name: m, jwt_provider: corp, "+okMatch+", resolve: {}}\n", "claim_mappings[0] (name=m): resolve.api_key: required (or api_key_id)")
	f("  - {name: m, jwt_provider: corp, "+okMatch+", resolve: {api_key: alice, api_key_id: x}}\n",
		"claim_mappings[0] (name=m): resolve.api_key: set exactly one of api_key and api_key_id, not both")
	f("  - {name: m, jwt_provider: corp, "+okMatch+", resolve: {api_key: carol}}\n",
		`claim_mappings[0] (name=m): resolve.api_key: unknown api key "carol"; available: alice, bob`)
	f("  - {name: m, jwt_provider: corp, "+okMatch+", resolve: {api_key_id: 00000000-0000-0000-0000-000000000000}}\n",
		"claim_mappings[0] (name=m): resolve.api_key_id: no api_keys entry has this derived ID; available keys: alice, bob")
	f("  - {name: m, jwt_provider: corp, priority: high, "+okMatch+", resolve: {api_key: alice}}\n", "claim_mappings[0] (name=m): priority: must be an integer, got a string")
}
