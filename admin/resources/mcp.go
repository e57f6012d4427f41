package resources

// Tool and agent catalogs: mcp_servers and a2a_agents.
// Reference: docs/CONFIG.md.

import (
	"net/url"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// MCP server types.
const (
	MCPTypeMCP     = "mcp"     // an upstream MCP server
	MCPTypeOpenAPI = "openapi" // OpenAPI operations exposed as tools
)

// MCP transports (type mcp).
const (
	MCPTransportStreamableHTTP = "streamable_http"
	MCPTransportSSE            = "sse"
)

// Timeouts used when timeout_ms is absent.
const (
	DefaultMCPTimeoutMS = 60000  // one MCP request (tools/call, tools/list, ...)
	DefaultA2ATimeoutMS = 300000 // one A2A request; streaming responses may run longer between events
)

// DefaultAgentCardPath is a2a_agents agent_card_path when unset.
const DefaultAgentCardPath = "/.well-known/agent-card.json"

// MCPToolSeparator joins server and tool in the tool names callers see.
const MCPToolSeparator = "__"

// MCPServer is one mcp_servers entry.
type MCPServer struct {
	Index   int
	ID      string
	Name    string // tool names are <Name>__<tool>
	IDField string // "name" or "display_name", as written

	Type string // MCPTypeMCP (default) or MCPTypeOpenAPI
	// URL is the MCP endpoint (type mcp, required) or the base URL operations
	// are called against (type openapi, optional: default the spec's first
	// servers entry).
	URL       string
	Transport string // type mcp: MCPTransportStreamableHTTP (default) or MCPTransportSSE
	SpecURL   string // type openapi: where the OpenAPI document is fetched
	Spec      string // type openapi: the inline OpenAPI document
	Headers   []UpstreamHeader
	// ProviderKeyName / ProviderKey: optional credential sent upstream as
	// Authorization: Bearer <api_key>.
	ProviderKeyName string
	ProviderKey     *ProviderKey
	AllowedTools    []string // tool-name globs (without the server prefix); nil: every tool
	TimeoutMS       int64    // resolved, default DefaultMCPTimeoutMS
	Description     string

	providerKeyID string
}

// Timeout is the per-request upstream timeout.
func (s *MCPServer) Timeout() time.Duration { return time.Duration(s.TimeoutMS) * time.Millisecond }

// ToolAllowed reports whether a tool (name without the server prefix) is exposed.
func (s *MCPServer) ToolAllowed(tool string) bool {
	if s.AllowedTools == nil {
		return true
	}
	for _, g := range s.AllowedTools {
		if GlobMatch(g, tool) {
			return true
		}
	}
	return false
}

var mcpServerNameRE = lazyRE(`^[a-zA-Z0-9_-]+$`)

// mcpOnly and openAPIOnly are the type-specific fields.
var (
	mcpOnly     = []string{"transport"}
	openAPIOnly = []string{"spec_url", "spec"}
)

func (l *loader) decodeMCPServer(e *entry, o *obj) {
	s := &MCPServer{Index: e.idx, TimeoutMS: DefaultMCPTimeoutMS}
	s.Name, s.IDField = decodeEitherName(e, o)
	s.ID = DeriveID(KindMCPServer, s.Name)
	switch {
	case s.Name == "":
	case !mcpServerNameRE().MatchString(s.Name):
		o.errf(s.IDField, "must hold only letters, digits, '_' and '-' (it prefixes tool names)")
	case strings.Contains(s.Name, MCPToolSeparator):
		o.errf(s.IDField, "must not contain \"__\" (it separates server and tool in <server>__<tool> tool names)")
	}

	s.Type = MCPTypeMCP
	if o.has("type") {
		t, ok := o.enum("type", MCPTypeMCP, MCPTypeOpenAPI)
		if !ok {
			// Only the type error is useful until it is fixed.
			for _, f := range [...]string{"url", "transport", "spec_url", "spec"} {
				o.raw(f)
			}
		}
		s.Type = t
	} else {
		o.raw("type") // explicit null
	}
	switch s.Type {
	case MCPTypeMCP:
		s.URL = o.reqStr("url")
		s.Transport = MCPTransportStreamableHTTP
		if t, ok := o.enum("transport", MCPTransportStreamableHTTP, MCPTransportSSE); ok {
			s.Transport = t
		}
		for _, f := range openAPIOnly {
			o.rejectSet(f, "accepted only with type openapi")
		}
	case MCPTypeOpenAPI:
		s.URL, _ = o.str("url")
		for _, f := range mcpOnly {
			o.rejectSet(f, "accepted only with type mcp")
		}
		switch field, v := o.pickOne("spec_url", "spec", true); field {
		case "spec_url":
			if msg := checkBaseURL(v); v != "" && msg != "" {
				o.errf("spec_url", msg)
			}
			s.SpecURL = v
		case "spec":
			if msg := checkOpenAPIDocument(v); v != "" && msg != "" {
				o.errf("spec", msg)
			}
			s.Spec = v
		}
	}
	if s.URL != "" {
		if msg := checkBaseURL(s.URL); msg != "" {
			o.errf("url", msg)
		}
	}

	s.Headers = o.decodeUpstreamHeaders("headers")
	switch field, v := o.pickOne("provider_key", "provider_key_id", false); field {
	case "provider_key":
		s.ProviderKeyName = v
	case "provider_key_id":
		s.providerKeyID = v
	}
	if (s.ProviderKeyName != "" || s.providerKeyID != "") && hasHeader(s.Headers, "authorization") {
		o.errf("headers.authorization", "conflicts with the provider key, whose credential is sent as Authorization: Bearer; remove one")
	}
	if o.requireSeq("allowed_tools", "tool glob (omit the field to expose every tool)", false) {
		s.AllowedTools = o.globList("allowed_tools")
	}
	if v, ok := o.intMin("timeout_ms", 1); ok {
		s.TimeoutMS = v
	}
	s.Description, _ = o.str("description")
	l.res.MCPServers = append(l.res.MCPServers, s)
}

// checkOpenAPIDocument checks that an inline spec is an OpenAPI 3 document:
// a YAML or JSON mapping with an `openapi: 3.x` version and `paths`. The
// message never quotes the document.
func checkOpenAPIDocument(doc string) string {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil || len(n.Content) != 1 {
		return "must be an OpenAPI 3 document in YAML or JSON (it does not parse)"
	}
	root := resolve(n.Content[0])
	if root.Kind != yaml.MappingNode {
		return "must be an OpenAPI 3 document (a mapping with openapi and paths)"
	}
	var version string
	var paths bool
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch root.Content[i].Value {
		case "openapi":
			version = resolve(root.Content[i+1]).Value
		case "paths":
			paths = resolve(root.Content[i+1]).Kind == yaml.MappingNode
		}
	}
	switch {
	case !strings.HasPrefix(version, "3."):
		return "must be an OpenAPI 3 document: `openapi: 3.x` is missing (Swagger 2.0 is not supported)"
	case !paths:
		return "must be an OpenAPI 3 document: `paths` mapping is missing"
	}
	return ""
}

func (l *loader) resolveMCPServers(pks providerKeyIndex) {
	for _, s := range l.res.MCPServers {
		e := entryOf(CollMCPServers, s.Index, s.IDField, s.Name)
		s.ProviderKey = pks.resolve(l, e, "", s.ProviderKeyName, s.providerKeyID)
		if s.ProviderKey != nil {
			s.ProviderKeyName = s.ProviderKey.DisplayName
		}
	}
}

// A2AAgent is one a2a_agents entry.
type A2AAgent struct {
	Index   int
	ID      string
	Name    string
	IDField string // "name" or "display_name", as written

	URL           string // base URL of the agent
	Description   string
	Headers       []UpstreamHeader
	TimeoutMS     int64  // resolved, default DefaultA2ATimeoutMS
	AgentCardPath string // default DefaultAgentCardPath
}

// Timeout is the per-request upstream timeout.
func (a *A2AAgent) Timeout() time.Duration { return time.Duration(a.TimeoutMS) * time.Millisecond }

// AgentCardURL is URL joined with AgentCardPath.
func (a *A2AAgent) AgentCardURL() string {
	return strings.TrimSuffix(a.URL, "/") + a.AgentCardPath
}

// checkEntryName rejects characters that make an identity unusable where
// it is referenced by glob lists (allowed_agents, allowed_routes).
func checkEntryName(o *obj, field, name string) {
	if strings.Contains(name, "*") {
		o.errf(field, "must not contain '*' (it would read as a glob in allowed_agents and allowed_routes)")
	}
}

func (l *loader) decodeA2AAgent(e *entry, o *obj) {
	a := &A2AAgent{Index: e.idx, TimeoutMS: DefaultA2ATimeoutMS, AgentCardPath: DefaultAgentCardPath}
	a.Name, a.IDField = decodeEitherName(e, o)
	a.ID = DeriveID(KindA2AAgent, a.Name)
	checkEntryName(o, a.IDField, a.Name)
	a.URL = o.reqStr("url")
	if a.URL != "" {
		if msg := checkBaseURL(a.URL); msg != "" {
			o.errf("url", msg)
		} else if u, _ := url.Parse(a.URL); u.RawQuery != "" || u.ForceQuery {
			o.errf("url", "must not have a query (it is the agent's base URL)")
		}
	}
	a.Description, _ = o.str("description")
	a.Headers = o.decodeUpstreamHeaders("headers")
	if v, ok := o.intMin("timeout_ms", 1); ok {
		a.TimeoutMS = v
	}
	if p, ok := o.str("agent_card_path"); ok {
		if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?# \t\r\n") {
			o.errf("agent_card_path", "must be a URL path starting with '/', without query, fragment or spaces")
		}
		a.AgentCardPath = p
	}
	l.res.A2AAgents = append(l.res.A2AAgents, a)
}
