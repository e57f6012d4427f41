package resources

// passthrough_routes: relay matching HTTP traffic to a provider endpoint
// under gateway audit and policy. Reference: docs/CONFIG.md.

import (
	"net/url"
	"strconv"
	"strings"
)

// PassthroughMethods are the accepted methods, also the default set.
var PassthroughMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}

// ReservedPathPrefixes are gw's own endpoints. A route path may neither lie
// under one nor cover one. An entry ending in '/' reserves everything below
// it; the others reserve the path itself and everything below it.
var ReservedPathPrefixes = []string{"/v1/", "/mcp", "/a2a", "/status", "/livez", "/readyz", "/metrics", "/debug"}

// PassthroughRoute is one passthrough_routes entry.
type PassthroughRoute struct {
	Index   int
	ID      string
	Name    string
	IDField string // "name" or "display_name", as written

	// Path is the route prefix, canonical (no trailing '/'). A request
	// matches when its path equals Path or continues with '/'.
	Path string
	// Upstream is the base URL requests go to: the route's upstream, else the
	// provider key's api_base (UpstreamFromKey). Resolved at load.
	Upstream        string
	UpstreamFromKey bool
	Methods         []string // uppercase, subset of PassthroughMethods; default all
	StripPrefix     bool     // default true: Path is removed before appending to Upstream
	TimeoutMS       int64    // 0: the deployment upstream.timeout_ms

	// Inject mode: the provider key's credential replaces the caller's.
	ProviderKeyName string // as written or resolved from provider_key_id
	ProviderKey     *ProviderKey
	// Anonymous principal: requests without a caller credential run as this key.
	AnonymousKeyName string // as written or resolved from anonymous_key_id
	AnonymousKey     *APIKey
	// ForwardClientHeaders, when ForwardClientHeadersSet, is the exact list of
	// inbound headers relayed (lowercase, one '*' at most) and replaces the
	// provider key's strip_headers.
	ForwardClientHeaders    []string
	ForwardClientHeadersSet bool

	providerKeyID  string
	anonymousKeyID string
	keyWritten     bool // provider_key or provider_key_id written, valid or not
}

// Inject reports inject mode (a provider key is set).
func (r *PassthroughRoute) Inject() bool { return r.ProviderKey != nil }

// MatchPath reports whether request path p falls under the route and returns
// the remainder to append to Upstream (p itself when StripPrefix is false).
func (r *PassthroughRoute) MatchPath(p string) (rest string, ok bool) {
	switch {
	case r.Path == "/":
		ok = strings.HasPrefix(p, "/")
	case p == r.Path:
		ok = true
	default:
		ok = strings.HasPrefix(p, r.Path) && p[len(r.Path)] == '/'
	}
	if !ok {
		return "", false
	}
	if !r.StripPrefix || r.Path == "/" {
		return p, true
	}
	return p[len(r.Path):], true
}

// AllowsMethod reports whether method m (uppercase) is routed.
func (r *PassthroughRoute) AllowsMethod(m string) bool { return containsString(r.Methods, m) }

// canonicalRoutePath validates a route path and returns it without a
// trailing '/'. The message never echoes the path.
func canonicalRoutePath(p string) (string, string) {
	if !strings.HasPrefix(p, "/") {
		return "", "must start with '/'"
	}
	if strings.ContainsAny(p, "?#* \t\r\n%") {
		return "", "must be a plain path prefix without query, fragment, '*', '%' or spaces"
	}
	if p != "/" {
		p = strings.TrimSuffix(p, "/")
	}
	for _, seg := range strings.Split(p[1:], "/") {
		switch seg {
		case "":
			if p != "/" {
				return "", "must not contain empty segments (\"//\")"
			}
		case ".", "..":
			return "", "must not contain \".\" or \"..\" segments"
		}
	}
	for _, r := range ReservedPathPrefixes {
		if under(p, r) {
			return "", "falls under gw's own endpoint \"" + r + "\"; choose another prefix"
		}
		if under(r, p) {
			return "", "would cover gw's own endpoint \"" + r + "\"; choose a longer prefix"
		}
	}
	return p, ""
}

// under reports whether path p equals or lies below prefix r at a segment
// boundary; an r ending in '/' covers everything below it and itself without
// the slash.
func under(p, r string) bool {
	if r == "/" {
		return true
	}
	r = strings.TrimSuffix(r, "/")
	return p == r || strings.HasPrefix(p, r+"/")
}

func (l *loader) decodePassthroughRoute(e *entry, o *obj) {
	r := &PassthroughRoute{Index: e.idx, StripPrefix: true}
	r.Name, r.IDField = decodeEitherName(e, o)
	r.ID = DeriveID(KindPassthroughRoute, r.Name)
	checkEntryName(o, r.IDField, r.Name)

	if p := o.reqStr("path"); p != "" {
		cp, msg := canonicalRoutePath(p)
		if msg != "" {
			o.errf("path", msg)
		}
		r.Path = cp
	}
	if u, ok := o.str("upstream"); ok {
		if msg := checkBaseURL(u); msg != "" {
			o.errf("upstream", msg)
		} else if pu, _ := url.Parse(u); pu.RawQuery != "" || pu.ForceQuery {
			o.errf("upstream", "must not have a query (the caller's query string is forwarded)")
		}
		r.Upstream = u
	}
	if o.has("methods") {
		if o.requireSeq("methods", "method (omit the field to route every method)", false) {
			for i, m := range o.nonEmptyStrings("methods") {
				m = strings.ToUpper(strings.TrimSpace(m))
				switch {
				case !containsString(PassthroughMethods, m):
					o.d.errAt(e, indexPath("methods", i), "unknown method; allowed: "+strings.Join(PassthroughMethods, ", "))
				case !containsString(r.Methods, m):
					r.Methods = append(r.Methods, m)
				}
			}
		}
	} else {
		o.raw("methods")
		r.Methods = PassthroughMethods
	}
	r.StripPrefix = o.boolDefault("strip_prefix", true)
	r.TimeoutMS, _ = o.intMin("timeout_ms", 1)

	r.keyWritten = o.has("provider_key") || o.has("provider_key_id")
	switch field, v := o.pickOne("provider_key", "provider_key_id", false); field {
	case "provider_key":
		r.ProviderKeyName = v
	case "provider_key_id":
		r.providerKeyID = v
	}
	switch field, v := o.pickOne("anonymous_key", "anonymous_key_id", false); field {
	case "anonymous_key":
		r.AnonymousKeyName = v
	case "anonymous_key_id":
		r.anonymousKeyID = v
	}
	r.ForwardClientHeaders, r.ForwardClientHeadersSet = o.decodeForwardHeaders("forward_client_headers")
	if r.ProviderKeyName != "" || r.providerKeyID != "" {
		for i, h := range r.ForwardClientHeaders {
			if h == "authorization" || h == "x-api-key" {
				o.d.errAt(e, indexPath("forward_client_headers", i), "inject mode always strips \""+h+"\" (the provider key's credential replaces it); remove it")
			}
		}
	}
	l.res.PassthroughRoutes = append(l.res.PassthroughRoutes, r)
}

// checkRoutePaths: paths are unique across routes; the error names both entries.
func (l *loader) checkRoutePaths() {
	first := map[string]*PassthroughRoute{}
	for _, r := range l.res.PassthroughRoutes {
		if r.Path == "" {
			continue
		}
		if prev, dup := first[r.Path]; dup {
			l.d.errAt(entryOf(CollPassthroughRoutes, r.Index, r.IDField, r.Name), "path",
				"same path as passthrough_routes["+strconv.Itoa(prev.Index)+"] ("+prev.IDField+"="+prev.Name+"); paths must be unique")
			continue
		}
		first[r.Path] = r
	}
}

func (l *loader) resolvePassthroughRoutes(pks providerKeyIndex, keys *apiKeyIndex) {
	for _, r := range l.res.PassthroughRoutes {
		e := entryOf(CollPassthroughRoutes, r.Index, r.IDField, r.Name)
		r.ProviderKey = pks.resolve(l, e, "", r.ProviderKeyName, r.providerKeyID)
		if r.ProviderKey != nil {
			r.ProviderKeyName = r.ProviderKey.DisplayName
		}
		r.AnonymousKey = keys.resolve(l, e, "anonymous_key", r.AnonymousKeyName, "anonymous_key_id", r.anonymousKeyID)
		if r.AnonymousKey != nil {
			r.AnonymousKeyName = r.AnonymousKey.DisplayName
		}
		if r.Upstream == "" {
			switch {
			case r.ProviderKey != nil && r.ProviderKey.APIBase != "":
				r.Upstream, r.UpstreamFromKey = r.ProviderKey.APIBase, true
			case !r.keyWritten:
				l.d.errAt(e, "upstream", "required (the route has no provider key whose api_base could serve as upstream)")
			case r.ProviderKey != nil:
				l.d.errAt(e, "upstream", "required: provider key \""+r.ProviderKey.DisplayName+"\" has no api_base to serve as upstream")
			}
		}
	}
}
