package authn

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/authn/jwks"
)

// Token failures. Codes name what failed for the operator; messages never
// carry the token or a claim value.
var (
	TokenMalformed      = newFailure("token_malformed", "The bearer token is not a well-formed JWT.")
	TokenInvalidClaims  = newFailure("token_invalid_claims", "The token has a registered claim (exp, nbf, aud, iss) of the wrong type.")
	TokenUnknownIssuer  = newFailure("token_unknown_issuer", "No enabled OIDC provider accepts the token's issuer.")
	TokenUnsupportedAlg = newFailure("token_unsupported_alg", "The token's signing algorithm is not accepted by its OIDC provider.")
	TokenUnknownKey     = newFailure("token_unknown_key", "No signing key of the OIDC provider matches the token (kid).")
	TokenBadSignature   = newFailure("token_bad_signature", "The token's signature does not verify.")
	TokenKeysDown       = newFailure("token_keys_unavailable", "The OIDC provider's signing keys cannot be fetched; the token cannot be verified.")
	TokenMissingExp     = newFailure("token_missing_exp", "The token has no exp claim; gw accepts only tokens that expire.")
	TokenExpired        = newFailure("token_expired", "The token has expired.")
	TokenNotYetValid    = newFailure("token_not_yet_valid", "The token is not valid yet (nbf).")
	TokenWrongAudience  = newFailure("token_wrong_audience", "The token's aud holds no audience accepted by its OIDC provider.")
	TokenMissingScope   = newFailure("token_missing_scope", "The token lacks a scope its OIDC provider requires.")
	TokenBoundClaim     = newFailure("token_bound_claim", "The token does not satisfy its OIDC provider's bound_claims.")
	TokenNoMapping      = newFailure("token_no_mapping", "No caller key is bound to the token's identity and no claim mapping matches it.")
	TokenCritical       = newFailure("token_unsupported_crit", "The token names critical header extensions (crit), which gw does not support.")
)

// MaxTokenBytes bounds a token gw will parse.
const MaxTokenBytes = 16 << 10

// Accepted algorithms: JWKS providers verify asymmetric signatures only;
// shared-secret providers HMAC only. "none" is in neither.
var (
	asymmetricAlgs = map[string]bool{
		"RS256": true, "RS384": true, "RS512": true, "PS256": true, "PS384": true, "PS512": true,
		"ES256": true, "ES384": true, "ES512": true, "EdDSA": true,
	}
	hmacAlgs = map[string]bool{"HS256": true, "HS384": true, "HS512": true}
)

// Strict decoding: a segment whose unused trailing bits are set is
// malformed, so one signature has exactly one encoding.
var parser = jwt.NewParser(jwt.WithStrictDecoding())

// verify is the slow path: parse, pick the provider, check the signature and
// the claims, map to a caller, and cache the result until exp.
func (a *Authenticator) verify(tok []byte, snap *snapshot.Snapshot, now time.Time) (*snapshot.Caller, *Failure) {
	p, claims, f := a.Verify(tok, snap, now)
	if f != nil {
		return fail(f)
	}
	c := snap.ResolveJWT(p, claims)
	if c == nil {
		return fail(TokenNoMapping)
	}
	exp, _ := claims.GetExpirationTime() // checked present and well typed
	until := exp.Time.Add(p.Leeway())
	if limit := now.Add(a.maxTTL); until.After(limit) {
		until = limit
	}
	a.cache.put(tok, snap.JWT.Gen, c, until.UnixNano(), now.UnixNano())
	return checkKey(c, now)
}

// Verify checks tok against the providers of snap at time now: the provider
// chosen by iss (spec "oidc_providers": a token whose iss equals a provider's
// issuer is verified only by it; otherwise the enabled issuer-less
// shared-secret providers in name order), the signature, exp/nbf with leeway,
// aud, required_scopes and bound_claims. It returns the provider that
// accepted the token and the token's claims.
func (a *Authenticator) Verify(tok []byte, snap *snapshot.Snapshot, now time.Time) (*resources.OIDCProvider, jwt.MapClaims, *Failure) {
	if len(tok) > MaxTokenBytes || snap.OIDC == nil {
		return nil, nil, TokenMalformed
	}
	claims := jwt.MapClaims{}
	t, parts, err := parser.ParseUnverified(string(tok), claims)
	if err != nil {
		if errors.Is(err, jwt.ErrTokenUnverifiable) {
			return nil, nil, TokenUnsupportedAlg // alg absent or unknown
		}
		return nil, nil, TokenMalformed
	}
	if len(t.Signature) == 0 {
		return nil, nil, TokenUnsupportedAlg // unsigned
	}
	if _, ok := t.Header["crit"]; ok {
		// RFC 7515 4.1.11: extensions a recipient does not understand make
		// the token invalid; gw understands none.
		return nil, nil, TokenCritical
	}
	iss := ""
	if v, ok := claims["iss"]; ok {
		s, isStr := v.(string)
		if !isStr {
			return nil, nil, TokenInvalidClaims
		}
		iss = s
	}
	provs := snap.OIDC.For(iss)
	if len(provs) == 0 {
		return nil, nil, TokenUnknownIssuer
	}
	signing := string(tok[:len(parts[0])+1+len(parts[1])])
	var prov *resources.OIDCProvider
	f := TokenUnsupportedAlg
	for _, p := range provs {
		pf := a.checkSignature(p, t, signing)
		if pf == nil {
			prov = p
			break
		}
		if rank(pf) > rank(f) {
			f = pf
		}
	}
	if prov == nil {
		if iss != "" && provs[0].Issuer == "" {
			// No provider holds this iss and no issuer-less shared secret
			// signed the token: the issuer is what the operator should check.
			return nil, nil, TokenUnknownIssuer
		}
		return nil, nil, f
	}
	if f := checkClaims(prov, claims, now); f != nil {
		return nil, nil, f
	}
	return prov, claims, nil
}

// rank orders signature failures by how far verification got.
func rank(f *Failure) int {
	switch f {
	case TokenUnknownKey:
		return 1
	case TokenKeysDown:
		return 2
	case TokenBadSignature:
		return 3
	}
	return 0
}

func (a *Authenticator) checkSignature(p *resources.OIDCProvider, t *jwt.Token, signing string) *Failure {
	alg := t.Method.Alg()
	if p.UsesHMAC() {
		if !hmacAlgs[alg] {
			return TokenUnsupportedAlg
		}
		if t.Method.Verify(signing, t.Signature, []byte(p.HMACSecret.Reveal())) != nil {
			return TokenBadSignature
		}
		return nil
	}
	if !asymmetricAlgs[alg] {
		return TokenUnsupportedAlg
	}
	kid, _ := t.Header["kid"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), a.Keys.Options().FetchTimeout)
	defer cancel()
	keys, err := a.Keys.Get(SourceOf(p)).Find(ctx, kid)
	if err != nil {
		return TokenKeysDown
	}
	tried := false
	for _, k := range keys {
		if !keyFits(alg, k) {
			continue
		}
		tried = true
		if t.Method.Verify(signing, t.Signature, k.Public) == nil {
			return nil
		}
	}
	if !tried {
		return TokenUnknownKey
	}
	return TokenBadSignature
}

// keyFits: the key's type (and curve) is the one alg needs, and the key
// does not name another alg.
func keyFits(alg string, k jwks.Key) bool {
	if k.Alg != "" && k.Alg != alg {
		return false
	}
	switch alg[:2] {
	case "RS", "PS":
		_, ok := k.Public.(*rsa.PublicKey)
		return ok
	case "ES":
		pub, ok := k.Public.(*ecdsa.PublicKey)
		if !ok {
			return false
		}
		switch alg {
		case "ES256":
			return pub.Curve == elliptic.P256()
		case "ES384":
			return pub.Curve == elliptic.P384()
		case "ES512":
			return pub.Curve == elliptic.P521()
		}
	case "Ed":
		_, ok := k.Public.(ed25519.PublicKey)
		return ok
	}
	return false
}

// SourceOf is the key-set identity of a JWKS provider.
func SourceOf(p *resources.OIDCProvider) jwks.Source {
	return jwks.Source{Provider: p.Name, Issuer: p.Issuer, JWKSURI: p.JWKSURI, Discovery: p.DiscoveryURL()}
}

// Sources lists the key sets of the enabled JWKS providers of snap (for
// Registry.Sync on each applied snapshot).
func Sources(snap *snapshot.Snapshot) []jwks.Source {
	var out []jwks.Source
	for _, p := range snap.Resources.OIDCProviders {
		if p.Enabled && !p.UsesHMAC() {
			out = append(out, SourceOf(p))
		}
	}
	return out
}

// checkClaims: exp (required) and nbf with leeway, aud, required_scopes,
// bound_claims. iss was matched when the provider was chosen.
func checkClaims(p *resources.OIDCProvider, claims jwt.MapClaims, now time.Time) *Failure {
	leeway := p.Leeway()
	exp, err := claims.GetExpirationTime()
	switch {
	case err != nil:
		return TokenInvalidClaims
	case exp == nil:
		return TokenMissingExp
	case !now.Before(exp.Time.Add(leeway)):
		return TokenExpired
	}
	nbf, err := claims.GetNotBefore()
	switch {
	case err != nil:
		return TokenInvalidClaims
	case nbf != nil && now.Add(leeway).Before(nbf.Time):
		return TokenNotYetValid
	}
	if len(p.Audiences) > 0 {
		aud, err := claims.GetAudience()
		if err != nil {
			return TokenInvalidClaims
		}
		if !anyIn(aud, p.Audiences) {
			return TokenWrongAudience
		}
	}
	if len(p.RequiredScopes) > 0 && !hasScopes(claims["scope"], p.RequiredScopes) {
		return TokenMissingScope
	}
	for _, b := range p.BoundClaims {
		v, ok := resources.LookupClaim(claims, b.Path)
		if !ok || !b.Holds(v) {
			return TokenBoundClaim
		}
	}
	return nil
}

func anyIn(have, accepted []string) bool {
	for _, h := range have {
		for _, a := range accepted {
			if h == a {
				return true
			}
		}
	}
	return false
}

// hasScopes: every required scope is in the scope claim, a space-separated
// string or an array of strings (other elements ignored).
func hasScopes(v any, required []string) bool {
	var have []string
	switch x := v.(type) {
	case string:
		have = strings.Fields(x)
	case []any:
		for _, el := range x {
			if s, ok := el.(string); ok {
				have = append(have, s)
			}
		}
	default:
		return false
	}
	for _, r := range required {
		found := false
		for _, h := range have {
			if h == r {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
