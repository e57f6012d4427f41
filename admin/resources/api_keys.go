package resources

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
)

// APIKey is one api_keys entry (a caller key). The plaintext key is hashed at
// load and discarded; only Hash is kept.
type APIKey struct {
	Index         int
	ID            string
	DisplayName   string
	Hash          [32]byte
	HashSource    string // "key_env" or "key_hash", for error messages
	AllowedModels []string
	RateLimit     *RateLimit
	MCPRateLimits []MCPRateLimit
	MCPAccess     *MCPAccess // nil: no MCP tool access
	AllowedAgents []string
	AllowedRoutes []string
	JWTSubject    string
	JWTProvider   string
	ExpiresAt     time.Time // zero: never
	Disabled      bool
	TeamID        string
	UserID        string
	UserName      string
}

// MCPRateLimit is one mcp_rate_limits entry.
type MCPRateLimit struct {
	Server string
	Limit  RateLimit
}

// MCPAccess is an api key's mcp_access block.
type MCPAccess struct {
	Allow []string
	Deny  []string
}

func (l *loader) decodeAPIKey(e *entry, o *obj) {
	k := &APIKey{Index: e.idx}
	k.DisplayName = o.reqStr("display_name")
	e.setID("display_name", k.DisplayName)
	k.ID = DeriveID(KindAPIKey, k.DisplayName)

	hasEnv, hasHash := o.has("key_env"), o.has("key_hash")
	switch {
	case hasEnv && hasHash:
		o.raw("key_env")
		o.raw("key_hash")
		o.errf("key_env", "set exactly one of key_env and key_hash, not both")
	case !hasEnv && !hasHash:
		o.raw("key_env")
		o.raw("key_hash")
		o.errf("key_env", "required (or key_hash); the file never stores plaintext keys")
	case hasEnv:
		k.HashSource = "key_env"
		name, ok := o.strVerbatim("key_env")
		if !ok {
			break
		}
		switch {
		case strings.HasPrefix(name, "${") || strings.HasPrefix(name, "$"):
			o.errf("key_env", "must be a bare variable name, not ${...}")
		case !validVarName(name):
			o.errf("key_env", "must be an environment variable name (letters, digits, '_')")
		case strings.HasPrefix(name, "GW_"):
			o.errf("key_env", "variable \""+name+"\" uses the GW_ prefix, which is reserved for startup overrides")
		default:
			v, set := l.d.env(name)
			if !set {
				o.errf("key_env", "environment variable \""+name+"\" is not set")
			} else if v == "" {
				o.errf("key_env", "environment variable \""+name+"\" is empty")
			} else {
				k.Hash = sha256.Sum256([]byte(v))
			}
		}
	case hasHash:
		k.HashSource = "key_hash"
		h, ok := o.str("key_hash")
		if !ok {
			break
		}
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != 32 || strings.ToLower(h) != h {
			o.errf("key_hash", "must be the lowercase hex SHA-256 of the key (64 characters)")
			break
		}
		copy(k.Hash[:], b)
	}

	if list, ok := o.strList("allowed_models"); ok {
		for i, g := range list {
			if checkGlob(o, "allowed_models", i, g) {
				k.AllowedModels = append(k.AllowedModels, g)
			}
		}
	}
	if rl := o.sub("rate_limit"); rl != nil {
		k.RateLimit = decodeRateLimit(rl, true)
	}
	if mo := o.sub("mcp_rate_limits"); mo != nil {
		for i, key := range mo.keys {
			mo.used[i] = true
			so := o.d.newObj(e, joinPath(mo.path, key.Value), mo.vals[i])
			if so == nil {
				continue
			}
			k.MCPRateLimits = append(k.MCPRateLimits, MCPRateLimit{Server: key.Value, Limit: *decodeRateLimit(so, false)})
		}
	}
	if ma := o.sub("mcp_access"); ma != nil {
		acc := &MCPAccess{Allow: []string{}}
		if !ma.present("allow") {
			ma.errf("allow", "required (use [\"*\"] to allow every tool, [] for none)")
		}
		if list, ok := ma.strList("allow"); ok {
			for i, g := range list {
				if checkGlob(ma, "allow", i, g) {
					acc.Allow = append(acc.Allow, g)
				}
			}
		}
		if list, ok := ma.strList("deny"); ok {
			for i, g := range list {
				if checkGlob(ma, "deny", i, g) {
					acc.Deny = append(acc.Deny, g)
				}
			}
		}
		ma.finish()
		k.MCPAccess = acc
	}
	for _, f := range []struct {
		name string
		dst  *[]string
	}{{"allowed_agents", &k.AllowedAgents}, {"allowed_routes", &k.AllowedRoutes}} {
		if list, ok := o.strList(f.name); ok {
			for i, g := range list {
				if checkGlob(o, f.name, i, g) {
					*f.dst = append(*f.dst, g)
				}
			}
		}
	}
	k.JWTSubject, _ = o.str("jwt_subject")
	k.JWTProvider, _ = o.str("jwt_provider")
	switch {
	case o.has("jwt_subject") && !o.has("jwt_provider"):
		o.errf("jwt_provider", "required when jwt_subject is set")
	case o.has("jwt_provider") && !o.has("jwt_subject"):
		o.errf("jwt_subject", "required when jwt_provider is set")
	}
	if s, ok := o.str("expires_at"); ok {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			o.errf("expires_at", "must be an RFC 3339 timestamp such as 2027-01-31T00:00:00Z")
		}
		k.ExpiresAt = t
	}
	k.Disabled = o.boolDefault("disabled", false)
	k.TeamID, _ = o.str("team_id")
	k.UserID, _ = o.str("user_id")
	k.UserName, _ = o.str("user_name")
	l.res.APIKeys = append(l.res.APIKeys, k)
}

// Active reports whether the key may authenticate at time now.
func (k *APIKey) Active(now time.Time) bool {
	return !k.Disabled && (k.ExpiresAt.IsZero() || now.Before(k.ExpiresAt))
}
