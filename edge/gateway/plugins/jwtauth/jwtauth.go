// Package jwtauth is the jwt-auth plugin: a consumer is identified by a
// JWT (header `authorization`, with or without "Bearer ", else query
// argument `jwt`, else cookie `jwt`) whose `key` claim names a jwt-auth
// credential; the token must verify with that credential's secret (HS256,
// HS512) or public key (RS256, ES256) and be within exp/nbf.
package jwtauth

import (
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	admingw "gw/admin/gateway"
	"gw/edge/gateway/plugin"
)

// Name and Priority are APISIX's.
const (
	Name     = "jwt-auth"
	Priority = 2510
)

func init() {
	plugin.Register(&plugin.Def{Name: Name, Priority: Priority, Auth: true, New: New, Check: Check})
}

var (
	bodyMissing   = plugin.ErrorBody("Missing JWT token in request")
	bodyInvalid   = plugin.ErrorBody("JWT token invalid")
	bodyNoKey     = plugin.ErrorBody("missing user key in JWT token")
	bodyBadKey    = plugin.ErrorBody("Invalid user key in JWT token")
	bodyNotVerify = plugin.ErrorBody("failed to verify jwt")
)

type conf struct {
	Header          string `json:"header"`
	Query           string `json:"query"`
	Cookie          string `json:"cookie"`
	HideCredentials bool   `json:"hide_credentials"`
	KeyClaim        string `json:"key_claim_name"`
	Anonymous       string `json:"anonymous_consumer"`
}

func decode(raw json.RawMessage) (conf, error) {
	c := conf{Header: "authorization", Query: "jwt", Cookie: "jwt", KeyClaim: "key"}
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("cannot decode: %w", err)
	}
	return c, nil
}

// Check validates a route's jwt-auth configuration (the admin API's
// write-time check).
func Check(raw json.RawMessage) error {
	_, err := decode(raw)
	return err
}

// cred is one consumer's verification key.
type cred struct {
	consumer *admingw.Consumer
	alg      string
	key      any // []byte for HMAC, crypto.PublicKey otherwise
	leeway   time.Duration
}

type jwtAuth struct {
	plugin.AuthBase
	header, query, cookie []byte
	hide                  bool
	keyClaim              string
	creds                 map[string]*cred
	maxLeeway             time.Duration
}

// New compiles a jwt-auth configuration.
func New(raw json.RawMessage, env *plugin.Env, owner string) (plugin.Plugin, error) {
	c, err := decode(raw)
	if err != nil {
		return nil, err
	}
	creds, err := plugin.CredentialIndex(env, Name, func(_ string, con *admingw.Consumer, conf json.RawMessage) (*cred, bool) {
		return credential(env, con, conf)
	})
	if err != nil {
		return nil, err
	}
	p := &jwtAuth{header: []byte(c.Header), query: []byte(c.Query), cookie: []byte(c.Cookie), hide: c.HideCredentials,
		keyClaim: c.KeyClaim, creds: creds}
	for _, cr := range p.creds {
		p.maxLeeway = max(p.maxLeeway, cr.leeway)
	}
	if err := p.SetAnonymous(env, c.Anonymous); err != nil {
		return nil, err
	}
	return p, nil
}

// credential compiles one jwt-auth credential's key. A credential whose
// key does not parse is left out (its consumer cannot authenticate) and
// logged without the key material.
func credential(env *plugin.Env, con *admingw.Consumer, conf json.RawMessage) (*cred, bool) {
	var cc struct {
		Secret      string `json:"secret"`
		Algorithm   string `json:"algorithm"`
		PublicKey   string `json:"public_key"`
		Base64      bool   `json:"base64_secret"`
		GracePeriod int64  `json:"lifetime_grace_period"`
	}
	if err := json.Unmarshal(conf, &cc); err != nil {
		return nil, false
	}
	if cc.Algorithm == "" {
		cc.Algorithm = "HS256"
	}
	cr := &cred{consumer: con, alg: cc.Algorithm, leeway: time.Duration(cc.GracePeriod) * time.Second}
	var err error
	switch cc.Algorithm {
	case "HS256", "HS512":
		if cc.Base64 {
			var b []byte
			if b, err = base64.StdEncoding.DecodeString(cc.Secret); err == nil {
				cr.key = b
			}
		} else {
			cr.key = []byte(cc.Secret)
		}
	case "RS256":
		var pk crypto.PublicKey
		pk, err = jwt.ParseRSAPublicKeyFromPEM([]byte(cc.PublicKey))
		cr.key = pk
	case "ES256":
		var pk crypto.PublicKey
		pk, err = jwt.ParseECPublicKeyFromPEM([]byte(cc.PublicKey))
		cr.key = pk
	default:
		err = errors.New("unsupported algorithm " + cc.Algorithm)
	}
	if err != nil || cr.key == nil {
		if env.Log != nil {
			env.Log.Warn("jwt-auth credential left out: its key does not parse", "consumer", con.Username, "algorithm", cc.Algorithm)
		}
		return nil, false
	}
	return cr, true
}

func (p *jwtAuth) Phases() plugin.Phase { return plugin.Rewrite }

// token finds the JWT and says where it came from (1 header, 2 query, 3
// cookie).
func (p *jwtAuth) token(c *plugin.Ctx) ([]byte, int) {
	if h := c.R.Request.Header.PeekBytes(p.header); len(h) > 0 {
		if len(h) > 7 && (h[0]|0x20) == 'b' && string(h[1:7]) == "earer " {
			h = h[7:]
		}
		return h, 1
	}
	if q := c.R.QueryArgs().PeekBytes(p.query); len(q) > 0 {
		return q, 2
	}
	if ck := c.R.Request.Header.CookieBytes(p.cookie); len(ck) > 0 {
		return ck, 3
	}
	return nil, 0
}

func (p *jwtAuth) Rewrite(c *plugin.Ctx) bool {
	tok, from := p.token(c)
	if from == 0 {
		return p.Fail(c, bodyMissing)
	}
	var cr *cred
	claims := jwt.MapClaims{}
	var keyErr []byte
	_, err := jwt.ParseWithClaims(string(tok), claims, func(t *jwt.Token) (any, error) {
		k, ok := claims[p.keyClaim].(string)
		if !ok || k == "" {
			keyErr = bodyNoKey
			return nil, errors.New("no key claim")
		}
		if cr = p.creds[k]; cr == nil {
			keyErr = bodyBadKey
			return nil, errors.New("unknown key")
		}
		if t.Method.Alg() != cr.alg {
			return nil, errors.New("algorithm mismatch")
		}
		return cr.key, nil
	}, jwt.WithLeeway(p.maxLeeway), jwt.WithValidMethods([]string{"HS256", "HS512", "RS256", "ES256"}))
	if err != nil {
		switch {
		case keyErr != nil:
			return p.Fail(c, keyErr)
		case errors.Is(err, jwt.ErrTokenMalformed):
			return p.Fail(c, bodyInvalid)
		default:
			return p.Fail(c, bodyNotVerify)
		}
	}
	if cr.leeway < p.maxLeeway && !withinGrace(claims, cr.leeway, time.Now()) {
		return p.Fail(c, bodyNotVerify)
	}
	c.SetConsumer(cr.consumer)
	if p.hide {
		switch from {
		case 1:
			c.R.Request.Header.DelBytes(p.header)
		case 2:
			c.R.QueryArgs().DelBytes(p.query)
			c.R.URI().SetQueryStringBytes(c.R.QueryArgs().AppendBytes(c.Buf[:0]))
		case 3:
			c.R.Request.Header.DelCookieBytes(p.cookie)
		}
	}
	return true
}

// withinGrace re-checks exp and nbf with the credential's own grace period
// (the parser allowed the largest one of the snapshot, as the credential
// is known only once the token is decoded).
func withinGrace(claims jwt.MapClaims, leeway time.Duration, now time.Time) bool {
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil && now.After(exp.Add(leeway)) {
		return false
	}
	if nbf, err := claims.GetNotBefore(); err == nil && nbf != nil && now.Add(leeway).Before(nbf.Time) {
		return false
	}
	return true
}
