package resources

import (
	"strings"
	"testing"
)

// miscEnv extends testEnv with the variables of the misc collection tests.
var miscEnv = func() map[string]string {
	m := map[string]string{
		"HMAC_SECRET_2": "fedcba9876543210fedcba9876543210-other",
		"SHORT_SECRET":  "too-short",
		"GITHUB_TOKEN":  "ghp_test",
		"DD_API_KEY":    "dd-test",
		"AWS_KEY_ID":    "AKIATEST",
		"AWS_SECRET":    "aws-secret",
		"SLS_KEY_ID":    "sls-id",
		"SLS_SECRET":    "sls-secret",
		"OTLP_TOKEN":    "otlp-token",
	}
	for k, v := range testEnv {
		m[k] = v
	}
	return m
}()

// miscLoad loads src with miscEnv.
func miscLoad(src string) *Result { return Load([]byte(src), envOf(miscEnv)) }

// miscOK loads src and fails on any error.
func miscOK(t *testing.T, src string) *Resources {
	t.Helper()
	r := miscLoad(src)
	if len(r.Errors) > 0 {
		t.Fatalf("unexpected load errors:\n%s", r.Err())
	}
	return r.Resources
}

// miscErrLine requires the load to fail with one error line exactly equal to want.
func miscErrLine(t *testing.T, src, want string) {
	t.Helper()
	r := miscLoad(src)
	for _, e := range r.Errors {
		if e.String() == want {
			return
		}
	}
	t.Fatalf("no error line equals\n  %s\ngot:\n%s", want, miscLines(r.Errors))
}

// miscWarnLine requires the load to succeed with one warning line exactly equal to want.
func miscWarnLine(t *testing.T, src, want string) {
	t.Helper()
	r := miscLoad(src)
	if len(r.Errors) > 0 {
		t.Fatalf("unexpected load errors:\n%s", r.Err())
	}
	for _, e := range r.Warnings {
		if e.String() == want {
			return
		}
	}
	t.Fatalf("no warning line equals\n  %s\ngot:\n%s", want, miscLines(r.Warnings))
}

// miscNoWarn requires the load to succeed without warnings.
func miscNoWarn(t *testing.T, src string) {
	t.Helper()
	r := miscLoad(src)
	if len(r.Errors) > 0 || len(r.Warnings) > 0 {
		t.Fatalf("want clean load, got errors:\n%s\nwarnings:\n%s", miscLines(r.Errors), miscLines(r.Warnings))
	}
}

func miscLines(es []Error) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString("  ")
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// miscBase has two provider keys and caller keys the misc collections refer to.
const miscBase = `_format_version: "1"
provider_keys:
  - display_name: oa
    api_key: ${OPENAI_KEY}
    api_base: https://api.openai.com/v1
  - display_name: bare
    api_key: ${ANTHROPIC_KEY}
models:
  - display_name: gpt
    provider: openai
    model_name: gpt-4o
    provider_key: oa
  - display_name: embed
    provider: openai
    model_name: text-embedding-3-small
    provider_key: oa
    embedding: {dimensions: 1536}
api_keys:
  - display_name: alice
    key_env: CALLER_A
    team_id: t1
    user_id: u1
    mcp_access: {allow: ["*"]}
  - display_name: bob
    key_env: CALLER_B
`

func TestMiscFullExampleLoads(t *testing.T) {
	src := miscBase + fullMiscExample
	r := miscLoad(src)
	if len(r.Errors) > 0 {
		t.Fatalf("errors:\n%s", miscLines(r.Errors))
	}
	res := r.Resources
	counts := map[string]int{}
	for _, c := range res.Counts() {
		counts[c.Collection] = c.Count
	}
	for coll, want := range map[string]int{
		CollOIDCProviders: 2, CollMCPAuthSettings: 1, CollClaimMappings: 1, CollMCPServers: 2,
		CollA2AAgents: 1, CollPassthroughRoutes: 1, CollCachePolicies: 2, CollObservabilityExporters: 4,
		CollRateLimitPolicies: 2,
	} {
		if counts[coll] != want {
			t.Errorf("%s: got %d entries; want %d", coll, counts[coll], want)
		}
	}
	// Every misc entry has its derived ID listed.
	ids := map[string]string{}
	for _, id := range r.IDs {
		ids[id.Collection+"/"+id.Identity] = id.ID
	}
	for key, kind := range map[string]string{
		"oidc_providers/corp": KindOIDCProvider, "mcp_auth_settings/default": KindMCPAuthSettings,
		"claim_mappings/eng-group": KindClaimMapping, "mcp_servers/github": KindMCPServer,
		"a2a_agents/planner": KindA2AAgent, "passthrough_routes/openai-files": KindPassthroughRoute,
		"cache_policies/faq": KindCachePolicy, "observability_exporters/otel": KindObservabilityExporter,
		"rate_limit_policies/team-t1": KindRateLimitPolicy,
	} {
		ident := key[strings.IndexByte(key, '/')+1:]
		if got, want := ids[key], DeriveID(kind, ident); got != want {
			t.Errorf("ID of %s: got %q; want %q", key, got, want)
		}
	}
	if res.MCPAuthSettings.ID != DeriveID("mcp_auth_settings", "default") {
		t.Errorf("mcp_auth_settings ID: got %s", res.MCPAuthSettings.ID)
	}
	// The full example is warning-free.
	if len(r.Warnings) > 0 {
		t.Errorf("unexpected warnings:\n%s", miscLines(r.Warnings))
	}
}

func TestMiscIdentitiesUnique(t *testing.T) {
	f := func(coll, entries, want string) {
		t.Helper()
		miscErrLine(t, miscBase+coll+":\n"+entries, want)
	}
	f("oidc_providers", "  - {name: a, hmac_secret: \"${HMAC_SECRET}\", issuer: i1}\n  - {name: a, hmac_secret: \"${HMAC_SECRET_2}\", issuer: i2}\n",
		"oidc_providers[1] (name=a): name: duplicate identity; also used by oidc_providers[0]")
	f("claim_mappings", "  - {name: m, jwt_provider: x, match: [{claim: sub, op: exact, values: [a]}], resolve: {api_key: alice}}\n  - {name: m, jwt_provider: x, match: [{claim: sub, op: exact, values: [a]}], resolve: {api_key: alice}}\n",
		"claim_mappings[1] (name=m): name: duplicate identity; also used by claim_mappings[0]")
	f("mcp_servers", "  - {name: gh, url: https://a.example/mcp}\n  - {display_name: gh, url: https://b.example/mcp}\n",
		"mcp_servers[1] (display_name=gh): display_name: duplicate identity; also used by mcp_servers[0]")
	f("a2a_agents", "  - {display_name: p, url: https://a.example}\n  - {name: p, url: https://b.example}\n",
		"a2a_agents[1] (name=p): name: duplicate identity; also used by a2a_agents[0]")
	f("passthrough_routes", "  - {name: r, path: /a, upstream: https://a.example}\n  - {name: r, path: /b, upstream: https://a.example}\n",
		"passthrough_routes[1] (name=r): name: duplicate identity; also used by passthrough_routes[0]")
	f("cache_policies", "  - {name: c, ttl_seconds: 1}\n  - {name: c, ttl_seconds: 2}\n",
		"cache_policies[1] (name=c): name: duplicate identity; also used by cache_policies[0]")
	f("observability_exporters", "  - {name: x, kind: datadog, api_key: \"${DD_API_KEY}\"}\n  - {name: x, kind: datadog, api_key: \"${DD_API_KEY}\"}\n",
		"observability_exporters[1] (name=x): name: duplicate identity; also used by observability_exporters[0]")
	f("rate_limit_policies", "  - {name: p, scope: team, window: minute, max_requests: 1}\n  - {name: p, scope: team, window: minute, max_requests: 2}\n",
		"rate_limit_policies[1] (name=p): name: duplicate identity; also used by rate_limit_policies[0]")

	// Required and non-empty identities.
	f("oidc_providers", "  - {issuer: https://i.example, audiences: [a]}\n", "oidc_providers[0]: name: required")
	f("cache_policies", "  - {name: \"\", ttl_seconds: 1}\n", "cache_policies[0]: name: must not be empty")
	f("rate_limit_policies", "  - {scope: team, window: minute, max_requests: 1}\n", "rate_limit_policies[0]: name: required")
	f("observability_exporters", "  - {kind: datadog, api_key: \"${DD_API_KEY}\"}\n", "observability_exporters[0]: name: required")
	f("claim_mappings", "  - {jwt_provider: x, match: [{claim: sub, op: exact, values: [a]}], resolve: {api_key: alice}}\n", "claim_mappings[0]: name: required")
}

func TestMiscEitherNameIdentity(t *testing.T) {
	f := func(coll, entry, want string) {
		t.Helper()
		miscErrLine(t, miscBase+coll+":\n"+entry, want)
	}
	for _, c := range []struct{ coll, rest string }{
		{"mcp_servers", "url: https://a.example/mcp"},
		{"a2a_agents", "url: https://a.example"},
		{"passthrough_routes", "path: /x, upstream: https://a.example"},
	} {
		f(c.coll, "  - {name: a, display_name: b, "+c.rest+"}\n", c.coll+"[0] (name=a): name: set exactly one of name and display_name, not both")
		f(c.coll, "  - {"+c.rest+"}\n", c.coll+"[0]: name: required (or display_name)")
		f(c.coll, "  - {display_name: \"\", "+c.rest+"}\n", c.coll+"[0]: display_name: must not be empty")
	}
	// display_name is an accepted identity and keeps its field name.
	r := miscOK(t, miscBase+"a2a_agents:\n  - {display_name: planner, url: https://a.example}\n")
	if a := r.A2AAgents[0]; a.Name != "planner" || a.IDField != "display_name" || a.ID != DeriveID(KindA2AAgent, "planner") {
		t.Fatalf("got %+v", a)
	}
}

func TestMiscNoIDField(t *testing.T) {
	miscErrLine(t, miscBase+"cache_policies:\n  - {name: c, ttl_seconds: 1, id: x}\n", "cache_policies[0] (name=c): id: unknown field")
}

// fullMiscExample is one realistic entry set per collection; it is the
// example shown in docs/CONFIG.md and must load cleanly on
// top of miscBase.
const fullMiscExample = `oidc_providers:
  - name: corp
    issuer: https://login.example.com/realms/corp
    audiences: [https://gw.example.com/mcp, gw-api]
    identity_claim: email
    required_scopes: [gw.use]
    bound_claims:
      realm_access.roles: [gw-users, gw-admins]
      tenant: acme
    leeway_secs: 30
  - name: ci
    hmac_secret: ${HMAC_SECRET}
    audiences: [gw-ci]
mcp_auth_settings:
  - resource_url: https://gw.example.com/mcp
    anonymous:
      api_key_id: c217a88e-a3c4-5708-ab18-f7f57a425eb0
      source_cidrs: [10.0.0.0/8, "fd00::/8"]
      servers: [docs]
claim_mappings:
  - name: eng-group
    jwt_provider: corp
    priority: 10
    match:
      - {claim: groups, op: contains, values: [engineering, platform]}
      - {claim: org.tier, op: exact, values: [paid]}
    resolve: {api_key: alice}
mcp_servers:
  - name: github
    url: https://api.githubcopilot.com/mcp/
    headers:
      authorization: Bearer ${GITHUB_TOKEN}
    allowed_tools: ["get_*", search_code]
    timeout_ms: 30000
    description: GitHub repositories, issues and pull requests
  - name: docs
    type: openapi
    spec_url: https://docs.example.com/openapi.json
    url: https://docs.example.com/api
    provider_key: oa
a2a_agents:
  - name: planner
    url: https://agents.example.com/planner
    description: Breaks a goal into tasks
    timeout_ms: 120000
passthrough_routes:
  - name: openai-files
    path: /openai
    provider_key: oa
    methods: [GET, POST, DELETE]
    forward_client_headers: [openai-beta, "x-trace-*"]
    timeout_ms: 120000
cache_policies:
  - name: faq
    backend: redis
    ttl_seconds: 3600
    models: [gpt]
  - name: semantic-faq
    match: semantic
    ttl_seconds: 600
    models: ["gp*"]
    semantic: {embedding_model: embed, threshold: 0.92}
    max_entry_bytes: 262144
observability_exporters:
  - name: otel
    kind: otlp_http
    endpoint: https://otel.example.com/v1/traces
    headers: {authorization: "Bearer ${OTLP_TOKEN}"}
    compression: gzip
  - name: archive
    kind: object_store
    provider: s3
    bucket: gw-usage
    prefix: events/
    region: eu-west-1
    auth_mode: static
    access_key_id: ${AWS_KEY_ID}
    secret_access_key: ${AWS_SECRET}
    compression: gzip
    batch_size: 2000
    flush_interval_ms: 60000
  - name: sls
    kind: sls
    endpoint: https://cn-hangzhou.log.aliyuncs.com
    project: gw-prod
    logstore: usage
    access_key_id: ${SLS_KEY_ID}
    access_key_secret: ${SLS_SECRET}
  - name: dd
    kind: datadog
    site: datadoghq.eu
    api_key: ${DD_API_KEY}
    enabled: false
rate_limit_policies:
  - name: team-t1
    scope: team
    scope_ref: t1
    window: minute
    max_requests: 600
    max_tokens: 200000
  - name: gpt-per-key
    scope: api_key
    window: day
    max_tokens: 1000000
    match: {models: ["gp*"]}
`
