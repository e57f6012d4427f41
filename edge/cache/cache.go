// Package cache is the response cache of the model endpoints: the exact
// request key (key.go), the per-replica memory store (memory.go) and the
// shared Redis store with its degraded mode (redis.go). The pipeline stage
// that uses them is edge/cache_stage.go; docs/CACHE.md is the user's view.
//
// The stage talks to a Matcher: exact matching is Exact over a Store;
// semantic matching plugs in as another Matcher behind the same two calls.
package cache

import "time"

// Status is the outcome of a lookup, as recorded in the usage record's
// cache_status and the x-gw-cache header.
type Status uint8

const (
	// None: no cache policy applies to the request.
	None Status = iota
	// Miss: no stored answer; the request goes upstream and its answer may
	// be stored.
	Miss
	// Hit: the stored answer was served; no upstream call.
	Hit
	// Bypass: a policy applies, but the request is not looked up (a
	// stream, Cache-Control: no-cache or no-store, a body gw does not key).
	Bypass
	// Error: the store could not answer (Redis down or degraded): served
	// as a miss, the request never fails for it.
	Error
)

var statusNames = [...]string{"none", "miss", "hit", "bypass", "error"}

// String returns "none", "miss", "hit", "bypass" or "error".
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "none"
}

// Entry is a stored answer: exactly the bytes the caller received.
// Entries are immutable once stored: a Get may return slices a later Get
// returns too.
type Entry struct {
	StatusCode  int
	ContentType []byte
	Body        []byte
}

// Store keeps entries by exact key.
type Store interface {
	// Get returns the entry of k: Hit, Miss or Error (the store is
	// unreachable; the caller treats it as a miss).
	Get(k *Key) (Entry, Status)
	// Set stores e under k for ttl. The store copies what it keeps; e's
	// slices may be reused once Set returns.
	Set(k *Key, e Entry, ttl time.Duration)
}

// Request is what a Matcher needs of one request. Canon is the canonical
// request (AppendCanonical); Namespace the policy's. A semantic Matcher
// also needs Scope (the hash of the canonical request without its prompt,
// AppendScope), Vec (the prompt's unit embedding) and Threshold.
type Request struct {
	Namespace string
	Canon     []byte

	Scope     Key
	Vec       []float32
	Threshold float32

	key   Key
	keyed bool
}

// Key returns the exact key of r, hashed once per request.
func (r *Request) Key() *Key {
	if !r.keyed {
		r.key, r.keyed = Sum(r.Namespace, r.Canon), true
	}
	return &r.key
}

// Matcher finds a stored answer for a request and stores new ones. Exact
// is the exact-match Matcher; a semantic Matcher (embedding similarity)
// implements the same two calls.
type Matcher interface {
	Lookup(r *Request) (Entry, Status)
	Save(r *Request, e Entry, ttl time.Duration)
}

// Exact matches on the canonical request's hash. Use it by pointer: a
// Matcher holding a *Exact costs no allocation per request.
type Exact struct{ Store Store }

// Lookup looks r's key up.
func (x *Exact) Lookup(r *Request) (Entry, Status) { return x.Store.Get(r.Key()) }

// Save stores e under r's key.
func (x *Exact) Save(r *Request, e Entry, ttl time.Duration) { x.Store.Set(r.Key(), e, ttl) }

// NearStore keeps entries by scope and prompt vector: GetNear returns the
// entry of r.Scope whose vector scores highest against r.Vec, if that
// score reaches r.Threshold.
type NearStore interface {
	GetNear(r *Request) (Entry, Status)
	SetNear(r *Request, e Entry, ttl time.Duration)
}

// Semantic matches on prompt similarity within the request's scope. Use it
// by pointer, like Exact.
type Semantic struct{ Store NearStore }

// Lookup finds the nearest stored prompt of r's scope.
func (x *Semantic) Lookup(r *Request) (Entry, Status) { return x.Store.GetNear(r) }

// Save stores e with r's vector in r's scope.
func (x *Semantic) Save(r *Request, e Entry, ttl time.Duration) { x.Store.SetNear(r, e, ttl) }

// Interface guards.
var (
	_ Matcher   = (*Exact)(nil)
	_ Matcher   = (*Semantic)(nil)
	_ NearStore = (*SemMemory)(nil)
	_ NearStore = (*Redis)(nil)
	_ Store     = (*Memory)(nil)
	_ Store     = (*Redis)(nil)
)
