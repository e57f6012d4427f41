package mcp

import (
	"encoding/json"
	"net/url"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/authn"
)

// principal is who a request runs as: the caller (a key, a verified
// token's key, or the anonymous key) and, for anonymous callers, the
// servers they are capped to.
type principal struct {
	caller    *snapshot.Caller
	anonymous bool
	cap       []*resources.MCPServer // anonymous: the only reachable servers
}

// reaches reports whether the principal may use anything on s.
func (p *principal) reaches(s *resources.MCPServer) bool {
	if p.anonymous {
		found := false
		for _, c := range p.cap {
			if c == s || c.Name == s.Name {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return ServerReachable(p.caller.Key, s)
}

// toolAllowed reports whether the principal may see and call tool on s.
func (p *principal) toolAllowed(s *resources.MCPServer, tool string) bool {
	return p.reaches(s) && ToolAllowed(p.caller.Key, s, tool)
}

// authenticate resolves the caller like model traffic does (caller key or
// verified JWT, edge/authn). A request without any credential may run as
// mcp_auth_settings.anonymous when its client address (real-IP rules) is
// in source_cidrs and the endpoint is one of its servers (or /mcp with
// aggregate_entry); otherwise it gets 401, with the WWW-Authenticate that
// starts OAuth discovery when discovery is published.
func (h *Handler) authenticate(c *call) bool {
	h2 := &c.ctx.Request.Header
	if len(authn.Credential(h2)) == 0 {
		if a := anonymousFor(c.snap, c.srv); a != nil && h.ClientIP != nil {
			if ip, ok := h.ClientIP(c.ctx); ok && a.AllowsSource(ip) {
				if caller := c.snap.CallersByName[a.APIKey.DisplayName]; caller != nil {
					c.p = principal{caller: caller, anonymous: true, cap: a.ServerRefs}
					return true
				}
			}
		}
		h.unauthorized(c, authn.Missing)
		return false
	}
	caller, fail := authn.Authenticate(h2, c.snap, time.Now())
	if fail != nil {
		h.unauthorized(c, fail)
		return false
	}
	c.p = principal{caller: caller}
	return true
}

// anonymousFor returns the anonymous block that may serve the endpoint.
func anonymousFor(snap *snapshot.Snapshot, srv *resources.MCPServer) *resources.MCPAnonymous {
	st := snap.Resources.MCPAuthSettings
	if st == nil || st.Anonymous == nil || !st.Anonymous.Enabled || st.Anonymous.APIKey == nil {
		return nil
	}
	a := st.Anonymous
	if srv == nil {
		if !a.AggregateEntry {
			return nil
		}
		return a
	}
	for _, s := range a.ServerRefs {
		if s.Name == srv.Name {
			return a
		}
	}
	return nil
}

func (h *Handler) unauthorized(c *call, f *authn.Failure) {
	if _, ok := Discovery(c.snap); ok {
		v := `Bearer resource_metadata="` + MetadataURL(c.snap.Resources.MCPAuthSettings.ResourceURL, c.srv) + `"`
		if f != authn.Missing {
			v += `, error="invalid_token"`
		}
		c.ctx.Response.Header.Set("WWW-Authenticate", v)
	}
	httpError(c.ctx, fasthttp.StatusUnauthorized, f.Message)
}

// ResourceMetadata is the OAuth 2.0 protected resource metadata (RFC 9728)
// gw publishes for /mcp.
type ResourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

// Discovery returns the metadata of /mcp when it is published:
// mcp_auth_settings.resource_url is set and an enabled OIDC provider with an
// issuer accepts it as an audience (the provider MCP clients log in with).
func Discovery(snap *snapshot.Snapshot) (*ResourceMetadata, bool) {
	st := snap.Resources.MCPAuthSettings
	if st == nil || st.ResourceURL == "" {
		return nil, false
	}
	md := &ResourceMetadata{Resource: st.ResourceURL, BearerMethodsSupported: []string{"header"}, ResourceName: "gw MCP gateway"}
	for _, p := range snap.Resources.OIDCProviders {
		if !p.Enabled || p.Issuer == "" {
			continue
		}
		for _, a := range p.Audiences {
			if a == st.ResourceURL {
				md.AuthorizationServers = append(md.AuthorizationServers, p.Issuer)
				md.ScopesSupported = append(md.ScopesSupported, p.RequiredScopes...)
				break
			}
		}
	}
	if len(md.AuthorizationServers) == 0 {
		return nil, false
	}
	return md, true
}

const wellKnown = "/.well-known/oauth-protected-resource"

// MetadataURL is where the metadata of resourceURL (the /mcp URL) or of
// one server's endpoint under it is published: the well-known path
// inserted before the resource's path (RFC 9728, section 3.1).
func MetadataURL(resourceURL string, srv *resources.MCPServer) string {
	u, err := url.Parse(resourceURL)
	if err != nil {
		return resourceURL
	}
	path := u.Path
	if srv != nil {
		path += "/" + srv.Name
	}
	u.Path, u.RawPath = wellKnown+path, ""
	return u.String()
}

// IsMetadataPath reports whether path is a protected-resource metadata path gw serves.
func IsMetadataPath(path string) bool {
	return path == wellKnown || path == wellKnown+"/mcp" || strings.HasPrefix(path, wellKnown+"/mcp/")
}

// ServeMetadata answers GET /.well-known/oauth-protected-resource[/mcp[/{server}]]:
// 404 when discovery is not published.
func (h *Handler) ServeMetadata(ctx *fasthttp.RequestCtx) {
	if !ctx.IsGet() && !ctx.IsHead() {
		ctx.Response.Header.Set("Allow", "GET")
		httpError(ctx, fasthttp.StatusMethodNotAllowed, "use GET")
		return
	}
	snap := h.Holder.Load()
	md, ok := Discovery(snap)
	if !ok {
		httpError(ctx, fasthttp.StatusNotFound, "OAuth discovery is not published: set mcp_auth_settings.resource_url and enable an OIDC provider accepting it as an audience")
		return
	}
	path := string(ctx.Path())
	if rest, found := strings.CutPrefix(path, wellKnown+"/mcp/"); found {
		srv := findServer(snap, rest)
		if srv == nil {
			httpError(ctx, fasthttp.StatusNotFound, "unknown MCP server \""+rest+"\"")
			return
		}
		cp := *md
		cp.Resource = strings.TrimSuffix(md.Resource, "/") + "/" + srv.Name
		md = &cp
	}
	b, _ := json.Marshal(md)
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	ctx.Response.Header.Set("Cache-Control", "max-age=300")
	ctx.SetBody(b)
}
