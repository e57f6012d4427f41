package authn

import (
	"bytes"
	"hash/maphash"
	"sync"

	"gw/admin/snapshot"
)

// tokenCache remembers verified tokens so a repeat caller costs a hash and a
// map read, not a signature check. Entries are keyed by a seeded hash of the
// token and hold the token itself: a hit compares the whole token, so a hash
// collision can never borrow another token's identity. An entry is valid only
// for the snapshot generation that resolved it and until the token's exp
// (plus leeway). The cache is bounded; a full shard drops expired or stale
// entries first, then arbitrary ones.
type tokenCache struct {
	seed     maphash.Seed
	perShard int
	shards   [cacheShards]cacheShard
}

const cacheShards = 32

type cacheShard struct {
	mu sync.RWMutex
	m  map[uint64]*cachedToken
	_  [32]byte // keep shards' locks on separate cache lines
}

type cachedToken struct {
	token  []byte
	gen    uint64
	caller *snapshot.Caller
	until  int64 // unix nanoseconds; the entry is valid strictly before
}

func newTokenCache(capacity int) *tokenCache {
	c := &tokenCache{seed: maphash.MakeSeed(), perShard: max(capacity/cacheShards, 1)}
	return c
}

// get returns the cached caller of tok, or nil. Allocates nothing.
func (c *tokenCache) get(tok []byte, gen uint64, now int64) *snapshot.Caller {
	h := maphash.Bytes(c.seed, tok)
	sh := &c.shards[h%cacheShards]
	sh.mu.RLock()
	e := sh.m[h]
	sh.mu.RUnlock()
	if e == nil || e.gen != gen || now >= e.until || !bytes.Equal(e.token, tok) {
		return nil
	}
	return e.caller
}

func (c *tokenCache) put(tok []byte, gen uint64, caller *snapshot.Caller, until, now int64) {
	if now >= until {
		return
	}
	h := maphash.Bytes(c.seed, tok)
	e := &cachedToken{token: bytes.Clone(tok), gen: gen, caller: caller, until: until}
	sh := &c.shards[h%cacheShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m == nil {
		sh.m = make(map[uint64]*cachedToken, c.perShard)
	}
	if _, ok := sh.m[h]; !ok && len(sh.m) >= c.perShard {
		for k, old := range sh.m {
			if old.gen != gen || now >= old.until {
				delete(sh.m, k)
			}
		}
		for k := range sh.m {
			if len(sh.m) < c.perShard {
				break
			}
			delete(sh.m, k) // map order is unspecified: an arbitrary victim
		}
	}
	sh.m[h] = e
}

// len counts the entries (tests).
func (c *tokenCache) len() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.RLock()
		n += len(sh.m)
		sh.mu.RUnlock()
	}
	return n
}
