package edge

// The cache stage (docs/CACHE.md): after the input policy and before
// dispatch, a request whose alias a cache policy covers is looked up; a
// hit answers with the stored bytes and ends the request (no upstream
// call, zero tokens and cost on the usage record); a miss goes on, and its
// 2xx answer, as the caller received it (after the output policy, in the
// caller's format, `model` the alias), is stored once dispatch wrote it.

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/valyala/fasthttp"

	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/cache"
	"gw/edge/embed"
	"gw/edge/usage"
	"gw/edge/vecindex"
)

// Caches are the response cache's stores; they outlive snapshots.
type Caches struct {
	mem, redis       *cache.Exact    // nil redis: no shared store configured
	semMem, semRedis *cache.Semantic // match: semantic policies
}

// NewCaches returns the stores of backends memory and redis, exact (m) and
// semantic (sm). A nil r (no shared store configured) makes redis policies
// answer cache_status error: always a miss, never a failed request.
func NewCaches(m *cache.Memory, sm *cache.SemMemory, r *cache.Redis) *Caches {
	cs := &Caches{mem: &cache.Exact{Store: m}, semMem: &cache.Semantic{Store: sm}}
	if r != nil {
		cs.redis = &cache.Exact{Store: r}
		cs.semRedis = &cache.Semantic{Store: r}
	}
	return cs
}

// cacheCall is a request's cache state.
type cacheCall struct {
	status cache.Status
	save   bool // store the answer (a keyed miss, error or no-cache bypass)
	m      cache.Matcher
	req    cache.Request
	buf    []byte // the canonical request; kept across calls
	// Semantic policies: the scope, the prompt text and its vector; kept
	// across calls.
	scope, txt []byte
	vec        []float32
}

func (cc *cacheCall) reset() {
	buf, scope, txt, vec := cc.buf[:0], cc.scope[:0], cc.txt[:0], cc.vec[:0]
	*cc = cacheCall{buf: buf, scope: scope, txt: txt, vec: vec}
}

var (
	noRedisWarned    atomic.Bool
	hdrCache         = []byte("x-gw-cache")
	hdrCacheControl  = []byte("Cache-Control")
	tokNoCache       = []byte("no-cache")
	tokNoStore       = []byte("no-store")
	cacheStatusBytes = [...][]byte{[]byte("none"), []byte("miss"), []byte("hit"), []byte("bypass"), []byte("error")}
	cacheUsageStatus = [...]string{usage.CacheNone, usage.CacheMiss, usage.CacheHit, usage.CacheBypass, usage.CacheError}
	cacheCounters    = [...]*metrics.Counter{nil,
		metrics.NewCounter(`gw_cache_requests_total{status="miss"}`),
		metrics.NewCounter(`gw_cache_requests_total{status="hit"}`),
		metrics.NewCounter(`gw_cache_requests_total{status="bypass"}`),
		metrics.NewCounter(`gw_cache_requests_total{status="error"}`)}
)

// cacheable: the surfaces whose buffered answers are cached. count_tokens
// is cheap and unbilled; the other endpoints (images, audio, rerank,
// completions, videos) are not in this build's cache.
func cacheable(s *surface) bool {
	return s == surfChat || s == surfMessages || s == surfResponses || s == surfEmbeddings
}

// cacheLookup is the cache stage. It returns false after answering a hit.
func (p *Proxy) cacheLookup(ctx *fasthttp.RequestCtx, c *call) bool {
	rule := c.plan.Cache
	if rule == nil || p.Cache == nil || !cacheable(c.surf) {
		return true
	}
	cc := &c.cache
	if c.cr.Stream {
		// Streams are neither looked up nor stored (docs/CACHE.md).
		return c.cacheDone(ctx, cache.Bypass)
	}
	noCache, noStore := cacheControl(ctx.Request.Header.PeekBytes(hdrCacheControl))
	if noStore {
		return c.cacheDone(ctx, cache.Bypass)
	}
	body := c.origBody
	if body == nil {
		body = c.body
	}
	var ok bool
	cc.buf, ok = cache.AppendCanonical(cc.buf[:0], c.surf.protocol, c.plan.Alias, body)
	if !ok {
		return c.cacheDone(ctx, cache.Bypass)
	}
	cc.req = cache.Request{Namespace: rule.Namespace, Canon: cc.buf}
	if rule.Embed != nil {
		if cc.scope, cc.txt, ok = cache.AppendScope(cc.scope[:0], cc.txt[:0], c.surf.protocol, c.plan.Alias, body); !ok {
			return c.cacheDone(ctx, cache.Bypass)
		}
	}
	switch rule.Backend {
	case resources.CacheBackendRedis:
		if p.Cache.redis == nil {
			if noRedisWarned.CompareAndSwap(false, true) && p.Logger != nil {
				p.Logger.Warn("cache: a redis cache policy applies but shared_store.redis.address is not set; its lookups answer cache_status error (a miss)",
					"policy", rule.Name)
			}
			return c.cacheDone(ctx, cache.Error)
		}
		cc.m = p.Cache.redis
		if rule.Embed != nil {
			cc.m = p.Cache.semRedis
		}
	default:
		cc.m = p.Cache.mem
		if rule.Embed != nil {
			cc.m = p.Cache.semMem
		}
	}
	if rule.Embed != nil && !p.cacheEmbed(c, rule) {
		return c.cacheDone(ctx, cache.Error) // a miss that stores nothing
	}
	cc.save = true
	if noCache {
		return c.cacheDone(ctx, cache.Bypass) // fetched fresh, and stored
	}
	e, st := cc.m.Lookup(&cc.req)
	if st != cache.Hit {
		return c.cacheDone(ctx, st)
	}
	cc.save = false
	c.cacheDone(ctx, cache.Hit)
	answer := e.Body
	if c.outputOn() {
		// The stored answer passed the output policy when it was stored;
		// it passes the policy in force now as well (a reload may have
		// attached a guardrail since).
		var pass bool
		if answer, pass = p.guardAnswer(ctx, c, answer, c.surf.guardNative); !pass {
			return false
		}
	}
	ctx.SetStatusCode(e.StatusCode)
	if len(e.ContentType) > 0 {
		ctx.Response.Header.SetContentTypeBytes(e.ContentType)
	} else {
		ctx.SetContentType("application/json")
	}
	ctx.Response.SetBody(answer)
	c.respBytes = len(answer)
	c.ttfb = time.Since(c.start)
	return false
}

// cacheEmbed embeds the prompt of a semantic policy's request (cc.txt)
// with the policy's embedding model, under that model's timeout and
// retries, and completes cc.req with the vector and the scope. It reports
// false when the embedding fails: the request then goes upstream as a
// miss (cache_status error), never failing for it.
func (p *Proxy) cacheEmbed(c *call, rule *snapshot.CacheRule) bool {
	cc := &c.cache
	res := embed.AcquireResult()
	defer embed.ReleaseResult(res)
	c.semBatch[0] = cc.txt
	err := embed.Embed(context.Background(), rule.Embed, c.semBatch[:], 0, res)
	c.semBatch[0] = nil
	if err == nil && !vecindex.Normalize(res.Vec(0)) {
		err = errors.New("embed: a zero vector")
	}
	if err != nil {
		if p.Logger != nil {
			p.Logger.Warn("cache: cannot embed the prompt for a semantic cache policy; served as a miss",
				"policy", rule.Name, "embedding_model", rule.Embed.Alias, "error", err.Error())
		}
		return false
	}
	cc.vec = append(cc.vec[:0], res.Vec(0)...)
	// The scope also names the embedding model: vectors of two models
	// are never compared.
	cc.scope = append(cc.scope, 0)
	cc.scope = append(cc.scope, rule.Embed.Alias...)
	cc.req.Scope = cache.Sum(rule.Namespace, cc.scope)
	cc.req.Vec, cc.req.Threshold = cc.vec, rule.Threshold
	return true
}

// cacheDone records the stage's outcome and its header; it returns true
// (the request goes on) for the stage's convenience.
func (c *call) cacheDone(ctx *fasthttp.RequestCtx, st cache.Status) bool {
	c.cache.status = st
	cacheCounters[st].Inc()
	ctx.Response.Header.SetBytesKV(hdrCache, cacheStatusBytes[st])
	return true
}

// cacheSave stores a buffered 2xx answer of a request the stage keyed. It
// runs after dispatch wrote the answer.
func (p *Proxy) cacheSave(ctx *fasthttp.RequestCtx, c *call) {
	cc := &c.cache
	if cc.status == cache.None || c.committed {
		return
	}
	// Error answers are written after a Reset of the response: the
	// header is set again.
	ctx.Response.Header.SetBytesKV(hdrCache, cacheStatusBytes[cc.status])
	st := ctx.Response.StatusCode()
	if !cc.save || st < 200 || st > 299 || c.errClass != "" {
		return
	}
	body := ctx.Response.Body()
	if len(body) > c.plan.Cache.MaxEntryBytes {
		return
	}
	cc.m.Save(&cc.req, cache.Entry{StatusCode: st, ContentType: ctx.Response.Header.ContentType(), Body: body}, c.plan.Cache.TTL)
}

// cacheControl reads the request's Cache-Control directives gw honours:
// no-cache (do not answer from the cache; store the fresh answer) and
// no-store (neither answer from nor write to the cache).
func cacheControl(v []byte) (noCache, noStore bool) {
	for len(v) > 0 {
		i := 0
		for i < len(v) && v[i] != ',' {
			i++
		}
		d := bytes.TrimSpace(v[:i])
		switch {
		case bytes.EqualFold(d, tokNoCache):
			noCache = true
		case bytes.EqualFold(d, tokNoStore):
			noStore = true
		}
		if i == len(v) {
			break
		}
		v = v[i+1:]
	}
	return noCache, noStore
}

// cacheUsage is the usage record's cache_status.
func (c *call) cacheUsage() string { return cacheUsageStatus[c.cache.status] }
