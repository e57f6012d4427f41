package resources

// Stage hooks and shared readers of the nine collections decoded in auth.go,
// mcp.go, passthrough.go, cache_policies.go, exporters.go and
// rate_limit_policies.go. The reference for all of them is
// docs/CONFIG.md.

import (
	"net/netip"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// checkMiscIdentities enforces non-empty, unique identities (emptiness was
// reported while decoding) plus the other uniqueness rules of these
// collections that do not need name references.
func (l *loader) checkMiscIdentities() {
	r := l.res
	byName := func(n int, f func(i int) (int, string)) []identityRef {
		out := make([]identityRef, n)
		for i := range out {
			out[i].idx, out[i].id = f(i)
		}
		return out
	}
	either := func(n int, f func(i int) namedRef) []namedRef {
		out := make([]namedRef, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	l.checkUnique(CollOIDCProviders, "name", byName(len(r.OIDCProviders), func(i int) (int, string) {
		return r.OIDCProviders[i].Index, r.OIDCProviders[i].Name
	}))
	l.checkUnique(CollClaimMappings, "name", byName(len(r.ClaimMappings), func(i int) (int, string) {
		return r.ClaimMappings[i].Index, r.ClaimMappings[i].Name
	}))
	l.checkUniqueNamed(CollMCPServers, either(len(r.MCPServers), func(i int) namedRef {
		s := r.MCPServers[i]
		return namedRef{s.Index, s.IDField, s.Name}
	}))
	l.checkUniqueNamed(CollA2AAgents, either(len(r.A2AAgents), func(i int) namedRef {
		a := r.A2AAgents[i]
		return namedRef{a.Index, a.IDField, a.Name}
	}))
	l.checkUniqueNamed(CollPassthroughRoutes, either(len(r.PassthroughRoutes), func(i int) namedRef {
		p := r.PassthroughRoutes[i]
		return namedRef{p.Index, p.IDField, p.Name}
	}))
	l.checkUnique(CollCachePolicies, "name", byName(len(r.CachePolicies), func(i int) (int, string) {
		return r.CachePolicies[i].Index, r.CachePolicies[i].Name
	}))
	l.checkUnique(CollObservabilityExporters, "name", byName(len(r.ObservabilityExporters), func(i int) (int, string) {
		return r.ObservabilityExporters[i].Index, r.ObservabilityExporters[i].Name
	}))
	l.checkUnique(CollRateLimitPolicies, "name", byName(len(r.RateLimitPolicies), func(i int) (int, string) {
		return r.RateLimitPolicies[i].Index, r.RateLimitPolicies[i].Name
	}))
	l.checkRoutePaths()
	l.checkOIDCUniqueness()
}

// resolveMiscRefs resolves every name reference of these collections and runs
// their cross-reference checks. The order matters only for precomputation:
// claim mappings are attached to their providers after both resolved.
func (l *loader) resolveMiscRefs(mi *modelIndex, pkByName, pkByID map[string]*ProviderKey, pkNames []string) {
	keys := l.apiKeyIndex()
	pks := providerKeyIndex{byName: pkByName, byID: pkByID, names: dropEmpty(pkNames)}
	l.resolveMCPServers(pks)
	l.resolvePassthroughRoutes(pks, keys)
	l.resolveMCPAuthSettings(keys)
	l.resolveClaimMappings(keys)
	l.resolveCachePolicies(mi)
	l.resolveRateLimitPolicies(mi, keys)
}

// miscIDs lists the derived IDs of these collections in spec order.
func (l *loader) miscIDs() []EntryID {
	r := l.res
	var out []EntryID
	for _, p := range r.OIDCProviders {
		out = append(out, EntryID{CollOIDCProviders, p.Name, p.ID})
	}
	if s := r.MCPAuthSettings; s != nil {
		out = append(out, EntryID{CollMCPAuthSettings, s.Name, s.ID})
	}
	for _, m := range r.ClaimMappings {
		out = append(out, EntryID{CollClaimMappings, m.Name, m.ID})
	}
	for _, s := range r.MCPServers {
		out = append(out, EntryID{CollMCPServers, s.Name, s.ID})
	}
	for _, a := range r.A2AAgents {
		out = append(out, EntryID{CollA2AAgents, a.Name, a.ID})
	}
	for _, p := range r.PassthroughRoutes {
		out = append(out, EntryID{CollPassthroughRoutes, p.Name, p.ID})
	}
	for _, c := range r.CachePolicies {
		out = append(out, EntryID{CollCachePolicies, c.Name, c.ID})
	}
	for _, x := range r.ObservabilityExporters {
		out = append(out, EntryID{CollObservabilityExporters, x.Name, x.ID})
	}
	for _, p := range r.RateLimitPolicies {
		out = append(out, EntryID{CollRateLimitPolicies, p.Name, p.ID})
	}
	return out
}

// namedRef is an identity whose field name may differ per entry
// (name or display_name).
type namedRef struct {
	idx   int
	field string
	id    string
}

// checkUniqueNamed is checkUnique for collections whose entries choose their
// identity field (name or display_name share one namespace: the derived ID
// depends on the value only); the message format is the same.
func (l *loader) checkUniqueNamed(coll string, refs []namedRef) {
	first := make(map[string]int, len(refs))
	for _, r := range refs {
		if r.id == "" {
			continue // already reported as missing
		}
		if prev, dup := first[r.id]; dup {
			l.d.errAt(entryOf(coll, r.idx, r.field, r.id), r.field,
				"duplicate identity; also used by "+coll+"["+strconv.Itoa(prev)+"]")
			continue
		}
		first[r.id] = r.idx
	}
}

// apiKeyIndex is the caller-key lookup of every api_keys reference here.
type apiKeyIndex struct {
	byName map[string]*APIKey
	byID   map[string]*APIKey
	names  []string // sorted display names, for hints
}

func (l *loader) apiKeyIndex() *apiKeyIndex {
	ks := l.res.APIKeys
	x := &apiKeyIndex{byName: make(map[string]*APIKey, len(ks)), byID: make(map[string]*APIKey, len(ks))}
	for _, k := range ks {
		x.byName[k.DisplayName] = k
		x.byID[k.ID] = k
	}
	x.names = knownNames(ks, func(k *APIKey) string { return k.DisplayName })
	return x
}

// resolve looks up a caller key written as display name (field) or derived
// ID (idField); exactly one of name and id is non-empty.
func (x *apiKeyIndex) resolve(l *loader, e *entry, field, name, idField, id string) *APIKey {
	switch {
	case name != "":
		if k := x.byName[name]; k != nil {
			return k
		}
		l.d.errAt(e, field, "unknown api key \""+name+"\"; available: "+quoteList(x.names))
	case id != "":
		if k := x.byID[id]; k != nil {
			return k
		}
		msg := "no api_keys entry has this derived ID; available keys: " + quoteList(x.names)
		if x.byName[id] != nil {
			msg += " (the value is a display name; use the key's derived ID, as printed by gw validate --ids)"
		}
		l.d.errAt(e, idField, msg)
	}
	return nil
}

// knownNames is names without the empty identities of entries that failed
// to decode (they were reported already), for "available:" hints.
func knownNames[T any](items []T, id func(T) string) []string {
	return dropEmpty(names(items, id))
}

// dropEmpty drops the leading "" entries of a sorted name list.
func dropEmpty(sorted []string) []string {
	for len(sorted) > 0 && sorted[0] == "" {
		sorted = sorted[1:]
	}
	return sorted
}

// providerKeyIndex bundles the provider-key lookups resolveReferences builds.
type providerKeyIndex struct {
	byName map[string]*ProviderKey
	byID   map[string]*ProviderKey
	names  []string
}

// resolve looks up a provider key written as provider_key (name) or
// provider_key_id (id); at most one is non-empty.
func (x providerKeyIndex) resolve(l *loader, e *entry, prefix, name, id string) *ProviderKey {
	switch {
	case name != "":
		if pk := x.byName[name]; pk != nil {
			return pk
		}
		l.d.errAt(e, prefix+"provider_key", "unknown provider key \""+name+"\"; available: "+quoteList(x.names))
	case id != "":
		if pk := x.byID[id]; pk != nil {
			return pk
		}
		l.d.errAt(e, prefix+"provider_key_id", "no provider key has this derived ID; available keys: "+quoteList(x.names))
	}
	return nil
}

// decodeEitherName reads the identity of a collection that takes name or
// display_name (spec: giving both is a load error).
func decodeEitherName(e *entry, o *obj) (id, field string) {
	hasName, hasDisplay := o.has("name"), o.has("display_name")
	switch {
	case hasName && hasDisplay:
		// Keep name as the identity so references to the entry still resolve.
		id, _ = o.str("name")
		o.raw("display_name")
		o.errf("name", "set exactly one of name and display_name, not both")
		e.setID("name", id)
		return id, "name"
	case hasDisplay:
		field = "display_name"
	default:
		field = "name"
		if !hasName && o.present("display_name") {
			field = "display_name" // `display_name:` written but null
		}
	}
	if !o.has(field) {
		o.raw("name")
		o.raw("display_name")
		o.errf(field, "required (or "+otherNameField(field)+")")
		return "", field
	}
	id = o.reqStr(field)
	o.raw(otherNameField(field)) // an explicit null of the other spelling
	e.setID(field, id)
	return id, field
}

func otherNameField(f string) string {
	if f == "name" {
		return "display_name"
	}
	return "name"
}

// pickOne reads a pair of mutually exclusive string fields such as
// provider_key / provider_key_id. It returns the field that was written ("" if
// neither) and its value. Both written is an error; neither is an error only
// when required.
func (o *obj) pickOne(a, b string, required bool) (field, value string) {
	hasA, hasB := o.has(a), o.has(b)
	switch {
	case hasA && hasB:
		o.raw(a)
		o.raw(b)
		o.errf(a, "set exactly one of "+a+" and "+b+", not both")
		return "", ""
	case hasA:
		return a, o.reqStr(a)
	case hasB:
		return b, o.reqStr(b)
	}
	o.raw(a) // mark explicit nulls read
	o.raw(b)
	if required {
		o.errf(a, "required (or "+b+")")
	}
	return "", ""
}

// rejectSet is reject for a field that is not accepted in this entry's
// shape; an explicit null counts as absent and is accepted.
func (o *obj) rejectSet(name, why string) {
	if o.d.desc != nil {
		o.d.desc.nullOnly(o.path, name)
	}
	if o.has(name) {
		o.reject(name, why)
		return
	}
	o.raw(name)
}

// requireSeq checks that name holds a non-empty sequence before a list
// reader runs. It reports "required" (when required) or an empty list and
// returns whether the list is present and non-empty. Elements and the value's
// type are left to the list reader.
func (o *obj) requireSeq(name, what string, required bool) bool {
	if !o.has(name) {
		o.raw(name)
		if required {
			o.errf(name, "required; list at least one "+what)
		}
		return false
	}
	n := o.raw(name)
	if n.Kind == yaml.SequenceNode && len(n.Content) == 0 {
		o.errf(name, "must hold at least one "+what)
		return false
	}
	return true
}

// nonEmptyStrings reads a list of strings whose entries must not be blank.
func (o *obj) nonEmptyStrings(name string) []string {
	list, _ := o.strList(name)
	out := list[:0:0]
	for i, s := range list {
		if strings.TrimSpace(s) == "" {
			o.d.errAt(o.e, indexPath(o.fieldPath(name), i), "must not be empty")
			continue
		}
		out = append(out, s)
	}
	return out
}

// globList reads a list of single-'*' name globs.
func (o *obj) globList(name string) []string {
	list, _ := o.strList(name)
	out := list[:0:0]
	for i, g := range list {
		if checkGlob(o, name, i, g) {
			out = append(out, g)
		}
	}
	return out
}

// literalCredWarn is the warning for a credential written without ${VAR}.
const literalCredWarn = "credential written literally; supply it as ${VAR} so it stays out of the file"

// UpstreamHeader is a static header sent upstream (mcp_servers, a2a_agents
// and otlp_http exporter `headers`). Values commonly carry credentials, so
// the value is a Secret.
type UpstreamHeader struct {
	Name  string // lowercase
	Value Secret
}

// gwOwnedHeaders are set by the gateway on every upstream call; a static
// header may not replace them.
var gwOwnedHeaders = map[string]bool{"content-type": true, "content-length": true}

// decodeUpstreamHeaders reads a `headers` map. Names are lowercased and must
// be unique; host, hop-by-hop, x-gw-*, content-type and content-length are
// rejected; values must be non-empty without CR, LF or NUL. A credential-like
// header written literally (no ${VAR}) gets a warning.
func (o *obj) decodeUpstreamHeaders(name string) []UpstreamHeader {
	m := o.sub(name)
	if m == nil {
		return nil
	}
	out := make([]UpstreamHeader, 0, len(m.keys))
	seen := make(map[string]bool, len(m.keys))
	for i, k := range m.keys {
		m.used[i] = true
		path := joinPath(m.path, k.Value)
		h := strings.ToLower(k.Value)
		switch {
		case k.ShortTag() == "!!merge":
			o.d.errAt(o.e, joinPath(m.path, "<<"), "unknown field (YAML merge keys are not expanded)")
			continue
		case !validHeaderName(h):
			o.d.errAt(o.e, path, "invalid header name")
			continue
		case alwaysDroppedHeader(h) || gwOwnedHeaders[h]:
			o.d.errAt(o.e, path, "header is set by the gateway and cannot be configured (host, hop-by-hop, x-gw-*, content-type, content-length)")
			continue
		case seen[h]:
			o.d.errAt(o.e, path, "duplicate header (names are case-insensitive)")
			continue
		}
		seen[h] = true
		v, refs, ok := o.d.scalarString(o.e, path, resolve(m.vals[i]))
		if !ok {
			continue
		}
		switch {
		case v == "":
			o.d.errAt(o.e, path, "must not be empty")
			continue
		case strings.ContainsAny(v, "\r\n\x00"):
			o.d.errAt(o.e, path, "header value must not contain CR, LF or NUL")
			continue
		}
		if refs == 0 && credentialHeader(h) {
			o.d.warnAt(o.e, path, literalCredWarn)
		}
		out = append(out, UpstreamHeader{Name: h, Value: NewSecret(v)})
	}
	return out
}

// credentialHeader reports header names that usually carry a credential.
func credentialHeader(h string) bool {
	switch h {
	case "authorization", "proxy-authorization", "cookie", "x-api-key", "api-key":
		return true
	}
	return strings.Contains(h, "token") || strings.Contains(h, "secret") || strings.Contains(h, "password")
}

// hasHeader reports whether hs holds name (lowercase).
func hasHeader(hs []UpstreamHeader, name string) bool {
	for _, h := range hs {
		if h.Name == name {
			return true
		}
	}
	return false
}

// checkClaimPath validates a claim name whose dots traverse nested objects.
func checkClaimPath(s string) string {
	if s == "" {
		return "must not be empty"
	}
	for _, seg := range strings.Split(s, ".") {
		if seg == "" {
			return "must be a claim name; dots separate nested claims and no segment may be empty"
		}
	}
	return ""
}

// isLoopbackHost reports localhost names and loopback IP literals.
func isLoopbackHost(host string) bool {
	h := strings.ToLower(host)
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.IsLoopback()
}
