package resources

import (
	"sort"
	"strconv"
)

func entryOf(coll string, idx int, idField, id string) *entry {
	return &entry{coll: coll, idx: idx, idField: idField, id: id}
}

// checkIdentities enforces non-empty unique identities per collection.
// (Emptiness was reported when each entry was decoded.)
func (l *loader) checkIdentities() {
	r := l.res
	ids := func(n int, f func(i int) (int, string)) []identityRef {
		out := make([]identityRef, n)
		for i := range out {
			out[i].idx, out[i].id = f(i)
		}
		return out
	}
	l.checkUnique(CollProviderKeys, "display_name", ids(len(r.ProviderKeys), func(i int) (int, string) { return r.ProviderKeys[i].Index, r.ProviderKeys[i].DisplayName }))
	l.checkUnique(CollModels, "display_name", ids(len(r.Models), func(i int) (int, string) { return r.Models[i].Index, r.Models[i].DisplayName }))
	l.checkUnique(CollAPIKeys, "display_name", ids(len(r.APIKeys), func(i int) (int, string) { return r.APIKeys[i].Index, r.APIKeys[i].DisplayName }))
	l.checkOtherIdentities()
}

// modelIndex is the name lookup used by every model reference.
type modelIndex struct {
	byName map[string]*Model
	names  []string // sorted, for hints
}

func (l *loader) models() *modelIndex {
	mi := &modelIndex{byName: make(map[string]*Model, len(l.res.Models))}
	for _, m := range l.res.Models {
		mi.byName[m.DisplayName] = m
	}
	mi.names = names(l.res.Models, func(m *Model) string { return m.DisplayName })
	return mi
}

// directNames lists direct (optionally embedding-only) model names for hints.
func (mi *modelIndex) directNames(embeddingOnly bool) []string {
	var out []string
	for _, n := range mi.names {
		m := mi.byName[n]
		if m.Kind == KindDirect && (!embeddingOnly || m.Embedding != nil) {
			out = append(out, n)
		}
	}
	return out
}

// direct resolves a reference that must name a direct model.
func (l *loader) direct(mi *modelIndex, e *entry, path, name string, embedding bool) *Model {
	if name == "" {
		return nil
	}
	m := mi.byName[name]
	switch {
	case m == nil:
		what := "model"
		if embedding {
			what = "embedding model"
		}
		l.d.errAt(e, path, "unknown "+what+" \""+name+"\"; available: "+quoteList(mi.directNames(embedding)))
		return nil
	case m.Kind != KindDirect:
		l.d.errAt(e, path, "model \""+name+"\" is a "+m.Kind.String()+" model; a direct model is required")
		return nil
	case embedding && m.Embedding == nil:
		l.d.errAt(e, path, "model \""+name+"\" has no embedding block; available embedding models: "+quoteList(mi.directNames(true)))
		return nil
	}
	return m
}

func (l *loader) resolveReferences() {
	r := l.res
	pkByName := make(map[string]*ProviderKey, len(r.ProviderKeys))
	pkByID := make(map[string]*ProviderKey, len(r.ProviderKeys))
	for _, pk := range r.ProviderKeys {
		pkByName[pk.DisplayName] = pk
		pkByID[pk.ID] = pk
	}
	pkNames := names(r.ProviderKeys, func(p *ProviderKey) string { return p.DisplayName })
	mi := l.models()

	for _, m := range r.Models {
		e := entryOf(CollModels, m.Index, "display_name", m.DisplayName)
		switch m.Kind {
		case KindDirect:
			switch {
			case m.ProviderKeyName != "":
				m.ProviderKey = pkByName[m.ProviderKeyName]
				if m.ProviderKey == nil {
					l.d.errAt(e, "provider_key", "unknown provider key \""+m.ProviderKeyName+"\"; available: "+quoteList(pkNames))
				}
			case m.providerKeyID != "":
				m.ProviderKey = pkByID[m.providerKeyID]
				if m.ProviderKey == nil {
					l.d.errAt(e, "provider_key_id", "no provider key has this derived ID; available keys: "+quoteList(pkNames))
				} else {
					m.ProviderKeyName = m.ProviderKey.DisplayName
				}
			}
		case KindRouting:
			for i := range m.Routing.Targets {
				t := &m.Routing.Targets[i]
				t.Model = l.direct(mi, e, "routing.targets["+strconv.Itoa(i)+"].model", t.ModelName, false)
			}
		case KindEnsemble:
			for i := range m.Ensemble.Panel {
				p := &m.Ensemble.Panel[i]
				p.Model = l.direct(mi, e, "ensemble.panel["+strconv.Itoa(i)+"].model", p.ModelName, false)
			}
			m.Ensemble.Judge = l.direct(mi, e, "ensemble.judge.model", m.Ensemble.JudgeName, false)
		case KindSemantic:
			s := m.Semantic
			s.EmbeddingModel = l.direct(mi, e, "semantic.embedding_model", s.EmbeddingModelName, true)
			s.Default = l.direct(mi, e, "semantic.default", s.DefaultName, false)
			for i := range s.Routes {
				rt := &s.Routes[i]
				rt.Target = l.direct(mi, e, "semantic.routes["+strconv.Itoa(i)+"].target", rt.TargetName, false)
			}
			if s.OnEmbeddingFailure == "target" {
				s.FailureTarget = l.direct(mi, e, "semantic.on_embedding_failure.target", s.FailureTargetName, false)
			}
		}
	}

	l.resolveAPIKeyRefs(mi)
	l.resolveOtherRefs(mi, pkByName, pkByID, pkNames)
}

func (l *loader) resolveAPIKeyRefs(mi *modelIndex) {
	r := l.res
	routeNames := map[string]bool{}
	for _, pr := range r.PassthroughRoutes {
		routeNames[pr.Name] = true
	}
	serverNames := map[string]bool{}
	for _, s := range r.MCPServers {
		serverNames[s.Name] = true
	}
	oidcNames := map[string]bool{}
	for _, p := range r.OIDCProviders {
		oidcNames[p.Name] = true
	}
	type credOwner struct {
		idx  int
		name string
	}
	creds := make(map[[32]byte]credOwner, len(r.APIKeys))
	type jwtPair struct{ provider, subject string }
	jwt := map[jwtPair]credOwner{}
	for _, k := range r.APIKeys {
		e := entryOf(CollAPIKeys, k.Index, "display_name", k.DisplayName)
		for i, g := range k.AllowedModels {
			if !hasStar(g) && mi.byName[g] == nil {
				l.d.errAt(e, "allowed_models["+strconv.Itoa(i)+"]", "unknown model \""+g+"\"; available: "+quoteList(mi.names))
			}
		}
		for i, g := range k.AllowedRoutes {
			if !hasStar(g) && !routeNames[g] {
				l.d.errAt(e, "allowed_routes["+strconv.Itoa(i)+"]", "unknown passthrough route \""+g+"\"; available: "+quoteList(sortedKeys(routeNames)))
			}
		}
		for _, ml := range k.MCPRateLimits {
			if !serverNames[ml.Server] {
				l.d.errAt(e, "mcp_rate_limits."+ml.Server, "unknown MCP server \""+ml.Server+"\"; available: "+quoteList(sortedKeys(serverNames)))
			}
		}
		if k.JWTProvider != "" {
			if !oidcNames[k.JWTProvider] {
				l.d.errAt(e, "jwt_provider", "unknown OIDC provider \""+k.JWTProvider+"\"; available: "+quoteList(sortedKeys(oidcNames)))
			}
			p := jwtPair{k.JWTProvider, k.JWTSubject}
			if prev, dup := jwt[p]; dup {
				l.d.errAt(e, "jwt_subject", "the jwt_provider/jwt_subject pair is also used by api_keys["+strconv.Itoa(prev.idx)+"] (display_name="+prev.name+")")
			} else {
				jwt[p] = credOwner{k.Index, k.DisplayName}
			}
		}
		if k.HashSource != "" && k.Hash != ([32]byte{}) {
			if prev, dup := creds[k.Hash]; dup {
				l.d.errAt(e, k.HashSource, "resolves to the same credential as api_keys["+strconv.Itoa(prev.idx)+"] (display_name="+prev.name+")")
			} else {
				creds[k.Hash] = credOwner{k.Index, k.DisplayName}
			}
		}
	}
}

func hasStar(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '*' {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ids lists every entry's derived ID.
func (l *loader) ids() []EntryID {
	r := l.res
	var out []EntryID
	for _, p := range r.ProviderKeys {
		out = append(out, EntryID{CollProviderKeys, p.DisplayName, p.ID})
	}
	for _, m := range r.Models {
		out = append(out, EntryID{CollModels, m.DisplayName, m.ID})
	}
	for _, k := range r.APIKeys {
		out = append(out, EntryID{CollAPIKeys, k.DisplayName, k.ID})
	}
	return append(out, l.otherIDs()...)
}
