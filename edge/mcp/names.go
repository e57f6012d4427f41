// Package mcp serves the Model Context Protocol endpoints: /mcp/{server}
// speaks for one registered MCP server, /mcp aggregates every server the
// caller may reach under <server>__<name> names. gw terminates the caller's
// MCP session itself (JSON answers over Streamable HTTP) and holds one
// upstream session per caller session and server, opened with the official
// Go SDK's client transports (Streamable HTTP or the legacy SSE transport),
// so caller policy (tool access, tools/call limits, guardrails, usage) sits
// between two well-formed protocol ends.
package mcp

import (
	"strings"

	"gw/admin/resources"
)

// Sep joins a server name and a tool, prompt or resource name on /mcp.
const Sep = "__"

// Join returns the aggregate name of name on server.
func Join(server, name string) string { return server + Sep + name }

// Split finds the server owning an aggregate name: the longest registered
// server name s with name = s + "__" + rest (server names may themselves
// contain "__"). ok is false when no server owns it or rest is empty.
func Split(name string, servers []*resources.MCPServer) (srv *resources.MCPServer, rest string, ok bool) {
	for _, s := range servers {
		if len(name) > len(s.Name)+len(Sep) && strings.HasPrefix(name, s.Name) && name[len(s.Name):len(s.Name)+len(Sep)] == Sep {
			if srv == nil || len(s.Name) > len(srv.Name) {
				srv, rest = s, name[len(s.Name)+len(Sep):]
			}
		}
	}
	return srv, rest, srv != nil
}

// ToolAllowed reports whether a caller key may see and call tool on server:
// the server exposes it (allowed_tools) and the key's mcp_access allows
// <server>__<tool> and does not deny it (deny wins). A key without
// mcp_access reaches no tool.
func ToolAllowed(k *resources.APIKey, s *resources.MCPServer, tool string) bool {
	if !s.ToolAllowed(tool) {
		return false
	}
	return accessAllows(k.MCPAccess, Join(s.Name, tool))
}

func accessAllows(a *resources.MCPAccess, full string) bool {
	if a == nil {
		return false
	}
	for _, g := range a.Deny {
		if resources.GlobMatch(g, full) {
			return false
		}
	}
	for _, g := range a.Allow {
		if resources.GlobMatch(g, full) {
			return true
		}
	}
	return false
}

// ServerReachable reports whether a key may reach anything on server:
// some allow glob can match one of its tools and no deny covers the whole
// server. Prompts and resources of a server follow this rule.
func ServerReachable(k *resources.APIKey, s *resources.MCPServer) bool {
	a := k.MCPAccess
	if a == nil {
		return false
	}
	prefix := s.Name + Sep
	for _, g := range a.Deny {
		if g == "*" || g == prefix+"*" {
			return false
		}
	}
	for _, g := range a.Allow {
		if globMayMatchPrefix(g, prefix) {
			return true
		}
	}
	return false
}

// globMayMatchPrefix reports whether a single-* glob can match some name
// starting with prefix.
func globMayMatchPrefix(g, prefix string) bool {
	star := strings.IndexByte(g, '*')
	if star < 0 {
		return strings.HasPrefix(g, prefix) && len(g) > len(prefix)
	}
	head := g[:star]
	if len(head) <= len(prefix) {
		return strings.HasPrefix(prefix, head)
	}
	return strings.HasPrefix(head, prefix)
}
