package cache

// The semantic memory store: per replica, bounded by bytes like Memory.
// Entries are grouped by scope (a hash of the request without its prompt,
// AppendScope); each scope keeps its prompt vectors back to back in a
// vecindex.Flat, so a lookup scores only that scope's vectors. Eviction
// (LRU over the shard, TTL on lookup) removes the vector with the entry.

import (
	"sync"
	"time"

	"gw/edge/vecindex"
)

const semShards = 16

// SemMemory is the per-replica semantic store. Call NewSemMemory. Safe for
// concurrent use.
type SemMemory struct {
	shards   [semShards]semShard
	perShard int64
	now      func() int64 // unix ns; tests replace it
}

type semShard struct {
	mu     sync.Mutex
	scopes map[[2]uint64]*semScope
	lru    lruList[semEntry, *semEntry]
	_      [40]byte
}

type semScope struct {
	key   [2]uint64
	check uint64
	set   *vecindex.Flat
	ents  []*semEntry // ents[i] owns the set's slot i
}

type semEntry struct {
	scope *semScope
	slot  int
	s     stored[semEntry]
}

func (se *semEntry) lru() *stored[semEntry] { return &se.s }

// NewSemMemory returns a store holding at most maxBytes of entries
// (bodies, content types, vectors and a fixed overhead each).
func NewSemMemory(maxBytes int64) *SemMemory {
	m := &SemMemory{perShard: max(maxBytes/semShards, 1), now: func() int64 { return time.Now().UnixNano() }}
	for i := range m.shards {
		m.shards[i].scopes = make(map[[2]uint64]*semScope)
	}
	return m
}

func (m *SemMemory) shard(k *Key) *semShard { return &m.shards[k.Lo&(semShards-1)] }

// GetNear returns the entry of r.Scope whose prompt vector scores highest
// against r.Vec, if it reaches r.Threshold. The nearest entry having
// expired is a miss (and it is dropped).
func (m *SemMemory) GetNear(r *Request) (Entry, Status) {
	k := &r.Scope
	s := m.shard(k)
	now := m.now()
	s.mu.Lock()
	sc := s.scopes[[2]uint64{k.Hi, k.Lo}]
	if sc == nil || sc.check != k.Check || sc.set.Dims() != len(r.Vec) {
		s.mu.Unlock()
		return Entry{}, Miss
	}
	i, _ := sc.set.Best(r.Vec, r.Threshold)
	if i < 0 {
		s.mu.Unlock()
		return Entry{}, Miss
	}
	se := sc.ents[i]
	if se.s.expires <= now {
		s.remove(se)
		s.mu.Unlock()
		return Entry{}, Miss
	}
	s.lru.touch(se)
	e := se.s.e
	s.mu.Unlock()
	return e, Hit
}

// SetNear stores a copy of e with r.Vec in r.Scope for ttl. An entry
// larger than a shard's share of the bound is not stored.
func (m *SemMemory) SetNear(r *Request, e Entry, ttl time.Duration) {
	k := &r.Scope
	// The vector costs 4 bytes a dimension as float32 and about one more
	// as the Flat's search codes.
	size := int64(len(e.Body)+len(e.ContentType)+5*len(r.Vec)) + 2*entryOverhead
	if size > m.perShard || ttl <= 0 || len(r.Vec) == 0 {
		return
	}
	se := &semEntry{s: newStored[semEntry](e, m.now(), ttl, size)}
	s := m.shard(k)
	key := [2]uint64{k.Hi, k.Lo}
	s.mu.Lock()
	sc := s.scopes[key]
	if sc != nil && (sc.check != k.Check || sc.set.Dims() != len(r.Vec)) {
		// A colliding scope, or one embedded by a model of another length
		// (the policy changed): the new entry replaces it.
		for len(sc.ents) > 0 {
			s.remove(sc.ents[len(sc.ents)-1])
		}
		sc = nil
	}
	if sc == nil {
		sc = &semScope{key: key, check: k.Check, set: vecindex.NewFlat(len(r.Vec))}
		s.scopes[key] = sc
	}
	// The same prompt stored again (a no-cache refresh, or two misses
	// racing) replaces the old entry instead of adding a twin.
	if i, score := sc.set.Best(r.Vec, 1); i >= 0 && score >= 1-vecindex.Epsilon {
		s.remove(sc.ents[i])
		if s.scopes[key] == nil {
			s.scopes[key] = sc
		}
	}
	se.scope = sc
	se.slot = sc.set.Add(r.Vec)
	sc.ents = append(sc.ents, se)
	s.lru.add(se)
	for old := s.lru.over(m.perShard); old != nil; old = s.lru.over(m.perShard) {
		s.remove(old)
	}
	s.mu.Unlock()
}

// Len returns the number of entries (tests, metrics).
func (m *SemMemory) Len() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		for _, sc := range s.scopes {
			n += len(sc.ents)
		}
		s.mu.Unlock()
	}
	return n
}

// Bytes returns the bytes charged against the bound.
func (m *SemMemory) Bytes() int64 {
	var n int64
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += s.lru.bytes
		s.mu.Unlock()
	}
	return n
}

// remove drops se: its LRU links, its vector (the scope's last vector
// moves into its slot) and, once empty, its scope.
func (s *semShard) remove(se *semEntry) {
	s.lru.drop(se)
	sc := se.scope
	if moved := sc.set.Remove(se.slot); moved >= 0 {
		sc.ents[se.slot] = sc.ents[moved]
		sc.ents[se.slot].slot = se.slot
	}
	sc.ents[len(sc.ents)-1] = nil
	sc.ents = sc.ents[:len(sc.ents)-1]
	if len(sc.ents) == 0 && s.scopes[sc.key] == sc {
		delete(s.scopes, sc.key)
	}
}
