package snapshot

import (
	"sync/atomic"

	"gw/admin/resources"
)

// JWTTable is the compiled JWT identity lookup of one snapshot: which caller
// a verified token of a provider maps to. Verification itself (signatures,
// signing-key sets, the verified-token cache) lives in edge/authn, whose
// state outlives snapshots.
type JWTTable struct {
	// Gen is unique per compiled snapshot. A verified-token cache keys its
	// entries on it, so a reload never serves a mapping compiled from an
	// older file (a disabled key, a removed mapping).
	Gen uint64
	// Providers counts the enabled oidc_providers entries; with none, a
	// JWT-shaped credential is only an unknown caller key.
	Providers int

	subjects map[jwtSubject]*Caller
	mappings map[*resources.ClaimMapping]*Caller
}

type jwtSubject struct{ provider, subject string }

var jwtGen atomic.Uint64

// compileJWT builds the (jwt_provider, jwt_subject) and claim-mapping tables;
// compileCallers must have run.
func (s *Snapshot) compileJWT(res *resources.Resources) {
	t := &JWTTable{
		Gen:      jwtGen.Add(1),
		subjects: map[jwtSubject]*Caller{},
		mappings: make(map[*resources.ClaimMapping]*Caller, len(res.ClaimMappings)),
	}
	for _, p := range res.OIDCProviders {
		if p.Enabled {
			t.Providers++
		}
	}
	for _, k := range res.APIKeys {
		if k.JWTProvider != "" && k.JWTSubject != "" {
			t.subjects[jwtSubject{k.JWTProvider, k.JWTSubject}] = s.CallersByName[k.DisplayName]
		}
	}
	for _, m := range res.ClaimMappings {
		if m.APIKey != nil {
			t.mappings[m] = s.CallersByName[m.APIKey.DisplayName]
		}
	}
	s.JWT = t
}

// ResolveJWT maps the verified claims of a token accepted by provider p to
// its caller (spec "Authentication" 5): the caller key whose jwt_provider and
// jwt_subject equal p's name and the string value of p's identity_claim;
// otherwise the first of p's enabled claim_mappings (priority, then name)
// whose conditions all hold. nil when neither decides.
func (s *Snapshot) ResolveJWT(p *resources.OIDCProvider, claims map[string]any) *Caller {
	t := s.JWT
	if t == nil {
		return nil
	}
	if v, ok := resources.LookupClaim(claims, p.IdentityClaimPath); ok {
		if sub, ok := v.(string); ok && sub != "" {
			if c := t.subjects[jwtSubject{p.Name, sub}]; c != nil {
				return c
			}
		}
	}
	for _, m := range p.ClaimMappings {
		if m.Matches(claims) {
			return t.mappings[m]
		}
	}
	return nil
}
