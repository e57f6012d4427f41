package cache

// The memory store: per replica, bounded by bytes, entries expire after
// their TTL and the least recently used go first when a shard is full.
// Keys are spread over memShards shards, each a map and an intrusive LRU
// list under one mutex: a lookup is one short critical section, and a miss
// allocates nothing.

import (
	"sync"
	"time"
)

const memShards = 64

// entryOverhead approximates a stored entry's bookkeeping (map slot, list
// links, key, slice headers), charged against the byte bound.
const entryOverhead = 160

// Memory is the per-replica store. The zero value is not usable; call
// NewMemory. Safe for concurrent use.
type Memory struct {
	shards   [memShards]memShard
	perShard int64
	now      func() int64 // unix ns; tests replace it
}

type memShard struct {
	mu  sync.Mutex
	m   map[[2]uint64]*memEntry
	lru lruList[memEntry, *memEntry]
	_   [40]byte // keeps neighbouring shards' locks off one cache line
}

type memEntry struct {
	key   [2]uint64
	check uint64
	s     stored[memEntry]
}

func (me *memEntry) lru() *stored[memEntry] { return &me.s }

// NewMemory returns a store holding at most maxBytes of entries (bodies,
// content types and a fixed overhead each).
func NewMemory(maxBytes int64) *Memory {
	m := &Memory{perShard: max(maxBytes/memShards, 1), now: func() int64 { return time.Now().UnixNano() }}
	for i := range m.shards {
		m.shards[i].m = make(map[[2]uint64]*memEntry)
	}
	return m
}

func (m *Memory) shard(k *Key) *memShard { return &m.shards[k.Lo&(memShards-1)] }

// Get returns the entry of k. An expired entry, or one whose check hash
// differs (a collision of the 128-bit key), is a miss.
func (m *Memory) Get(k *Key) (Entry, Status) {
	s := m.shard(k)
	now := m.now()
	s.mu.Lock()
	me := s.m[[2]uint64{k.Hi, k.Lo}]
	if me == nil {
		s.mu.Unlock()
		return Entry{}, Miss
	}
	if me.s.expires <= now {
		s.remove(me)
		s.mu.Unlock()
		return Entry{}, Miss
	}
	if me.check != k.Check {
		s.mu.Unlock()
		return Entry{}, Miss
	}
	s.lru.touch(me)
	e := me.s.e
	s.mu.Unlock()
	return e, Hit
}

// Set stores a copy of e under k for ttl. An entry larger than a shard's
// share of the bound is not stored.
func (m *Memory) Set(k *Key, e Entry, ttl time.Duration) {
	size := int64(len(e.Body)+len(e.ContentType)) + entryOverhead
	if size > m.perShard || ttl <= 0 {
		return
	}
	me := &memEntry{key: [2]uint64{k.Hi, k.Lo}, check: k.Check, s: newStored[memEntry](e, m.now(), ttl, size)}
	s := m.shard(k)
	s.mu.Lock()
	if old := s.m[me.key]; old != nil {
		s.remove(old)
	}
	s.m[me.key] = me
	s.lru.add(me)
	for old := s.lru.over(m.perShard); old != nil; old = s.lru.over(m.perShard) {
		s.remove(old)
	}
	s.mu.Unlock()
}

// Len returns the number of entries (tests, metrics).
func (m *Memory) Len() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// Bytes returns the bytes charged against the bound.
func (m *Memory) Bytes() int64 {
	var n int64
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += s.lru.bytes
		s.mu.Unlock()
	}
	return n
}

func (s *memShard) remove(me *memEntry) {
	s.lru.drop(me)
	delete(s.m, me.key)
}
