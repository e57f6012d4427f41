package resources

import (
	"sort"
	"strconv"
)

// Scope types of guardrail_attachments.
const (
	GuardrailScopeModel            = "model"
	GuardrailScopeAPIKey           = "api_key"
	GuardrailScopeMCPServer        = "mcp_server"
	GuardrailScopePassthroughRoute = "passthrough_route"
	GuardrailScopeTeam             = "team"
)

// GuardrailScopeTypes lists the accepted scope_type values.
var GuardrailScopeTypes = []string{GuardrailScopeModel, GuardrailScopeAPIKey, GuardrailScopeMCPServer, GuardrailScopePassthroughRoute, GuardrailScopeTeam}

// GuardrailScope names one attachment target by canonical name: the model or
// caller key display_name, the MCP server or passthrough route name, or the
// team ID as written.
type GuardrailScope struct {
	Type string // one of the GuardrailScope* constants
	Name string
}

// GuardrailAttachment is one guardrail_attachments entry, resolved.
type GuardrailAttachment struct {
	Index int
	// ID is DeriveID(KindGuardrailAttachment, Identity()) over canonical names,
	// so referring to a target by name or by derived ID gives the same ID.
	ID string

	GuardrailRef string // guardrail_id as written: a guardrail name or derived ID
	ScopeRef     string // scope_id as written

	GuardrailName string
	// Guardrail is nil when the attached guardrail has an unknown kind: the
	// attachment loads and inspects nothing.
	Guardrail *Guardrail
	Scope     GuardrailScope

	// The resolved target; exactly one is set, none for scope type team.
	Model            *Model
	APIKey           *APIKey
	MCPServer        *MCPServer
	PassthroughRoute *PassthroughRoute
}

// Identity is "<guardrail name>/<scope type>/<scope name or team id>"; before
// resolution it uses the references as written.
func (a *GuardrailAttachment) Identity() string {
	g, s := a.GuardrailName, a.Scope.Name
	if g == "" {
		g = a.GuardrailRef
	}
	if s == "" {
		s = a.ScopeRef
	}
	return g + "/" + a.Scope.Type + "/" + s
}

func (l *loader) decodeGuardrailAttachment(e *entry, o *obj) {
	a := &GuardrailAttachment{Index: e.idx}
	a.GuardrailRef = o.reqStr("guardrail_id")
	a.Scope.Type = o.guardReqEnum("scope_type", GuardrailScopeTypes...)
	a.ScopeRef = o.reqStr("scope_id")
	if a.GuardrailRef != "" && a.Scope.Type != "" && a.ScopeRef != "" {
		e.setID("identity", a.Identity())
	}
	a.ID = DeriveID(KindGuardrailAttachment, a.Identity()) // replaced once resolved
	l.res.GuardrailAttachments = append(l.res.GuardrailAttachments, a)
	// The generic finish reports anything beyond the identity triple.
}

// attachTarget resolves one scope type.
type attachTarget struct {
	what  string   // for messages: "model", "caller key", ...
	names []string // sorted, for "available:" hints
	find  func(a *GuardrailAttachment) bool
}

func (l *loader) resolveGuardrailRefs(mi *modelIndex) {
	r := l.res
	for _, g := range r.Guardrails {
		if s, ok := g.Options.(*SemanticGuardrailOptions); ok {
			s.EmbeddingModel = l.direct(mi, entryOf(CollGuardrails, g.Index, "name", g.Name), "embedding_model", s.EmbeddingModelName, true)
		}
	}
	if len(r.GuardrailAttachments) == 0 {
		return
	}

	// Guardrails by name, then by derived ID. Unknown kinds are valid targets
	// (nil *Guardrail): the attachment loads and inspects nothing.
	type gref struct {
		name string
		g    *Guardrail
	}
	gByName := make(map[string]gref, len(r.Guardrails)+len(r.UnknownKinds))
	var gNames []string
	for _, ref := range l.guardrailRefs() {
		if ref.id == "" {
			continue // missing name, already reported
		}
		gByName[ref.id] = gref{name: ref.id}
		gNames = append(gNames, ref.id)
	}
	for _, g := range r.Guardrails {
		gByName[g.Name] = gref{g.Name, g}
	}
	gByID := make(map[string]gref, len(gByName))
	for name, gr := range gByName {
		gByID[DeriveID(KindGuardrail, name)] = gr
	}
	sort.Strings(gNames)

	targets := l.attachTargets(mi)
	first := make(map[string]int, len(r.GuardrailAttachments))
	for _, a := range r.GuardrailAttachments {
		// A part that failed to decode is empty and already reported; the
		// parts that did decode are still checked.
		complete := a.GuardrailRef != "" && a.Scope.Type != "" && a.ScopeRef != ""
		e := entryOf(CollGuardrailAttachments, a.Index, "", "")
		if complete {
			e.setID("identity", a.Identity())
		}
		ok := complete
		if a.GuardrailRef != "" {
			gr, found := gByName[a.GuardrailRef]
			if !found {
				gr, found = gByID[a.GuardrailRef]
			}
			if found {
				a.GuardrailName, a.Guardrail = gr.name, gr.g
			} else {
				l.d.errAt(e, "guardrail_id", "unknown guardrail \""+a.GuardrailRef+"\"; available: "+quoteList(gNames))
				ok = false
			}
		}
		if t, known := targets[a.Scope.Type]; known && a.ScopeRef != "" && !t.find(a) {
			l.d.errAt(e, "scope_id", "unknown "+t.what+" \""+a.ScopeRef+"\"; available: "+quoteList(t.names))
			ok = false
		}
		if !ok {
			continue
		}
		id := a.Identity()
		a.ID = DeriveID(KindGuardrailAttachment, id)
		if prev, dup := first[id]; dup {
			l.d.errAt(entryOf(CollGuardrailAttachments, a.Index, "identity", id), "",
				"duplicate attachment of guardrail \""+a.GuardrailName+"\" to "+a.Scope.Type+" \""+a.Scope.Name+"\"; also attached by guardrail_attachments["+strconv.Itoa(prev)+"]")
			continue
		}
		first[id] = a.Index
	}
}

// attachTargets builds the per-scope-type lookup (name first, then derived ID).
func (l *loader) attachTargets(mi *modelIndex) map[string]attachTarget {
	r := l.res
	modelByID := make(map[string]*Model, len(r.Models))
	for _, m := range r.Models {
		modelByID[m.ID] = m
	}
	keyByName := make(map[string]*APIKey, len(r.APIKeys))
	keyByID := make(map[string]*APIKey, len(r.APIKeys))
	for _, k := range r.APIKeys {
		keyByName[k.DisplayName], keyByID[k.ID] = k, k
	}
	serverByRef := make(map[string]*MCPServer, 2*len(r.MCPServers))
	for _, s := range r.MCPServers {
		serverByRef[s.ID] = s
	}
	for _, s := range r.MCPServers {
		serverByRef[s.Name] = s // names win over IDs
	}
	routeByRef := make(map[string]*PassthroughRoute, 2*len(r.PassthroughRoutes))
	for _, p := range r.PassthroughRoutes {
		routeByRef[p.ID] = p
	}
	for _, p := range r.PassthroughRoutes {
		routeByRef[p.Name] = p
	}
	return map[string]attachTarget{
		GuardrailScopeModel: {"model", mi.names, func(a *GuardrailAttachment) bool {
			m := mi.byName[a.ScopeRef]
			if m == nil {
				m = modelByID[a.ScopeRef]
			}
			if m == nil {
				return false
			}
			a.Model, a.Scope.Name = m, m.DisplayName
			return true
		}},
		GuardrailScopeAPIKey: {"caller key", names(r.APIKeys, func(k *APIKey) string { return k.DisplayName }), func(a *GuardrailAttachment) bool {
			k := keyByName[a.ScopeRef]
			if k == nil {
				k = keyByID[a.ScopeRef]
			}
			if k == nil {
				return false
			}
			a.APIKey, a.Scope.Name = k, k.DisplayName
			return true
		}},
		GuardrailScopeMCPServer: {"MCP server", names(r.MCPServers, func(s *MCPServer) string { return s.Name }), func(a *GuardrailAttachment) bool {
			s := serverByRef[a.ScopeRef]
			if s == nil {
				return false
			}
			a.MCPServer, a.Scope.Name = s, s.Name
			return true
		}},
		GuardrailScopePassthroughRoute: {"passthrough route", names(r.PassthroughRoutes, func(p *PassthroughRoute) string { return p.Name }), func(a *GuardrailAttachment) bool {
			p := routeByRef[a.ScopeRef]
			if p == nil {
				return false
			}
			a.PassthroughRoute, a.Scope.Name = p, p.Name
			return true
		}},
		// No team collection exists in the file: the ID is kept as written.
		GuardrailScopeTeam: {"team", nil, func(a *GuardrailAttachment) bool {
			a.Scope.Name = a.ScopeRef
			return true
		}},
	}
}

// GuardrailChain is the guardrails one scope runs, in evaluation order:
// created_at earliest first, guardrails without created_at last, ties in
// file order of the guardrails collection.
type GuardrailChain struct {
	Input  []*Guardrail // hook_point input or both
	Output []*Guardrail // hook_point output or both
}

// GuardrailChains returns, per attached scope, the enabled guardrails of a
// known kind attached to it. Scopes whose attachments are all disabled or of
// an unknown kind are absent. The snapshot compiler calls it once per load;
// combining the chains of the scopes one request matches (model, caller key,
// team, ...) is the compiler's job.
func (r *Resources) GuardrailChains() map[GuardrailScope]*GuardrailChain {
	byScope := map[GuardrailScope][]*Guardrail{}
	for _, a := range r.GuardrailAttachments {
		if a.Guardrail == nil || !a.Guardrail.Enabled {
			continue
		}
		byScope[a.Scope] = append(byScope[a.Scope], a.Guardrail)
	}
	out := make(map[GuardrailScope]*GuardrailChain, len(byScope))
	for scope, gs := range byScope {
		sortGuardrails(gs)
		c := &GuardrailChain{}
		for _, g := range gs {
			if g.RunsOnInput() {
				c.Input = append(c.Input, g)
			}
			if g.RunsOnOutput() {
				c.Output = append(c.Output, g)
			}
		}
		out[scope] = c
	}
	return out
}

// sortGuardrails orders gs for evaluation (see GuardrailChain).
func sortGuardrails(gs []*Guardrail) {
	sort.SliceStable(gs, func(i, j int) bool {
		a, b := gs[i], gs[j]
		switch az, bz := a.CreatedAt.IsZero(), b.CreatedAt.IsZero(); {
		case az != bz:
			return bz // the one with created_at first
		case !az && !a.CreatedAt.Equal(b.CreatedAt):
			return a.CreatedAt.Before(b.CreatedAt)
		}
		return a.Index < b.Index
	})
}
