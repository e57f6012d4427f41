package upstream

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fakeResolver counts calls and answers from a table.
type fakeResolver struct {
	calls atomic.Int64
	mu    sync.Mutex
	addrs map[string][]netip.Addr
	fail  map[string]error
	block chan struct{} // when set, lookups wait for it
}

func (r *fakeResolver) Lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	r.calls.Add(1)
	if r.block != nil {
		select {
		case <-r.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.fail[host]; err != nil {
		return nil, err
	}
	return r.addrs[host], nil
}

func newTestCache(r *fakeResolver, clk *fakeClock, max int) *DNSCache {
	return NewDNSCache(DNSOptions{Lookup: r.Lookup, Now: clk.Now, MaxNames: max})
}

var ip1 = netip.MustParseAddr("10.0.0.1")

func TestDNSCacheSuccessTTL(t *testing.T) {
	r := &fakeResolver{addrs: map[string][]netip.Addr{"a.test": {ip1}}}
	clk := &fakeClock{t: time.Unix(1000, 0)}
	c := newTestCache(r, clk, 0)
	ctx := context.Background()
	for range 3 {
		got, err := c.Lookup(ctx, "a.test")
		if err != nil || len(got) != 1 || got[0] != ip1 {
			t.Fatalf("got %v, %v", got, err)
		}
	}
	if n := r.calls.Load(); n != 1 {
		t.Fatalf("resolver calls %d; want 1", n)
	}
	clk.Add(29 * time.Second)
	c.Lookup(ctx, "a.test")
	if n := r.calls.Load(); n != 1 {
		t.Fatalf("after 29 s: resolver calls %d; want 1", n)
	}
	clk.Add(time.Second) // 30 s: expired
	c.Lookup(ctx, "a.test")
	if n := r.calls.Load(); n != 2 {
		t.Fatalf("after 30 s: resolver calls %d; want 2", n)
	}
}

func TestDNSCacheFailureTTL(t *testing.T) {
	errNX := errors.New("no such host")
	r := &fakeResolver{fail: map[string]error{"bad.test": errNX}, addrs: map[string][]netip.Addr{"empty.test": nil}}
	clk := &fakeClock{t: time.Unix(1000, 0)}
	c := newTestCache(r, clk, 0)
	ctx := context.Background()
	if _, err := c.Lookup(ctx, "bad.test"); !errors.Is(err, errNX) {
		t.Fatalf("got %v; want %v", err, errNX)
	}
	clk.Add(999 * time.Millisecond)
	if _, err := c.Lookup(ctx, "bad.test"); !errors.Is(err, errNX) {
		t.Fatalf("cached failure: got %v", err)
	}
	if n := r.calls.Load(); n != 1 {
		t.Fatalf("resolver calls %d; want 1", n)
	}
	clk.Add(time.Millisecond) // 1 s: expired
	r.mu.Lock()
	delete(r.fail, "bad.test")
	r.addrs["bad.test"] = []netip.Addr{ip1}
	r.mu.Unlock()
	if got, err := c.Lookup(ctx, "bad.test"); err != nil || got[0] != ip1 {
		t.Fatalf("after 1 s: got %v, %v", got, err)
	}
	// An empty answer is a cached failure too.
	if _, err := c.Lookup(ctx, "empty.test"); !errors.Is(err, ErrNoAddresses) {
		t.Fatalf("empty answer: got %v; want ErrNoAddresses", err)
	}
}

func TestDNSCacheMaxNames(t *testing.T) {
	r := &fakeResolver{addrs: map[string][]netip.Addr{}}
	for i := range 100 {
		r.addrs["h"+strconv.Itoa(i)+".test"] = []netip.Addr{ip1}
	}
	clk := &fakeClock{t: time.Unix(1000, 0)}
	c := newTestCache(r, clk, 8)
	ctx := context.Background()
	for i := range 100 {
		if _, err := c.Lookup(ctx, "h"+strconv.Itoa(i)+".test"); err != nil {
			t.Fatal(err)
		}
		if n := c.Len(); n > 8 {
			t.Fatalf("after %d names: %d held; want <= 8", i+1, n)
		}
	}
	// Expired entries go first: with 7 expired names and one fresh, a new
	// name evicts an expired one.
	clk.Add(time.Minute)
	if _, err := c.Lookup(ctx, "h0.test"); err != nil { // refreshed, fresh now
		t.Fatal(err)
	}
	if _, err := c.Lookup(ctx, "h1.test"); err != nil {
		t.Fatal(err)
	}
	calls := r.calls.Load()
	if _, err := c.Lookup(ctx, "h0.test"); err != nil {
		t.Fatal(err)
	}
	if r.calls.Load() != calls {
		t.Fatalf("fresh entry was evicted before expired ones")
	}

	if d := NewDNSCache(DNSOptions{}); d.max != 1024 || d.ttl != 30*time.Second || d.failTTL != time.Second {
		t.Fatalf("defaults: max %d ttl %v fail %v; want 1024, 30s, 1s", d.max, d.ttl, d.failTTL)
	}
}

func TestDNSCacheCoalesces(t *testing.T) {
	r := &fakeResolver{addrs: map[string][]netip.Addr{"a.test": {ip1}}, block: make(chan struct{})}
	c := newTestCache(r, &fakeClock{t: time.Unix(1000, 0)}, 0)
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Go(func() {
			_, err := c.Lookup(context.Background(), "a.test")
			errs <- err
		})
	}
	// A waiter whose context ends gives up alone.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Lookup(ctx, "a.test"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: got %v", err)
	}
	time.Sleep(10 * time.Millisecond)
	close(r.block)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := r.calls.Load(); n != 1 {
		t.Fatalf("resolver calls %d; want 1", n)
	}
}

func BenchmarkDNSCacheHit(b *testing.B) {
	r := &fakeResolver{addrs: map[string][]netip.Addr{"a.test": {ip1}}}
	c := NewDNSCache(DNSOptions{Lookup: r.Lookup})
	ctx := context.Background()
	c.Lookup(ctx, "a.test")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Lookup(ctx, "a.test"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
