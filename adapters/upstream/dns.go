package upstream

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"time"
)

// LookupFunc resolves a host name to addresses.
type LookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// DNSOptions configure a DNSCache. The zero value gives the spec's limits.
type DNSOptions struct {
	TTL      time.Duration // how long a success is kept; default 30 s
	FailTTL  time.Duration // how long a failure is kept; default 1 s
	MaxNames int           // names kept at most; default 1,024
	Timeout  time.Duration // bound of one lookup; default 5 s
	// Lookup resolves names; nil uses net.DefaultResolver.LookupNetIP.
	Lookup LookupFunc
	// Now is the clock; nil uses time.Now. Tests inject a fake one.
	Now func() time.Time
}

// Spec limits of the upstream DNS cache.
const (
	DefaultDNSTTL      = 30 * time.Second
	DefaultDNSFailTTL  = time.Second
	DefaultDNSMaxNames = 1024
)

// ErrNoAddresses is the cached failure of a lookup that returned no address.
var ErrNoAddresses = errors.New("upstream: host resolves to no address")

// DNSCache caches name lookups for the upstream dialer: successes for TTL,
// failures for FailTTL, at most MaxNames names. Concurrent lookups of one
// name share a single resolver call. When full, inserting a new name evicts
// an expired entry among the first 8 visited in Go's randomised map order,
// or else the first visited one: random eviction, O(1), no per-hit
// bookkeeping (an LRU would write on every hit). Expired entries are not
// served stale; the next dial looks the name up again.
//
// A DNSCache is safe for concurrent use and is shared by every pool.
type DNSCache struct {
	ttl, failTTL time.Duration
	max          int
	timeout      time.Duration
	lookup       LookupFunc
	now          func() time.Time

	mu sync.Mutex
	m  map[string]*dnsEntry
}

type dnsEntry struct {
	done    chan struct{} // closed when the fields below are final
	addrs   []netip.Addr
	err     error
	expires time.Time
}

// NewDNSCache returns an empty cache.
func NewDNSCache(o DNSOptions) *DNSCache {
	c := &DNSCache{ttl: o.TTL, failTTL: o.FailTTL, max: o.MaxNames, timeout: o.Timeout, lookup: o.Lookup, now: o.Now}
	if c.ttl <= 0 {
		c.ttl = DefaultDNSTTL
	}
	if c.failTTL <= 0 {
		c.failTTL = DefaultDNSFailTTL
	}
	if c.max <= 0 {
		c.max = DefaultDNSMaxNames
	}
	if c.timeout <= 0 {
		c.timeout = 5 * time.Second
	}
	if c.lookup == nil {
		c.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.m = make(map[string]*dnsEntry)
	return c
}

// Lookup returns the addresses of host, from the cache when fresh. The
// returned slice is shared: do not modify it. ctx bounds only this caller's
// wait; the shared lookup runs under the cache's own timeout, so one
// cancelled caller does not fail the others.
func (c *DNSCache) Lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	c.mu.Lock()
	e := c.m[host]
	if e != nil {
		select {
		case <-e.done:
			if c.now().Before(e.expires) {
				c.mu.Unlock()
				return e.addrs, e.err
			}
			e = nil // expired: look it up again
		default:
			// In flight: wait for it below.
		}
	}
	if e == nil {
		e = &dnsEntry{done: make(chan struct{})}
		if _, ok := c.m[host]; !ok && len(c.m) >= c.max {
			c.evictLocked()
		}
		c.m[host] = e
		go c.resolve(host, e)
	}
	c.mu.Unlock()

	select {
	case <-e.done:
		return e.addrs, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *DNSCache) resolve(host string, e *dnsEntry) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	addrs, err := c.lookup(ctx, host)
	cancel()
	if err == nil && len(addrs) == 0 {
		err = ErrNoAddresses
	}
	ttl := c.ttl
	if err != nil {
		addrs, ttl = nil, c.failTTL
	}
	e.addrs, e.err, e.expires = addrs, err, c.now().Add(ttl)
	close(e.done)
}

// evictLocked drops one entry; c.mu is held.
func (c *DNSCache) evictLocked() {
	now := c.now()
	var victim string
	n := 0
	for name, e := range c.m {
		if n == 0 {
			victim = name
		}
		select {
		case <-e.done:
			if !now.Before(e.expires) {
				delete(c.m, name)
				return
			}
		default:
		}
		if n++; n == 8 {
			break
		}
	}
	delete(c.m, victim)
}

// Len returns the number of names held, fresh or not.
func (c *DNSCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
