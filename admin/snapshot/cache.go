package snapshot

import (
	"time"

	"gw/admin/resources"
)

// CacheRule is a cache policy compiled for the aliases it covers.
type CacheRule struct {
	Name          string
	Namespace     string
	Backend       string // resources.CacheBackendMemory or CacheBackendRedis
	TTL           time.Duration
	MaxEntryBytes int
	// Semantic policies (match: semantic): the embedding model's plan and
	// the similarity threshold; Embed is nil for an exact policy.
	Embed     *Plan
	Threshold float32
}

const maxCacheTTL = 100 * 365 * 24 * time.Hour

// compileCache hangs on each plan the first enabled policy (in file order)
// whose models cover its alias.
func compileCache(res *resources.Resources, plans []*Plan) {
	var rules []*CacheRule
	var pols []*resources.CachePolicy
	for _, c := range res.CachePolicies {
		if !c.Enabled {
			continue
		}
		var emb *Plan
		var th float32
		if c.Match == resources.CacheMatchSemantic {
			if c.Semantic == nil || c.Semantic.EmbeddingModel == nil {
				continue // the loader reported it
			}
			for _, p := range plans {
				if p.Alias == c.Semantic.EmbeddingModel.DisplayName {
					emb = p
				}
			}
			if emb == nil {
				continue
			}
			th = float32(c.Semantic.Threshold)
		}
		// ttl_seconds has no upper bound in the file: a century stands for
		// anything longer (and keeps expiry times from overflowing).
		ttl := maxCacheTTL
		if c.TTLSeconds < int64(maxCacheTTL/time.Second) {
			ttl = c.TTL()
		}
		rules = append(rules, &CacheRule{Name: c.Name, Namespace: c.Namespace, Backend: c.Backend, TTL: ttl,
			MaxEntryBytes: int(min(c.MaxEntryBytes, int64(1)<<40)), Embed: emb, Threshold: th})
		pols = append(pols, c)
	}
	for _, p := range plans {
		for i, c := range pols {
			if c.AppliesTo(p.Alias) {
				p.Cache = rules[i]
				break
			}
		}
	}
}
