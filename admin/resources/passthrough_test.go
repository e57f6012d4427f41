package resources

import (
	"strings"
	"testing"
)

func routeFile(entries string) string { return miscBase + "passthrough_routes:\n" + entries }

func TestPassthroughRouteDefaults(t *testing.T) {
	r := miscOK(t, routeFile("  - {name: files, path: /openai/, provider_key: oa}\n"))
	p := r.PassthroughRoutes[0]
	if p.ID != DeriveID(KindPassthroughRoute, "files") || p.Path != "/openai" || !p.StripPrefix || p.TimeoutMS != 0 ||
		len(p.Methods) != len(PassthroughMethods) || p.ForwardClientHeadersSet || !p.Inject() {
		t.Fatalf("got %+v", p)
	}
	// upstream defaults to the provider key's api_base.
	if p.Upstream != "https://api.openai.com/v1" || !p.UpstreamFromKey || p.ProviderKeyName != "oa" {
		t.Fatalf("upstream: got %q from key %v", p.Upstream, p.UpstreamFromKey)
	}
	for _, c := range []struct {
		in, rest string
		ok       bool
	}{{"/openai", "", true}, {"/openai/files", "/files", true}, {"/openaix", "", false}, {"/other", "", false}} {
		rest, ok := p.MatchPath(c.in)
		if ok != c.ok || rest != c.rest {
			t.Errorf("MatchPath(%q): got %q %v; want %q %v", c.in, rest, ok, c.rest, c.ok)
		}
	}
}

func TestPassthroughRouteFields(t *testing.T) {
	r := miscOK(t, routeFile(`  - display_name: anthropic
    path: /anthropic
    upstream: https://u:p@api.anthropic.com
    provider_key_id: `+DeriveID(KindProviderKey, "bare")+`
    anonymous_key: bob
    methods: [post, GET, POST]
    strip_prefix: false
    timeout_ms: 2500
    forward_client_headers: [" Anthropic-Beta ", "x-trace-*", anthropic-beta]
  - name: open
    path: /public/v2
    upstream: https://public.example.com
    anonymous_key_id: `+DeriveID(KindAPIKey, "alice")+`
    forward_client_headers: []
`))
	a, o := r.PassthroughRoutes[0], r.PassthroughRoutes[1]
	if a.ProviderKeyName != "bare" || a.AnonymousKey == nil || a.AnonymousKeyName != "bob" || a.UpstreamFromKey ||
		strings.Join(a.Methods, ",") != "POST,GET" || a.StripPrefix || a.TimeoutMS != 2500 ||
		strings.Join(a.ForwardClientHeaders, ",") != "anthropic-beta,x-trace-*" || !a.ForwardClientHeadersSet {
		t.Fatalf("got %+v", a)
	}
	if rest, ok := a.MatchPath("/anthropic/v1/messages"); !ok || rest != "/anthropic/v1/messages" {
		t.Fatalf("strip_prefix false: got %q", rest)
	}
	if !a.AllowsMethod("GET") || a.AllowsMethod("DELETE") {
		t.Fatal("AllowsMethod")
	}
	// Forward mode: no provider key; [] forwards no client header but is set.
	if o.Inject() || o.AnonymousKeyName != "alice" || !o.ForwardClientHeadersSet || len(o.ForwardClientHeaders) != 0 {
		t.Fatalf("got %+v", o)
	}
}

func TestPassthroughRouteRejections(t *testing.T) {
	f := func(entry, want string) {
		t.Helper()
		miscErrLine(t, routeFile(entry), want)
	}
	up := "upstream: https://x.example"
	at := "passthrough_routes[0] (name=r): "
	f("  - {name: r, "+up+"}\n", at+"path: required")
	f("  - {name: r, path: openai, "+up+"}\n", at+"path: must start with '/'")
	f("  - {name: r, path: \"/a?b\", "+up+"}\n", at+"path: must be a plain path prefix without query, fragment, '*', '%' or spaces")
	f("  - {name: r, path: \"/a/*\", "+up+"}\n", at+"path: must be a plain path prefix without query, fragment, '*', '%' or spaces")
	f("  - {name: r, path: /a//b, "+up+"}\n", at+`path: must not contain empty segments ("//")`)
	f("  - {name: r, path: /a/../v1, "+up+"}\n", at+`path: must not contain "." or ".." segments`)
	// gw's own endpoints: under them, or covering them.
	for _, c := range []struct{ path, prefix string }{
		{"/v1/files", "/v1/"}, {"/v1", "/v1/"}, {"/mcp", "/mcp"}, {"/mcp/gh", "/mcp"}, {"/a2a", "/a2a"},
		{"/status/config", "/status"}, {"/livez", "/livez"}, {"/readyz", "/readyz"}, {"/metrics", "/metrics"},
		{"/debug/pprof", "/debug"},
	} {
		f("  - {name: r, path: "+c.path+", "+up+"}\n", at+`path: falls under gw's own endpoint "`+c.prefix+`"; choose another prefix`)
	}
	f("  - {name: r, path: /, "+up+"}\n", at+`path: would cover gw's own endpoint "/v1/"; choose a longer prefix`)
	// Neighbours that merely share characters are fine.
	miscOK(t, routeFile("  - {name: a, path: /v1beta, "+up+"}\n  - {name: b, path: /mcpx, "+up+"}\n  - {name: c, path: /statuses, "+up+"}\n"))

	f("  - {name: r, path: /a, upstream: ftp://x}\n", at+"upstream: must be an absolute http or https URL (scheme http or https)")
	f("  - {name: r, path: /a, upstream: \"https://x.example/?k=v\"}\n", at+"upstream: must not have a query (the caller's query string is forwarded)")
	f("  - {name: r, path: /a}\n", at+"upstream: required (the route has no provider key whose api_base could serve as upstream)")
	f("  - {name: r, path: /a, provider_key: bare}\n", at+`upstream: required: provider key "bare" has no api_base to serve as upstream`)
	f("  - {name: r, path: /a, "+up+", methods: []}\n", at+"methods: must hold at least one method (omit the field to route every method)")
	f("  - {name: r, path: /a, "+up+", methods: [GET, TRACE]}\n", at+"methods[1]: unknown method; allowed: GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS")
	f("  - {name: r, path: /a, "+up+", strip_prefix: 1}\n", at+"strip_prefix: must be a boolean, got an integer")
	f("  - {name: r, path: /a, "+up+", timeout_ms: 0}\n", at+"timeout_ms: must be between 1 and 9223372036854775807, got 0")

	f("  - {name: r, path: /a, provider_key: oa, provider_key_id: x}\n", at+"provider_key: set exactly one of provider_key and provider_key_id, not both")
	f("  - {name: r, path: /a, provider_key: nope}\n", at+`provider_key: unknown provider key "nope"; available: bare, oa`)
	f("  - {name: r, path: /a, provider_key_id: nope}\n", at+"provider_key_id: no provider key has this derived ID; available keys: bare, oa")
	f("  - {name: r, path: /a, "+up+", anonymous_key: bob, anonymous_key_id: x}\n", at+"anonymous_key: set exactly one of anonymous_key and anonymous_key_id, not both")
	f("  - {name: r, path: /a, "+up+", anonymous_key: carol}\n", at+`anonymous_key: unknown api key "carol"; available: alice, bob`)
	f("  - {name: r, path: /a, "+up+", anonymous_key_id: x}\n", at+"anonymous_key_id: no api_keys entry has this derived ID; available keys: alice, bob")

	// forward_client_headers: the provider-key rules, plus inject mode's credential slots.
	f("  - {name: r, path: /a, "+up+", forward_client_headers: [\"x-*-*\"]}\n", at+"forward_client_headers[0]: at most one '*' wildcard is allowed")
	f("  - {name: r, path: /a, "+up+", forward_client_headers: [\"bad header\"]}\n", at+"forward_client_headers[0]: invalid header name")
	f("  - {name: r, path: /a, "+up+", forward_client_headers: [Content-Length]}\n", at+`forward_client_headers[0]: header "content-length" is never relayed upstream; remove it`)
	f("  - {name: r, path: /a, provider_key: oa, forward_client_headers: [x-a, Authorization]}\n", at+`forward_client_headers[1]: inject mode always strips "authorization" (the provider key's credential replaces it); remove it`)
	miscOK(t, routeFile("  - {name: r, path: /a, "+up+", forward_client_headers: [authorization]}\n"))

	f("  - {name: \"r*\", path: /a, "+up+"}\n", `passthrough_routes[0] (name=r*): name: must not contain '*' (it would read as a glob in allowed_agents and allowed_routes)`)
}

func TestPassthroughRoutePathsUnique(t *testing.T) {
	miscErrLine(t, routeFile("  - {name: a, path: /x, upstream: https://x.example}\n  - {display_name: b, path: /x/, upstream: https://y.example}\n"),
		"passthrough_routes[1] (display_name=b): path: same path as passthrough_routes[0] (name=a); paths must be unique")
	// Nested prefixes are distinct routes (longest prefix wins at runtime).
	miscOK(t, routeFile("  - {name: a, path: /x, upstream: https://x.example}\n  - {name: b, path: /x/y, upstream: https://y.example}\n"))
}

func TestPassthroughRouteNameReferences(t *testing.T) {
	// api_keys.allowed_routes resolves against route names.
	src := strings.Replace(routeFile("  - {display_name: files, path: /files, upstream: https://x.example}\n"),
		"    key_env: CALLER_B\n", "    key_env: CALLER_B\n    allowed_routes: [files]\n", 1)
	miscOK(t, src)
}
