package resources

// Caller authentication collections: oidc_providers, mcp_auth_settings and
// claim_mappings. Reference: docs/CONFIG.md.

import (
	"crypto/sha256"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// OIDCProvider is one oidc_providers entry: a trusted JWT issuer.
type OIDCProvider struct {
	Index int
	ID    string
	Name  string

	// Issuer is compared exactly with the token's iss. Empty only on
	// shared-secret providers, which then do not check iss.
	Issuer string
	// Audiences are the accepted aud values. Empty only on shared-secret
	// providers, which then skip the audience check.
	Audiences []string
	// JWKSURI is the signing-key endpoint; empty on JWKS providers means
	// DiscoveryURL is used. Always empty on shared-secret providers.
	JWKSURI string
	// HMACSecret selects HS256/HS384/HS512 verification with its UTF-8 bytes
	// as the key, unchanged. Unset: JWKS verification.
	HMACSecret Secret

	IdentityClaim     string   // default "sub"
	IdentityClaimPath []string // IdentityClaim split on '.'
	RequiredScopes    []string
	BoundClaims       []BoundClaim // file order
	LeewaySecs        int64
	Enabled           bool

	// ClaimMappings are this provider's enabled claim_mappings, sorted by
	// priority ascending, then name. Set at load; consulted when no caller key
	// binds the token subject directly.
	ClaimMappings []*ClaimMapping
}

// DefaultIdentityClaim is identity_claim when unset.
const DefaultIdentityClaim = "sub"

// MinHMACSecretBytes is the shortest accepted hmac_secret.
const MinHMACSecretBytes = 32

// UsesHMAC reports a shared-secret provider.
func (p *OIDCProvider) UsesHMAC() bool { return p.HMACSecret.IsSet() }

// Leeway is the clock-skew tolerance for exp and nbf.
func (p *OIDCProvider) Leeway() time.Duration { return time.Duration(p.LeewaySecs) * time.Second }

// DiscoveryURL is where a JWKS provider without jwks_uri finds its key
// endpoint; "" when jwks_uri is set or the provider uses a shared secret.
func (p *OIDCProvider) DiscoveryURL() string {
	if p.UsesHMAC() || p.JWKSURI != "" {
		return ""
	}
	return strings.TrimSuffix(p.Issuer, "/") + "/.well-known/openid-configuration"
}

// BoundClaim is one bound_claims entry: the claim at Path must hold one of Values.
type BoundClaim struct {
	Claim  string // as written, dotted
	Path   []string
	Values []string
}

// Holds reports whether claim value v satisfies the bound claim: a string
// must equal an accepted value, an array must contain one (non-string
// elements are ignored). Any other type fails.
func (b BoundClaim) Holds(v any) bool {
	switch x := v.(type) {
	case string:
		return containsString(b.Values, x)
	case []any:
		for _, el := range x {
			if s, ok := el.(string); ok && containsString(b.Values, s) {
				return true
			}
		}
	case []string:
		for _, s := range x {
			if containsString(b.Values, s) {
				return true
			}
		}
	}
	return false
}

// LookupClaim follows path through nested claim objects.
func LookupClaim(claims map[string]any, path []string) (any, bool) {
	var cur any = claims
	for _, seg := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[seg]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// credentialQueryParams are query parameter names that carry credentials.
// Names are compared lowercased with '-' read as '_'. issuer and jwks_uri
// must not carry them (the URLs are logged and fetched without care for
// secrecy). client_id is an identifier, not a secret, and is allowed.
var credentialQueryParams = map[string]bool{
	"access_token": true, "id_token": true, "refresh_token": true, "token": true,
	"client_secret": true, "api_key": true, "apikey": true, "key": true,
	"secret": true, "password": true, "passwd": true, "pwd": true,
	"code": true, "sig": true, "signature": true, "auth": true, "authorization": true,
	"x_amz_signature": true, "x_amz_credential": true, "x_amz_security_token": true,
	"x_goog_signature": true, "x_goog_credential": true,
}

// CredentialQueryParams lists the names rejected in OIDC URLs, sorted (for docs).
func CredentialQueryParams() []string { return sortedKeys(credentialQueryParams) }

// credentialParams returns the credential-like query parameter names in raw,
// in order, each once, as written. Values are never looked at.
func credentialParams(raw string) []string {
	q := raw
	if i := strings.IndexByte(q, '#'); i >= 0 {
		q = q[:i]
	}
	i := strings.IndexByte(q, '?')
	if i < 0 {
		return nil
	}
	var out []string
	for _, part := range strings.Split(q[i+1:], "&") {
		name, _, _ := strings.Cut(part, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		norm := strings.ReplaceAll(strings.ToLower(name), "-", "_")
		if credentialQueryParams[norm] && !containsString(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// checkOIDCURL reports credential-like query parameters and, when isURL,
// anything checkBaseURL rejects. It warns about plain http to a non-loopback
// host (signing keys could be swapped in transit).
func checkOIDCURL(o *obj, field, s string, isURL bool) {
	for _, p := range credentialParams(s) {
		o.errf(field, "query parameter \""+p+"\" looks like a credential; credentials must not appear in "+field)
	}
	if !isURL {
		return
	}
	if msg := checkBaseURL(s); msg != "" {
		o.errf(field, msg)
		return
	}
	if u, _ := url.Parse(s); u != nil && u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
		o.warnf(field, "plain http to a non-loopback host; signing keys fetched over it can be tampered with, use https")
	}
}

func (l *loader) decodeOIDCProvider(e *entry, o *obj) {
	p := &OIDCProvider{Index: e.idx, IdentityClaim: DefaultIdentityClaim, Enabled: true}
	p.Name = o.reqStr("name")
	e.setID("name", p.Name)
	p.ID = DeriveID(KindOIDCProvider, p.Name)

	hmac := o.has("hmac_secret")
	if s, refs, ok := o.strRefs("hmac_secret"); ok {
		// The UTF-8 bytes are the key, unchanged: len counts bytes.
		if len(s) < MinHMACSecretBytes {
			o.errf("hmac_secret", "must be at least 32 bytes")
		}
		if refs == 0 {
			o.warnf("hmac_secret", literalCredWarn)
		}
		p.HMACSecret = NewSecret(s)
	}
	if hmac {
		o.rejectSet("jwks_uri", "cannot be set with hmac_secret (shared-secret providers fetch no signing keys)")
	} else if s, ok := o.str("jwks_uri"); ok {
		p.JWKSURI = s
		checkOIDCURL(o, "jwks_uri", s, true)
	}

	switch {
	case o.has("issuer"):
		p.Issuer = o.reqStr("issuer")
		// Without jwks_uri a JWKS provider discovers keys under the issuer,
		// so it must be a URL; otherwise iss is an opaque string.
		checkOIDCURL(o, "issuer", p.Issuer, !hmac && p.JWKSURI == "" && p.Issuer != "")
	case !hmac:
		o.raw("issuer")
		o.errf("issuer", "required without hmac_secret (JWKS verification compares it with the token's iss)")
	default:
		o.raw("issuer")
	}

	if o.has("audiences") {
		if n := o.raw("audiences"); n.Kind == yaml.SequenceNode && len(n.Content) == 0 && !hmac {
			o.errf("audiences", "must hold at least one audience without hmac_secret")
		}
		p.Audiences = o.nonEmptyStrings("audiences")
	} else {
		o.raw("audiences")
		if !hmac {
			o.errf("audiences", "required without hmac_secret; list the accepted aud values")
		}
	}

	if s, ok := o.str("identity_claim"); ok {
		if msg := checkClaimPath(s); msg != "" {
			o.errf("identity_claim", msg)
		}
		p.IdentityClaim = s
	}
	p.IdentityClaimPath = strings.Split(p.IdentityClaim, ".")

	scopes, _ := o.strList("required_scopes")
	for i, s := range scopes {
		switch {
		case s == "":
			o.d.errAt(e, indexPath("required_scopes", i), "must not be empty")
		case strings.ContainsAny(s, " \t\r\n"):
			o.d.errAt(e, indexPath("required_scopes", i), "must be a single scope token (no spaces)")
		default:
			p.RequiredScopes = append(p.RequiredScopes, s)
		}
	}
	if bc := o.sub("bound_claims"); bc != nil {
		p.BoundClaims = decodeBoundClaims(bc)
	}
	p.LeewaySecs, _ = o.intRange("leeway_secs", 0, 300)
	p.Enabled = o.boolDefault("enabled", true)
	l.res.OIDCProviders = append(l.res.OIDCProviders, p)
}

// decodeBoundClaims reads bound_claims: dotted claim names mapped to a
// string or a non-empty list of strings.
func decodeBoundClaims(m *obj) []BoundClaim {
	out := make([]BoundClaim, 0, len(m.keys))
	for i, k := range m.keys {
		m.used[i] = true
		path := joinPath(m.path, k.Value)
		if k.ShortTag() == "!!merge" {
			m.d.errAt(m.e, joinPath(m.path, "<<"), "unknown field (YAML merge keys are not expanded)")
			continue
		}
		if msg := checkClaimPath(k.Value); msg != "" {
			m.d.errAt(m.e, path, msg)
			continue
		}
		b := BoundClaim{Claim: k.Value, Path: strings.Split(k.Value, ".")}
		v := resolve(m.vals[i])
		switch {
		case isNull(v):
			m.d.errAt(m.e, path, "must be a string or a non-empty list of strings")
			continue
		case v.ShortTag() == "!!seq":
			if len(v.Content) == 0 {
				m.d.errAt(m.e, path, "must be a string or a non-empty list of strings")
				continue
			}
			good := true
			for j, el := range v.Content {
				s, _, ok := m.d.scalarString(m.e, indexPath(path, j), resolve(el))
				good = good && ok
				b.Values = append(b.Values, s)
			}
			if !good {
				continue
			}
		default:
			s, _, ok := m.d.scalarString(m.e, path, v)
			if !ok {
				continue
			}
			b.Values = []string{s}
		}
		out = append(out, b)
	}
	return out
}

// checkOIDCUniqueness: issuers are unique among enabled providers, and
// issuer-less shared-secret providers have distinct secrets. Both errors name
// the two entries; the secret itself never appears.
func (l *loader) checkOIDCUniqueness() {
	type owner struct {
		idx  int
		name string
	}
	issuers := map[string]owner{}
	secrets := map[[32]byte]owner{}
	for _, p := range l.res.OIDCProviders {
		e := entryOf(CollOIDCProviders, p.Index, "name", p.Name)
		if p.Issuer != "" && p.Enabled {
			if prev, dup := issuers[p.Issuer]; dup {
				l.d.errAt(e, "issuer", "same issuer as oidc_providers["+strconv.Itoa(prev.idx)+"] (name="+prev.name+"); issuer must be unique among enabled providers")
			} else {
				issuers[p.Issuer] = owner{p.Index, p.Name}
			}
		}
		if p.Issuer == "" && p.UsesHMAC() {
			h := sha256.Sum256([]byte(p.HMACSecret.Reveal()))
			if prev, dup := secrets[h]; dup {
				l.d.errAt(e, "hmac_secret", "same secret as oidc_providers["+strconv.Itoa(prev.idx)+"] (name="+prev.name+"); shared-secret providers without issuer must each have a distinct secret")
			} else {
				secrets[h] = owner{p.Index, p.Name}
			}
		}
	}
}

// OIDCVerifiers is the JWT verifier lookup: which providers may verify a
// token, in the order to try them. Build it once per snapshot with
// Resources.OIDCVerifiers; For allocates nothing.
type OIDCVerifiers struct {
	byIssuer   map[string][]*OIDCProvider // enabled providers with an issuer; one element each
	disabled   map[string]bool            // issuers held only by disabled providers
	issuerless []*OIDCProvider            // enabled issuer-less shared-secret providers, name order
}

// OIDCVerifiers precomputes the verification order of the spec: a token
// whose iss equals a provider's issuer is verified only by that provider;
// otherwise the enabled issuer-less shared-secret providers are tried in name
// order. A token whose iss belongs only to a disabled provider is verified by
// no provider (it is rejected, never handed to the issuer-less ones).
func (r *Resources) OIDCVerifiers() *OIDCVerifiers {
	v := &OIDCVerifiers{byIssuer: map[string][]*OIDCProvider{}, disabled: map[string]bool{}}
	for _, p := range r.OIDCProviders {
		switch {
		case p.Issuer != "" && p.Enabled:
			v.byIssuer[p.Issuer] = []*OIDCProvider{p}
		case p.Issuer != "":
			v.disabled[p.Issuer] = true
		case p.Enabled && p.UsesHMAC():
			v.issuerless = append(v.issuerless, p)
		}
	}
	for iss := range v.byIssuer {
		delete(v.disabled, iss)
	}
	sort.SliceStable(v.issuerless, func(i, j int) bool { return v.issuerless[i].Name < v.issuerless[j].Name })
	return v
}

// For returns the providers that may verify a token with claim iss ("" when
// the token has no string iss), in order. The slice must not be modified.
func (v *OIDCVerifiers) For(iss string) []*OIDCProvider {
	if iss != "" {
		if ps, ok := v.byIssuer[iss]; ok {
			return ps
		}
		if v.disabled[iss] {
			return nil
		}
	}
	return v.issuerless
}

// MCPAuthSettingsIdentity is the identity of the mcp_auth_settings
// singleton in its derived ID: DeriveID(KindMCPAuthSettings, "default").
const MCPAuthSettingsIdentity = "default"

// MCPAuthSettings is the mcp_auth_settings singleton.
type MCPAuthSettings struct {
	Index int
	ID    string
	Name  string // always MCPAuthSettingsIdentity

	// ResourceURL is the canonical public URL of /mcp, published as written.
	ResourceURL string
	Anonymous   *MCPAnonymous // nil: every MCP request needs credentials
}

// MCPAnonymous is the mcp_auth_settings.anonymous block.
type MCPAnonymous struct {
	Enabled        bool
	APIKeyID       string  // as written
	APIKey         *APIKey // resolved at load
	SourceCIDRs    []netip.Prefix
	Servers        []string     // MCP server names as written
	ServerRefs     []*MCPServer // resolved, same order
	AggregateEntry bool
}

// AllowsSource reports whether a client address may use anonymous access.
func (a *MCPAnonymous) AllowsSource(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range a.SourceCIDRs {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// checkResourceURL: absolute http(s), path exactly /mcp, no query or fragment.
// The message never echoes the URL (user-info may hold credentials).
func checkResourceURL(s string) string {
	if msg := checkBaseURL(s); msg != "" {
		return msg
	}
	u, _ := url.Parse(s)
	switch {
	case u.EscapedPath() != "/mcp":
		return "path must be exactly /mcp"
	case u.RawQuery != "" || u.ForceQuery:
		return "must not have a query"
	case strings.IndexByte(s, '#') >= 0:
		return "must not have a fragment"
	}
	return ""
}

func (l *loader) decodeMCPAuthSettings(e *entry, o *obj) {
	s := &MCPAuthSettings{Index: e.idx, Name: MCPAuthSettingsIdentity, ID: DeriveID(KindMCPAuthSettings, MCPAuthSettingsIdentity)}
	if prev := l.res.MCPAuthSettings; prev != nil {
		l.d.errAt(e, "", "at most one entry is allowed; mcp_auth_settings["+strconv.Itoa(prev.Index)+"] already holds the settings (the collection is a singleton)")
	}
	if u, ok := o.str("resource_url"); ok {
		if msg := checkResourceURL(u); msg != "" {
			o.errf("resource_url", msg)
		}
		s.ResourceURL = u
	}
	if a := o.sub("anonymous"); a != nil {
		an := &MCPAnonymous{}
		an.Enabled = a.boolDefault("enabled", true)
		an.APIKeyID = a.reqStr("api_key_id")
		if a.requireSeq("source_cidrs", "CIDR", true) {
			an.SourceCIDRs = decodeCIDRs(a, "source_cidrs")
		}
		if a.requireSeq("servers", "MCP server name", true) {
			an.Servers = a.nonEmptyStrings("servers")
		}
		an.AggregateEntry = a.boolDefault("aggregate_entry", false)
		a.finish()
		s.Anonymous = an
	}
	if l.res.MCPAuthSettings == nil {
		l.res.MCPAuthSettings = s
	}
}

func (l *loader) resolveMCPAuthSettings(keys *apiKeyIndex) {
	s := l.res.MCPAuthSettings
	if s == nil {
		return
	}
	e := entryOf(CollMCPAuthSettings, s.Index, "", "")
	if s.ResourceURL != "" {
		listed := false
		for _, p := range l.res.OIDCProviders {
			if p.Enabled && containsString(p.Audiences, s.ResourceURL) {
				listed = true
				break
			}
		}
		if !listed {
			l.d.warnAt(e, "resource_url", "no enabled oidc_providers entry lists this URL in audiences; OAuth access tokens for /mcp will be rejected")
		}
	}
	a := s.Anonymous
	if a == nil {
		return
	}
	a.APIKey = keys.resolve(l, e, "", "", "anonymous.api_key_id", a.APIKeyID)
	if k := a.APIKey; k != nil {
		if k.MCPAccess == nil {
			l.d.warnAt(e, "anonymous.api_key_id", "api key \""+k.DisplayName+"\" has no mcp_access block, so anonymous callers can reach no tool")
		}
		if k.Disabled {
			l.d.warnAt(e, "anonymous.api_key_id", "api key \""+k.DisplayName+"\" is disabled, so anonymous requests are rejected")
		}
	}
	byName := make(map[string]*MCPServer, len(l.res.MCPServers))
	for _, srv := range l.res.MCPServers {
		byName[srv.Name] = srv
	}
	for i, name := range a.Servers {
		srv := byName[name]
		if srv == nil {
			l.d.errAt(e, "anonymous.servers["+strconv.Itoa(i)+"]", "unknown MCP server \""+name+"\"; available: "+
				quoteList(knownNames(l.res.MCPServers, func(s *MCPServer) string { return s.Name })))
			continue
		}
		a.ServerRefs = append(a.ServerRefs, srv)
	}
}

// Claim mapping condition operators.
const (
	ClaimOpExact    = "exact"    // the claim is a string equal to one of Values
	ClaimOpContains = "contains" // the claim is an array holding one of Values
)

// ClaimMapping is one claim_mappings entry: verified JWT claims to a caller key.
type ClaimMapping struct {
	Index int
	ID    string
	Name  string

	JWTProvider string        // provider name as written
	Provider    *OIDCProvider // resolved at load
	Priority    int64         // lower first; ties by Name
	Match       []ClaimCondition
	// APIKeyName is the caller key's display name: resolve.api_key as written
	// or resolved from resolve.api_key_id (exports write it back as api_key).
	APIKeyName string
	APIKey     *APIKey
	Enabled    bool

	apiKeyID string
}

// ClaimCondition is one match condition.
type ClaimCondition struct {
	Claim  string // as written, dotted
	Path   []string
	Op     string // ClaimOpExact or ClaimOpContains
	Values []string
}

// Holds reports whether claim value v satisfies the condition. exact needs a
// string; contains needs an array (non-string elements ignored).
func (c ClaimCondition) Holds(v any) bool {
	switch c.Op {
	case ClaimOpExact:
		s, ok := v.(string)
		return ok && containsString(c.Values, s)
	case ClaimOpContains:
		switch x := v.(type) {
		case []any:
			for _, el := range x {
				if s, ok := el.(string); ok && containsString(c.Values, s) {
					return true
				}
			}
		case []string:
			for _, s := range x {
				if containsString(c.Values, s) {
					return true
				}
			}
		}
	}
	return false
}

// Matches reports whether every condition holds for claims.
func (m *ClaimMapping) Matches(claims map[string]any) bool {
	for _, c := range m.Match {
		v, ok := LookupClaim(claims, c.Path)
		if !ok || !c.Holds(v) {
			return false
		}
	}
	return true
}

func (l *loader) decodeClaimMapping(e *entry, o *obj) {
	m := &ClaimMapping{Index: e.idx}
	m.Name = o.reqStr("name")
	e.setID("name", m.Name)
	m.ID = DeriveID(KindClaimMapping, m.Name)
	m.JWTProvider = o.reqStr("jwt_provider")
	m.Priority, _ = o.int("priority")
	if o.requireSeq("match", "condition", true) {
		conds, _ := o.objs("match")
		for _, c := range conds {
			if c == nil {
				continue
			}
			cc := ClaimCondition{Claim: c.reqStr("claim")}
			if cc.Claim != "" {
				if msg := checkClaimPath(cc.Claim); msg != "" {
					c.errf("claim", msg)
				}
				cc.Path = strings.Split(cc.Claim, ".")
			}
			if !c.has("op") {
				c.raw("op")
				c.errf("op", "required (exact or contains)")
			}
			cc.Op, _ = c.enum("op", ClaimOpExact, ClaimOpContains)
			if c.requireSeq("values", "value", true) {
				cc.Values = c.nonEmptyStrings("values")
			}
			c.finish()
			m.Match = append(m.Match, cc)
		}
	}
	if r := o.sub("resolve"); r != nil {
		switch field, v := r.pickOne("api_key", "api_key_id", true); field {
		case "api_key":
			m.APIKeyName = v
		case "api_key_id":
			m.apiKeyID = v
		}
		r.finish()
	} else if !o.has("resolve") {
		o.errf("resolve", "required (resolve.api_key or resolve.api_key_id)")
	}
	m.Enabled = o.boolDefault("enabled", true)
	l.res.ClaimMappings = append(l.res.ClaimMappings, m)
}

// resolveClaimMappings resolves providers and caller keys, then attaches each
// provider's enabled mappings in evaluation order.
func (l *loader) resolveClaimMappings(keys *apiKeyIndex) {
	byName := make(map[string]*OIDCProvider, len(l.res.OIDCProviders))
	for _, p := range l.res.OIDCProviders {
		byName[p.Name] = p
	}
	for _, m := range l.res.ClaimMappings {
		e := entryOf(CollClaimMappings, m.Index, "name", m.Name)
		if m.Provider = byName[m.JWTProvider]; m.Provider == nil && m.JWTProvider != "" {
			l.d.errAt(e, "jwt_provider", "unknown OIDC provider \""+m.JWTProvider+"\"; available: "+
				quoteList(knownNames(l.res.OIDCProviders, func(p *OIDCProvider) string { return p.Name })))
		}
		m.APIKey = keys.resolve(l, e, "resolve.api_key", m.APIKeyName, "resolve.api_key_id", m.apiKeyID)
		if m.APIKey != nil {
			m.APIKeyName = m.APIKey.DisplayName
		}
		if m.Provider != nil && m.Enabled {
			m.Provider.ClaimMappings = append(m.Provider.ClaimMappings, m)
		}
	}
	for _, p := range l.res.OIDCProviders {
		sort.SliceStable(p.ClaimMappings, func(i, j int) bool {
			a, b := p.ClaimMappings[i], p.ClaimMappings[j]
			if a.Priority != b.Priority {
				return a.Priority < b.Priority
			}
			return a.Name < b.Name
		})
	}
}
