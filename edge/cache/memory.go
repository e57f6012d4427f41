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
	mu         sync.Mutex
	m          map[[2]uint64]*memEntry
	head, tail *memEntry // head: most recently used
	bytes      int64
	_          [40]byte // keeps neighbouring shards' locks off one cache line
}

type memEntry struct {
	key        [2]uint64
	check      uint64
	expires    int64 // unix ns
	size       int64
	e          Entry
	prev, next *memEntry
}

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
	if me.expires <= now {
		s.remove(me)
		s.mu.Unlock()
		return Entry{}, Miss
	}
	if me.check != k.Check {
		s.mu.Unlock()
		return Entry{}, Miss
	}
	if s.head != me {
		s.unlink(me)
		s.pushFront(me)
	}
	e := me.e
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
	// One allocation holds both copies.
	buf := make([]byte, len(e.ContentType)+len(e.Body))
	n := copy(buf, e.ContentType)
	copy(buf[n:], e.Body)
	me := &memEntry{key: [2]uint64{k.Hi, k.Lo}, check: k.Check, expires: m.now() + int64(ttl), size: size,
		e: Entry{StatusCode: e.StatusCode, ContentType: buf[:n:n], Body: buf[n:]}}
	s := m.shard(k)
	s.mu.Lock()
	if old := s.m[me.key]; old != nil {
		s.remove(old)
	}
	s.m[me.key] = me
	s.pushFront(me)
	s.bytes += size
	for s.bytes > m.perShard && s.tail != nil {
		s.remove(s.tail)
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
		n += s.bytes
		s.mu.Unlock()
	}
	return n
}

func (s *memShard) remove(me *memEntry) {
	s.unlink(me)
	delete(s.m, me.key)
	s.bytes -= me.size
}

func (s *memShard) unlink(me *memEntry) {
	if me.prev != nil {
		me.prev.next = me.next
	} else {
		s.head = me.next
	}
	if me.next != nil {
		me.next.prev = me.prev
	} else {
		s.tail = me.prev
	}
	me.prev, me.next = nil, nil
}

func (s *memShard) pushFront(me *memEntry) {
	me.next = s.head
	if s.head != nil {
		s.head.prev = me
	}
	s.head = me
	if s.tail == nil {
		s.tail = me
	}
}
