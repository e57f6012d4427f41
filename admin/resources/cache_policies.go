package resources

// cache_policies: cache matching non-streaming model responses.
// Reference: docs/CONFIG.md.

import (
	"strconv"
	"time"
)

// Cache backends and match modes.
const (
	CacheBackendMemory = "memory" // per replica, in process
	CacheBackendRedis  = "redis"  // the deployment's shared key-value store
	CacheMatchExact    = "exact"
	CacheMatchSemantic = "semantic"
)

// DefaultCacheMaxEntryBytes is max_entry_bytes when unset (1 MiB).
const DefaultCacheMaxEntryBytes = 1 << 20

// CachePolicy is one cache_policies entry.
type CachePolicy struct {
	Index int
	ID    string
	Name  string

	Backend       string // CacheBackendMemory (default) or CacheBackendRedis
	Match         string // CacheMatchExact (default) or CacheMatchSemantic
	TTLSeconds    int64
	Models        []string // aliases or single-'*' globs; nil: every model
	Semantic      *CacheSemantic
	MaxEntryBytes int64  // responses larger than this are not stored
	Namespace     string // key prefix; default Name
	Enabled       bool
}

// CacheSemantic is the semantic block of a semantic cache policy.
type CacheSemantic struct {
	EmbeddingModelName string
	EmbeddingModel     *Model // a direct model with an embedding block
	Threshold          float64
}

// TTL is the entry lifetime.
func (c *CachePolicy) TTL() time.Duration { return time.Duration(c.TTLSeconds) * time.Second }

// AppliesTo reports whether the policy is enabled and covers model alias m.
func (c *CachePolicy) AppliesTo(m string) bool {
	if !c.Enabled {
		return false
	}
	if c.Models == nil {
		return true
	}
	for _, g := range c.Models {
		if GlobMatch(g, m) {
			return true
		}
	}
	return false
}

var cacheNamespaceRE = lazyRE(`^[A-Za-z0-9_.:-]{1,64}$`)

func (l *loader) decodeCachePolicy(e *entry, o *obj) {
	c := &CachePolicy{Index: e.idx, Backend: CacheBackendMemory, Match: CacheMatchExact, MaxEntryBytes: DefaultCacheMaxEntryBytes}
	c.Name = o.reqStr("name")
	e.setID("name", c.Name)
	c.ID = DeriveID(KindCachePolicy, c.Name)

	if v, ok := o.enum("backend", CacheBackendMemory, CacheBackendRedis); ok {
		c.Backend = v
	}
	matchOK := true
	if o.has("match") {
		c.Match, matchOK = o.enum("match", CacheMatchExact, CacheMatchSemantic)
	} else {
		o.raw("match")
	}
	if !o.has("ttl_seconds") {
		o.raw("ttl_seconds")
		o.errf("ttl_seconds", "required")
	}
	c.TTLSeconds, _ = o.intMin("ttl_seconds", 1)
	if o.has("models") {
		if o.requireSeq("models", "model (omit the field to cache every model)", false) {
			c.Models = o.globList("models")
		}
	} else {
		o.raw("models")
	}
	switch {
	case !matchOK:
		o.raw("semantic")
	case c.Match == CacheMatchSemantic:
		so := o.sub("semantic")
		if so == nil {
			if !o.has("semantic") {
				o.errf("semantic", "required with match semantic (semantic.embedding_model, semantic.threshold)")
			}
			break
		}
		s := &CacheSemantic{}
		s.EmbeddingModelName = so.reqStr("embedding_model")
		if !so.has("threshold") {
			so.raw("threshold")
			so.errf("threshold", "required (0.0 to 1.0)")
		}
		s.Threshold, _ = so.floatRange("threshold", 0, 1)
		so.finish()
		c.Semantic = s
	default:
		o.rejectSet("semantic", "accepted only with match semantic")
	}
	if v, ok := o.intMin("max_entry_bytes", 1); ok {
		c.MaxEntryBytes = v
	}
	c.Namespace = c.Name
	if v, ok := o.str("namespace"); ok {
		if !cacheNamespaceRE().MatchString(v) {
			o.errf("namespace", "must be 1 to 64 letters, digits, '_', '.', ':' or '-'")
		}
		c.Namespace = v
	}
	c.Enabled = o.boolDefault("enabled", true)
	l.res.CachePolicies = append(l.res.CachePolicies, c)
}

func (l *loader) resolveCachePolicies(mi *modelIndex) {
	for _, c := range l.res.CachePolicies {
		e := entryOf(CollCachePolicies, c.Index, "name", c.Name)
		for i, g := range c.Models {
			if !hasStar(g) && mi.byName[g] == nil {
				l.d.errAt(e, "models["+strconv.Itoa(i)+"]", "unknown model \""+g+"\"; available: "+quoteList(mi.names))
			}
		}
		if s := c.Semantic; s != nil {
			s.EmbeddingModel = l.direct(mi, e, "semantic.embedding_model", s.EmbeddingModelName, true)
		}
	}
}
