package store

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"
)

// Memory is a Store kept in process memory: nothing survives Close. It
// follows every rule of the interface (revisions, TTL, watch history,
// ErrCompacted) and serves unit tests of the management API and
// --store memory.
type Memory struct {
	mu     sync.Mutex // serialises writes; guards data and rev
	data   map[string]KV
	rev    int64
	closed bool
	hub    *hub
	exp    *expirer
}

var (
	_ Store     = (*Memory)(nil)
	_ Compacter = (*Memory)(nil)
)

// NewMemory returns an empty store that keeps the last history changes for
// Watch (0: DefaultHistory).
func NewMemory(history int) *Memory {
	m := &Memory{data: make(map[string]KV), hub: newHub(0, history)}
	m.exp = newExpirer(m.expire)
	return m
}

func (m *Memory) Get(ctx context.Context, key string) (KV, error) {
	if err := ctx.Err(); err != nil {
		return KV{}, err
	}
	m.expireIfDue()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return KV{}, ErrClosed
	}
	kv, ok := m.data[key]
	if !ok {
		return KV{}, ErrNotFound
	}
	return cloneKV(kv), nil
}

func (m *Memory) Put(ctx context.Context, key string, value []byte, opts PutOptions) (KV, error) {
	if err := ctx.Err(); err != nil {
		return KV{}, err
	}
	if err := checkPut(key, opts); err != nil {
		return KV{}, err
	}
	m.expireIfDue()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return KV{}, ErrClosed
	}
	old, exists := m.data[key]
	if err := checkPrev(exists, old.ModRev, opts.PrevRev); err != nil {
		return KV{}, err
	}
	m.rev++
	kv := KV{Key: key, Value: append([]byte{}, value...), CreateRev: m.rev, ModRev: m.rev}
	if exists {
		kv.CreateRev = old.CreateRev
	}
	if opts.TTL > 0 {
		kv.Expires = time.Now().Add(opts.TTL)
		m.exp.add(lease{at: kv.Expires, key: key, modRev: kv.ModRev})
	}
	m.data[key] = kv
	m.hub.publish(Event{Type: EventPut, KV: kv})
	return cloneKV(kv), nil
}

func (m *Memory) Delete(ctx context.Context, key string, prevRev int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.expireIfDue()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	old, ok := m.data[key]
	if !ok {
		return ErrNotFound
	}
	if prevRev > 0 && old.ModRev != prevRev {
		return ErrConflict
	}
	m.deleteLocked(key)
	return nil
}

func (m *Memory) deleteLocked(key string) {
	delete(m.data, key)
	m.rev++
	m.hub.publish(Event{Type: EventDelete, KV: KV{Key: key, ModRev: m.rev}})
}

func (m *Memory) List(ctx context.Context, prefix string) ([]KV, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	m.expireIfDue()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, 0, ErrClosed
	}
	var kvs []KV
	for k, kv := range m.data {
		if strings.HasPrefix(k, prefix) {
			kvs = append(kvs, cloneKV(kv))
		}
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].Key < kvs[j].Key })
	return kvs, m.rev, nil
}

func (m *Memory) Watch(ctx context.Context, prefix string, fromRev int64) <-chan WatchResponse {
	return m.hub.watch(ctx, prefix, fromRev)
}

// Compact discards the watch history before rev.
func (m *Memory) Compact(ctx context.Context, rev int64) error {
	return m.hub.compact(rev)
}

func (m *Memory) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	m.exp.stop()
	m.hub.close()
	return nil
}

func (m *Memory) expireIfDue() {
	if now := time.Now(); m.exp.due(now) {
		m.expire(now)
	}
}

func (m *Memory) expire(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range m.exp.popDue(now) {
		if m.closed {
			return
		}
		if kv, ok := m.data[l.key]; ok && kv.ModRev == l.modRev {
			m.deleteLocked(l.key)
		}
	}
}

func cloneKV(kv KV) KV {
	kv.Value = append([]byte{}, kv.Value...)
	return kv
}
