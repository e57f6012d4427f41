package cache

import (
	"strconv"
	"testing"
	"time"
)

func key(s string) *Key {
	k := Sum("ns", []byte(s))
	return &k
}

func TestMemoryHitMissExpiry(t *testing.T) {
	m := NewMemory(1 << 20)
	now := int64(1000)
	m.now = func() int64 { return now }
	if _, st := m.Get(key("a")); st != Miss {
		t.Fatalf("empty: %v", st)
	}
	body := []byte(`{"id":"x"}`)
	m.Set(key("a"), Entry{StatusCode: 200, ContentType: []byte("application/json"), Body: body}, time.Second)
	body[2] = 'X' // the store keeps its own copy
	e, st := m.Get(key("a"))
	if st != Hit || string(e.Body) != `{"id":"x"}` || string(e.ContentType) != "application/json" || e.StatusCode != 200 {
		t.Fatalf("hit: %v %+v", st, e)
	}
	if _, st := m.Get(key("b")); st != Miss {
		t.Fatalf("other key: %v", st)
	}
	now += int64(time.Second)
	if _, st := m.Get(key("a")); st != Miss {
		t.Fatalf("after ttl: %v", st)
	}
	if m.Len() != 0 || m.Bytes() != 0 {
		t.Fatalf("expired entry kept: len %d bytes %d", m.Len(), m.Bytes())
	}
}

// TestMemoryCheckHash: a 128-bit key whose check hash differs (a
// collision) is a miss, not another request's answer.
func TestMemoryCheckHash(t *testing.T) {
	m := NewMemory(1 << 20)
	k := *key("a")
	m.Set(&k, Entry{StatusCode: 200, Body: []byte("{}")}, time.Minute)
	k.Check++
	if _, st := m.Get(&k); st != Miss {
		t.Fatalf("colliding key: %v", st)
	}
}

// TestMemoryBoundLRU: the byte bound holds and the least recently used
// entry goes first.
func TestMemoryBoundLRU(t *testing.T) {
	const per = 1000
	m := NewMemory(per * memShards)
	body := make([]byte, 300) // 460 bytes with overhead: two fit in a shard
	var same []*Key           // keys of one shard
	for i := 0; len(same) < 3; i++ {
		k := key(strconv.Itoa(i))
		if k.Lo&(memShards-1) == 0 {
			same = append(same, k)
		}
	}
	m.Set(same[0], Entry{StatusCode: 200, Body: body}, time.Minute)
	m.Set(same[1], Entry{StatusCode: 200, Body: body}, time.Minute)
	m.Get(same[0]) // same[1] is now the least recently used
	m.Set(same[2], Entry{StatusCode: 200, Body: body}, time.Minute)
	if _, st := m.Get(same[1]); st != Miss {
		t.Fatal("LRU entry not evicted")
	}
	for _, k := range []*Key{same[0], same[2]} {
		if _, st := m.Get(k); st != Hit {
			t.Fatal("recent entry evicted")
		}
	}
	if b := m.Bytes(); b > per {
		t.Fatalf("shard holds %d bytes; bound %d", b, per)
	}
	// An entry larger than a shard's share is not stored at all.
	m.Set(key("big"), Entry{StatusCode: 200, Body: make([]byte, per)}, time.Minute)
	if _, st := m.Get(key("big")); st != Miss {
		t.Fatal("oversized entry stored")
	}
	// Replacing an entry does not leak its bytes.
	before := m.Bytes()
	m.Set(same[0], Entry{StatusCode: 200, Body: body}, time.Minute)
	if m.Bytes() != before {
		t.Fatalf("replace: %d bytes; want %d", m.Bytes(), before)
	}
}

func TestMemoryConcurrent(t *testing.T) {
	m := NewMemory(64 << 10)
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func(g int) {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 2000; i++ {
				k := key(strconv.Itoa((i * (g + 1)) % 300))
				if i%3 == 0 {
					m.Set(k, Entry{StatusCode: 200, Body: make([]byte, i%500)}, time.Minute)
				} else {
					m.Get(k)
				}
			}
		}(g)
	}
	for g := 0; g < 4; g++ {
		<-done
	}
	if m.Bytes() > 64<<10 {
		t.Fatalf("bound broken: %d", m.Bytes())
	}
}
