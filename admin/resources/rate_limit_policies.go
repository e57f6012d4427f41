package resources

// rate_limit_policies: conditional or single-scope request and token
// limits. Reference: docs/CONFIG.md.

import (
	"strconv"
	"time"
)

// Rate limit policy scopes: what one counter is kept for.
const (
	RateScopeModel  = "model"   // the caller-facing model alias
	RateScopeAPIKey = "api_key" // the caller key
	RateScopeTeam   = "team"    // the caller key's team_id
	RateScopeMember = "member"  // the caller key's user_id
)

// RateScopes lists the accepted scopes.
var RateScopes = []string{RateScopeModel, RateScopeAPIKey, RateScopeTeam, RateScopeMember}

// RateWindows lists the accepted windows with their fixed lengths.
var RateWindows = []string{"second", "minute", "hour", "day"}

var rateWindowLen = map[string]time.Duration{
	"second": time.Second, "minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour,
}

// RateLimitPolicy is one rate_limit_policies entry.
type RateLimitPolicy struct {
	Index int
	ID    string
	Name  string

	Scope string
	// ScopeRef narrows the policy to one subject: a model display name
	// (Model), a caller key display name (APIKey), or a team_id / user_id
	// kept verbatim. "" applies the limit to each subject of the scope
	// separately.
	ScopeRef    string
	Model       *Model  // scope model with scope_ref, resolved
	APIKey      *APIKey // scope api_key with scope_ref, resolved
	WindowUnit  string  // second, minute, hour or day (see Window)
	MaxRequests int64   // 0: no request limit
	MaxTokens   int64   // 0: no token limit
	Match       *RateLimitMatch
	Enabled     bool
}

// RateLimitMatch holds the conditions of a conditional policy; every
// non-empty list must hold (any one entry of a list suffices).
type RateLimitMatch struct {
	Models  []string // model aliases or single-'*' globs
	APIKeys []string // caller key display names or globs
	Teams   []string // team_id values or globs
	Members []string // user_id values or globs
}

// Window is the fixed window length.
func (p *RateLimitPolicy) Window() time.Duration { return rateWindowLen[p.WindowUnit] }

// Subject returns the subject whose counter a request is charged to and
// whether the policy applies to the request at all: it is enabled, its match
// conditions hold and the scope has a subject (and equals scope_ref when set).
// model is the caller-facing alias; key may be nil (anonymous). The subject
// is the model alias, the caller key's derived ID, its team_id or its user_id;
// counters are keyed by the policy ID plus the subject. Allocation-free.
func (p *RateLimitPolicy) Subject(model string, key *APIKey) (string, bool) {
	if !p.Enabled || !p.Match.holds(model, key) {
		return "", false
	}
	switch p.Scope {
	case RateScopeModel:
		if model == "" || (p.ScopeRef != "" && model != p.ScopeRef) {
			return "", false
		}
		return model, true
	case RateScopeAPIKey:
		if key == nil || (p.APIKey != nil && key.ID != p.APIKey.ID) {
			return "", false
		}
		return key.ID, true
	case RateScopeTeam:
		if key == nil || key.TeamID == "" || (p.ScopeRef != "" && key.TeamID != p.ScopeRef) {
			return "", false
		}
		return key.TeamID, true
	case RateScopeMember:
		if key == nil || key.UserID == "" || (p.ScopeRef != "" && key.UserID != p.ScopeRef) {
			return "", false
		}
		return key.UserID, true
	}
	return "", false
}

func (m *RateLimitMatch) holds(model string, key *APIKey) bool {
	if m == nil {
		return true
	}
	anyGlob := func(globs []string, v string, ok bool) bool {
		if len(globs) == 0 {
			return true
		}
		if !ok {
			return false
		}
		for _, g := range globs {
			if GlobMatch(g, v) {
				return true
			}
		}
		return false
	}
	var name, team, user string
	if key != nil {
		name, team, user = key.DisplayName, key.TeamID, key.UserID
	}
	return anyGlob(m.Models, model, model != "") &&
		anyGlob(m.APIKeys, name, key != nil) &&
		anyGlob(m.Teams, team, team != "") &&
		anyGlob(m.Members, user, user != "")
}

func (l *loader) decodeRateLimitPolicy(e *entry, o *obj) {
	p := &RateLimitPolicy{Index: e.idx}
	p.Name = o.reqStr("name")
	e.setID("name", p.Name)
	p.ID = DeriveID(KindRateLimitPolicy, p.Name)

	if !o.has("scope") {
		o.raw("scope")
		o.errf("scope", "required; one of model, api_key, team, member")
	} else {
		p.Scope, _ = o.enum("scope", RateScopes...)
	}
	if o.has("scope_ref") {
		p.ScopeRef = o.reqStr("scope_ref")
	} else {
		o.raw("scope_ref")
	}
	if !o.has("window") {
		o.raw("window")
		o.errf("window", "required; one of second, minute, hour, day")
	} else {
		p.WindowUnit, _ = o.enum("window", RateWindows...)
	}
	hasReq, hasTok := o.has("max_requests"), o.has("max_tokens")
	p.MaxRequests, _ = o.intMin("max_requests", 1)
	p.MaxTokens, _ = o.intMin("max_tokens", 1)
	if !hasReq && !hasTok {
		o.errf("max_requests", "required (or max_tokens); set at least one limit")
	}
	if mo := o.sub("match"); mo != nil {
		m := &RateLimitMatch{}
		for _, f := range []struct {
			name string
			dst  *[]string
		}{{"models", &m.Models}, {"api_keys", &m.APIKeys}, {"teams", &m.Teams}, {"members", &m.Members}} {
			if mo.requireSeq(f.name, "entry (omit the field to drop the condition)", false) {
				*f.dst = mo.globList(f.name)
			}
		}
		if len(mo.keys) == 0 {
			o.errf("match", "must set at least one condition (models, api_keys, teams, members); omit it for an unconditional policy")
		}
		mo.finish()
		p.Match = m
	}
	p.Enabled = o.boolDefault("enabled", true)
	l.res.RateLimitPolicies = append(l.res.RateLimitPolicies, p)
}

func (l *loader) resolveRateLimitPolicies(mi *modelIndex, keys *apiKeyIndex) {
	for _, p := range l.res.RateLimitPolicies {
		e := entryOf(CollRateLimitPolicies, p.Index, "name", p.Name)
		if p.ScopeRef != "" {
			switch p.Scope {
			case RateScopeModel:
				if p.Model = mi.byName[p.ScopeRef]; p.Model == nil {
					l.d.errAt(e, "scope_ref", "unknown model \""+p.ScopeRef+"\"; available: "+quoteList(mi.names))
				}
			case RateScopeAPIKey:
				p.APIKey = keys.resolve(l, e, "scope_ref", p.ScopeRef, "", "")
			}
		}
		m := p.Match
		if m == nil {
			continue
		}
		for i, g := range m.Models {
			if !hasStar(g) && mi.byName[g] == nil {
				l.d.errAt(e, "match.models["+strconv.Itoa(i)+"]", "unknown model \""+g+"\"; available: "+quoteList(mi.names))
			}
		}
		for i, g := range m.APIKeys {
			if !hasStar(g) && keys.byName[g] == nil {
				l.d.errAt(e, "match.api_keys["+strconv.Itoa(i)+"]", "unknown api key \""+g+"\"; available: "+quoteList(keys.names))
			}
		}
	}
}
