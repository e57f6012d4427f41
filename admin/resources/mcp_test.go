package resources

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func mcpFile(entries string) string { return miscBase + "mcp_servers:\n" + entries }

func TestMCPServerDefaults(t *testing.T) {
	r := miscOK(t, mcpFile("  - {name: gh, url: https://gh.example.com/mcp}\n"))
	s := r.MCPServers[0]
	if s.ID != DeriveID(KindMCPServer, "gh") || s.IDField != "name" || s.Type != MCPTypeMCP ||
		s.Transport != MCPTransportStreamableHTTP || s.Timeout() != time.Minute || s.AllowedTools != nil || s.ProviderKey != nil {
		t.Fatalf("got %+v", s)
	}
	if !s.ToolAllowed("anything") {
		t.Fatal("absent allowed_tools must expose every tool")
	}
}

func TestMCPServerFields(t *testing.T) {
	r := miscOK(t, mcpFile(`  - name: gh
    url: https://gh.example.com/sse
    transport: sse
    headers: {Authorization: "Bearer ${GITHUB_TOKEN}", x-org: acme}
    allowed_tools: ["get_*", search]
    timeout_ms: 1500
    description: GitHub
  - display_name: docs
    type: openapi
    spec: |
      openapi: 3.1.0
      info: {title: docs, version: "1"}
      paths: {}
    provider_key_id: `+DeriveID(KindProviderKey, "oa")+`
`))
	gh, docs := r.MCPServers[0], r.MCPServers[1]
	if gh.Transport != MCPTransportSSE || gh.TimeoutMS != 1500 || gh.Description != "GitHub" || len(gh.Headers) != 2 {
		t.Fatalf("got %+v", gh)
	}
	if h := gh.Headers[0]; h.Name != "authorization" || h.Value.Reveal() != "Bearer ghp_test" {
		t.Fatalf("header: got %q", h.Name)
	}
	if s := fmt.Sprintf("%+v", gh); strings.Contains(s, "ghp_test") {
		t.Fatalf("server prints a header secret: %s", s)
	}
	for tool, want := range map[string]bool{"get_issue": true, "search": true, "search_code": false, "delete": false} {
		if gh.ToolAllowed(tool) != want {
			t.Errorf("ToolAllowed(%s): want %v", tool, want)
		}
	}
	if docs.Type != MCPTypeOpenAPI || docs.Spec == "" || docs.ProviderKey == nil || docs.ProviderKeyName != "oa" || docs.IDField != "display_name" {
		t.Fatalf("got %+v", docs)
	}
}

func TestMCPServerRejections(t *testing.T) {
	f := func(entry, want string) {
		t.Helper()
		miscErrLine(t, mcpFile(entry), want)
	}
	u := "url: https://x.example/mcp"
	f("  - {name: git hub, "+u+"}\n", "mcp_servers[0] (name=git hub): name: must hold only letters, digits, '_' and '-' (it prefixes tool names)")
	f("  - {name: a.b, "+u+"}\n", "mcp_servers[0] (name=a.b): name: must hold only letters, digits, '_' and '-' (it prefixes tool names)")
	f("  - {display_name: git__hub, "+u+"}\n", `mcp_servers[0] (display_name=git__hub): display_name: must not contain "__" (it separates server and tool in <server>__<tool> tool names)`)
	f("  - {name: gh}\n", "mcp_servers[0] (name=gh): url: required")
	f("  - {name: gh, url: x.example/mcp}\n", "mcp_servers[0] (name=gh): url: must be an absolute http or https URL (scheme http or https)")
	f("  - {name: gh, "+u+", transport: stdio}\n", `mcp_servers[0] (name=gh): transport: unknown value "stdio"; allowed: streamable_http, sse`)
	f("  - {name: gh, "+u+", spec_url: https://x.example/o.json}\n", "mcp_servers[0] (name=gh): spec_url: accepted only with type openapi")
	f("  - {name: gh, "+u+", spec: x}\n", "mcp_servers[0] (name=gh): spec: accepted only with type openapi")
	f("  - {name: gh, type: openapi, transport: sse, spec_url: https://x.example/o.json}\n", "mcp_servers[0] (name=gh): transport: accepted only with type mcp")
	f("  - {name: gh, type: openapi}\n", "mcp_servers[0] (name=gh): spec_url: required (or spec)")
	f("  - {name: gh, type: openapi, spec_url: https://x.example/o.json, spec: x}\n", "mcp_servers[0] (name=gh): spec_url: set exactly one of spec_url and spec, not both")
	f("  - {name: gh, type: openapi, spec_url: /tmp/o.json}\n", "mcp_servers[0] (name=gh): spec_url: must be an absolute http or https URL (scheme http or https)")
	f("  - {name: gh, type: openapi, spec: \"swagger: '2.0'\\npaths: {}\"}\n", "mcp_servers[0] (name=gh): spec: must be an OpenAPI 3 document: `openapi: 3.x` is missing (Swagger 2.0 is not supported)")
	f("  - {name: gh, type: openapi, spec: \"openapi: 3.0.3\"}\n", "mcp_servers[0] (name=gh): spec: must be an OpenAPI 3 document: `paths` mapping is missing")
	f("  - {name: gh, type: openapi, spec: \"[1, 2\"}\n", "mcp_servers[0] (name=gh): spec: must be an OpenAPI 3 document in YAML or JSON (it does not parse)")
	f("  - {name: gh, type: openapi, spec: \"- a\"}\n", "mcp_servers[0] (name=gh): spec: must be an OpenAPI 3 document (a mapping with openapi and paths)")
	// Null fields of the other type count as absent.
	miscOK(t, mcpFile("  - {name: gh, "+u+", spec: null, spec_url: null, allowed_tools: null, headers: null, provider_key: null}\n"))
	// An unknown type is the one error; type-specific fields do not cascade.
	r := miscLoad(mcpFile("  - {name: gh, type: grpc, spec: x, transport: sse}\n"))
	if len(r.Errors) != 1 || r.Errors[0].String() != `mcp_servers[0] (name=gh): type: unknown value "grpc"; allowed: mcp, openapi` {
		t.Fatalf("got:\n%s", miscLines(r.Errors))
	}

	// headers
	f("  - {name: gh, "+u+", headers: {\"bad header\": x}}\n", "mcp_servers[0] (name=gh): headers.bad header: invalid header name")
	f("  - {name: gh, "+u+", headers: {Host: x}}\n", "mcp_servers[0] (name=gh): headers.Host: header is set by the gateway and cannot be configured (host, hop-by-hop, x-gw-*, content-type, content-length)")
	f("  - {name: gh, "+u+", headers: {content-type: x}}\n", "mcp_servers[0] (name=gh): headers.content-type: header is set by the gateway and cannot be configured (host, hop-by-hop, x-gw-*, content-type, content-length)")
	f("  - {name: gh, "+u+", headers: {X-A: x, x-a: y}}\n", "mcp_servers[0] (name=gh): headers.x-a: duplicate header (names are case-insensitive)")
	f("  - {name: gh, "+u+", headers: {x-a: \"\"}}\n", "mcp_servers[0] (name=gh): headers.x-a: must not be empty")
	f("  - {name: gh, "+u+", headers: {x-a: \"a\\r\\nb: c\"}}\n", "mcp_servers[0] (name=gh): headers.x-a: header value must not contain CR, LF or NUL")
	f("  - {name: gh, "+u+", headers: {x-a: 1}}\n", "mcp_servers[0] (name=gh): headers.x-a: must be a string, got an integer")

	// provider key
	f("  - {name: gh, "+u+", provider_key: oa, provider_key_id: x}\n", "mcp_servers[0] (name=gh): provider_key: set exactly one of provider_key and provider_key_id, not both")
	f("  - {name: gh, "+u+", provider_key: nope}\n", `mcp_servers[0] (name=gh): provider_key: unknown provider key "nope"; available: bare, oa`)
	f("  - {name: gh, "+u+", provider_key_id: nope}\n", "mcp_servers[0] (name=gh): provider_key_id: no provider key has this derived ID; available keys: bare, oa")
	f("  - {name: gh, "+u+", provider_key: oa, headers: {authorization: \"Bearer ${GITHUB_TOKEN}\"}}\n",
		"mcp_servers[0] (name=gh): headers.authorization: conflicts with the provider key, whose credential is sent as Authorization: Bearer; remove one")

	// allowed_tools, timeout_ms
	f("  - {name: gh, "+u+", allowed_tools: []}\n", "mcp_servers[0] (name=gh): allowed_tools: must hold at least one tool glob (omit the field to expose every tool)")
	f("  - {name: gh, "+u+", allowed_tools: [\"*a*\"]}\n", "mcp_servers[0] (name=gh): allowed_tools[0]: a glob may hold a single '*'")
	f("  - {name: gh, "+u+", timeout_ms: 0}\n", "mcp_servers[0] (name=gh): timeout_ms: must be between 1 and 9223372036854775807, got 0")
}

func TestMCPServerHeaderWarnings(t *testing.T) {
	miscWarnLine(t, mcpFile("  - {name: gh, url: https://x.example/mcp, headers: {authorization: Bearer ghp_literal}}\n"),
		"mcp_servers[0] (name=gh): headers.authorization: credential written literally; supply it as ${VAR} so it stays out of the file")
	miscNoWarn(t, mcpFile("  - {name: gh, url: https://x.example/mcp, headers: {authorization: \"Bearer ${GITHUB_TOKEN}\", x-org: acme}}\n"))
}

func TestMCPServerNameReferences(t *testing.T) {
	// api_keys.mcp_rate_limits resolves against server names, including display_name ones.
	src := strings.Replace(mcpFile("  - {display_name: gh, url: https://x.example/mcp}\n"),
		"    key_env: CALLER_B\n", "    key_env: CALLER_B\n    mcp_rate_limits: {gh: {rpm: 5}}\n", 1)
	miscOK(t, src)
}

func a2aFile(entries string) string { return miscBase + "a2a_agents:\n" + entries }

func TestA2AAgents(t *testing.T) {
	r := miscOK(t, a2aFile("  - {name: planner, url: https://agents.example.com/planner/}\n  - {display_name: coder, url: https://c.example, agent_card_path: /card.json, timeout_ms: 1000, description: d, headers: {x-tenant: acme}}\n"))
	p, c := r.A2AAgents[0], r.A2AAgents[1]
	if p.ID != DeriveID(KindA2AAgent, "planner") || p.AgentCardPath != DefaultAgentCardPath || p.Timeout() != 5*time.Minute {
		t.Fatalf("got %+v", p)
	}
	if got := p.AgentCardURL(); got != "https://agents.example.com/planner/.well-known/agent-card.json" {
		t.Fatalf("AgentCardURL: got %q", got)
	}
	if c.AgentCardURL() != "https://c.example/card.json" || c.TimeoutMS != 1000 || c.Description != "d" || len(c.Headers) != 1 || c.IDField != "display_name" {
		t.Fatalf("got %+v", c)
	}

	f := func(entry, want string) {
		t.Helper()
		miscErrLine(t, a2aFile(entry), want)
	}
	f("  - {name: p}\n", "a2a_agents[0] (name=p): url: required")
	f("  - {name: p, url: \"grpc://x\"}\n", "a2a_agents[0] (name=p): url: must be an absolute http or https URL (scheme http or https)")
	f("  - {name: p, url: \"https://x.example/?a=1\"}\n", "a2a_agents[0] (name=p): url: must not have a query (it is the agent's base URL)")
	f("  - {name: \"p*\", url: https://x.example}\n", "a2a_agents[0] (name=p*): name: must not contain '*' (it would read as a glob in allowed_agents and allowed_routes)")
	f("  - {name: p, url: https://x.example, agent_card_path: card.json}\n", "a2a_agents[0] (name=p): agent_card_path: must be a URL path starting with '/', without query, fragment or spaces")
	f("  - {name: p, url: https://x.example, agent_card_path: \"/c?x=1\"}\n", "a2a_agents[0] (name=p): agent_card_path: must be a URL path starting with '/', without query, fragment or spaces")
	f("  - {name: p, url: https://x.example, timeout_ms: -1}\n", "a2a_agents[0] (name=p): timeout_ms: must be between 1 and 9223372036854775807, got -1")
	f("  - {name: p, url: https://x.example, headers: {connection: close}}\n", "a2a_agents[0] (name=p): headers.connection: header is set by the gateway and cannot be configured (host, hop-by-hop, x-gw-*, content-type, content-length)")
	f("  - {name: p, url: https://x.example, provider_key: oa}\n", "a2a_agents[0] (name=p): provider_key: unknown field")
}
