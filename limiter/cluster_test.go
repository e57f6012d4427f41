package limiter_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"gw/limiter"
	"gw/limiter/circuit"
	"gw/limiter/redistest"
)

func newClusterLimiter(t testing.TB, c limiter.Clock, nodes []string, noFallback bool) *limiter.Limiter {
	t.Helper()
	l := limiter.New(limiter.Config{
		Clock:  c,
		Logger: &testLogger{},
		Redis: &limiter.RedisConfig{
			ClusterNodes:    nodes,
			KeyPrefix:       "test:",
			Timing:          circuit.Timing{Timeout: time.Second, DialTimeout: 2 * time.Second, FailureThreshold: 3},
			NoLocalFallback: noFallback,
		},
	})
	t.Cleanup(l.Close)
	if l.State() != limiter.StateConnected {
		t.Fatalf("state %s; want connected to the cluster %v", l.State(), nodes)
	}
	return l
}

// TestRedisClusterExact: two limiters on one 3-primary cluster admit
// exactly each subject's limit under concurrent load; the subjects' keys
// land on different primaries (checked in the cluster itself).
func TestRedisClusterExact(t *testing.T) {
	cl := redistest.StartCluster(t)
	c := newClock(t0.Add(10 * time.Second))
	l1 := newClusterLimiter(t, c, cl.Addrs(), false)
	// The second replica knows one seed only: it learns the rest.
	l2 := newClusterLimiter(t, c, cl.Addrs()[2:], false)

	const subjects, limit = 12, 40
	var admitted [subjects]atomic.Int64
	var local atomic.Int64
	var wg sync.WaitGroup
	for _, l := range []*limiter.Limiter{l1, l2} {
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(l *limiter.Limiter, g int) {
				defer wg.Done()
				var r limiter.Reservation
				for i := 0; i < 60; i++ {
					s := (i + g) % subjects
					r.Reset()
					r.AddWindow(limiter.Subject{Scope: "lc", ID: "client-" + strconv.Itoa(s)}, 7*time.Second, limit)
					if l.Reserve(&r, 0).Allowed {
						admitted[s].Add(1)
					}
					if !r.Shared() {
						local.Add(1)
					}
				}
			}(l, g)
		}
	}
	wg.Wait()
	if n := local.Load(); n != 0 {
		t.Fatalf("%d reservations fell back to local counting", n)
	}
	for s := range admitted {
		if got := admitted[s].Load(); got != limit {
			t.Fatalf("subject %d: admitted %d across two replicas; want exactly %d", s, got, limit)
		}
	}
	// The counters are spread over the primaries and expire with their
	// window: the TTL is the time to the window's end (at most 7 s) plus
	// 5 s grace.
	holders := 0
	for _, n := range cl.Nodes {
		keys, ttl := scanKeys(t, n.Addr())
		if len(keys) > 0 {
			holders++
		}
		for _, k := range keys {
			if ttl[k] <= 5*time.Second || ttl[k] > 12*time.Second {
				t.Fatalf("key %s on %s: TTL %s; want (5s, 12s]", k, n.Addr(), ttl[k])
			}
		}
	}
	if holders < 2 {
		t.Fatalf("keys on %d primaries; want them spread over the cluster", holders)
	}
}

// scanKeys lists the keys of one node with their TTLs.
func scanKeys(t testing.TB, addr string) ([]string, map[string]time.Duration) {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	keys, err := c.Do(ctx, c.B().Keys().Pattern("test:*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	ttl := map[string]time.Duration{}
	for _, k := range keys {
		ms, err := c.Do(ctx, c.B().Pttl().Key(k).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		ttl[k] = time.Duration(ms) * time.Millisecond
	}
	return keys, ttl
}

// TestRedisClusterCrossSlot: a reservation whose keys span slots cannot be
// one script call; it is counted locally (or Unavailable), and the circuit
// stays closed.
func TestRedisClusterCrossSlot(t *testing.T) {
	cl := redistest.StartCluster(t)
	c := newClock(t0)
	for _, noFallback := range []bool{false, true} {
		l := newClusterLimiter(t, c, cl.Addrs(), noFallback)
		for i := 0; i < 5; i++ {
			d, r := reserve(l, 0, lim{keyA, limiter.RPM, 100}, lim{modelM, limiter.RPM, 100})
			if noFallback && (!d.Unavailable || d.Allowed) || !noFallback && (!d.Allowed || r.Shared()) {
				t.Fatalf("noFallback=%v: %+v shared=%v", noFallback, d, r.Shared())
			}
		}
		if l.State() != limiter.StateConnected {
			t.Fatalf("state %s; want connected (a cross-slot call is no store failure)", l.State())
		}
		// One subject, two windows: keys differ, slots (most likely) differ
		// too; whatever they are, a single window is always shared.
		if d, r := reserve(l, 0, lim{keyA, limiter.RPH, 100}); !d.Allowed || !r.Shared() {
			t.Fatalf("single window: %+v shared=%v", d, r.Shared())
		}
	}
}

// TestRedisNoLocalFallback: with NoLocalFallback a dead store makes every
// Reserve Unavailable (nothing counted), fast once the circuit is open,
// and the store is used again once it is back.
func TestRedisNoLocalFallback(t *testing.T) {
	srv := redistest.Start(t)
	c := newClock(t0)
	l := limiter.New(limiter.Config{Clock: c, Logger: &testLogger{}, Redis: &limiter.RedisConfig{
		Addr: srv.Addr(), Timing: circuit.Timing{Timeout: 500 * time.Millisecond, FailureThreshold: 2}, NoLocalFallback: true,
	}})
	defer l.Close()
	w := 2 * time.Second
	if d, r := reserveWindow(l, keyA, w, 1); !d.Allowed || !r.Shared() {
		t.Fatalf("first: %+v", d)
	}
	if d, _ := reserveWindow(l, keyA, w, 1); d.Allowed || d.Unavailable {
		t.Fatalf("second: %+v; want a refusal by Redis", d)
	}
	srv.Kill()
	for i := 0; i < 4; i++ {
		d, r := reserveWindow(l, modelM, w, 100)
		if !d.Unavailable || d.Allowed || r.Shared() {
			t.Fatalf("request %d with Redis down: %+v", i, d)
		}
		l.Settle(r, 0) // nothing to settle: a no-op
	}
	if l.State() != limiter.StateCircuitOpen {
		t.Fatalf("state %s; want circuit_open", l.State())
	}
	if l.Subjects() != 0 {
		t.Fatalf("%d local subjects; want none (nothing counted locally)", l.Subjects())
	}
	srv.Restart()
	// Probes until one succeeds (the first may meet the dead connection).
	for deadline := time.Now().Add(10 * time.Second); l.State() != limiter.StateConnected; {
		if time.Now().After(deadline) {
			t.Fatalf("state %s 10s after Redis came back", l.State())
		}
		c.Add(31 * time.Second)
		l.Poll()
	}
	// A pipelined connection that died with the server fails its next call
	// (no retries), so allow a few before the store counts again.
	for i := 0; ; i++ {
		d, r := reserveWindow(l, modelM, w, 100)
		if d.Allowed && r.Shared() {
			break
		}
		if i == 10 {
			t.Fatalf("after restart: %+v shared=%v", d, r.Shared())
		}
		c.Add(31 * time.Second)
		l.Poll()
	}
}

// TestRedisTLS: the store over TLS, verified against the test CA; a client
// that does not trust the CA cannot attach.
func TestRedisTLS(t *testing.T) {
	srv := redistest.StartTLS(t)
	c := newClock(t0)
	mk := func(tc *tls.Config) *limiter.Limiter {
		l := limiter.New(limiter.Config{Clock: c, Logger: &testLogger{}, Redis: &limiter.RedisConfig{
			Addr: srv.Addr(), TLS: tc, KeyPrefix: "tls:", Timing: circuit.Timing{DialTimeout: 2 * time.Second},
		}})
		t.Cleanup(l.Close)
		return l
	}
	for _, tc := range []*tls.Config{{RootCAs: srv.CAPool()}, {InsecureSkipVerify: true}} {
		l := mk(tc)
		if l.State() != limiter.StateConnected {
			t.Fatalf("state %s; want connected over TLS", l.State())
		}
		for i := 0; i < 2; i++ {
			if d, r := reserveWindow(l, keyA, 3*time.Second, 4); !d.Allowed || !r.Shared() {
				t.Fatalf("%+v shared=%v", d, r.Shared())
			}
		}
	}
	if d, _ := reserveWindow(mk(&tls.Config{RootCAs: srv.CAPool()}), keyA, 3*time.Second, 4); d.Allowed {
		t.Fatal("the fifth request over TLS was admitted; counters are not shared")
	}
	if l := mk(&tls.Config{}); l.State() != limiter.StateCircuitOpen {
		t.Fatalf("state %s with an untrusted CA; want circuit_open", l.State())
	}
	// Plain TCP to a TLS-only port fails too.
	if l := mk(nil); l.State() == limiter.StateConnected {
		t.Fatal("plain TCP attached to a TLS port")
	}
}

// TestRedisWindowExpiry: an RPW counter in Redis is keyed by its window
// start and expires at the window's end plus the grace.
func TestRedisWindowExpiry(t *testing.T) {
	srv := redistest.Start(t)
	start := time.Unix((time.Now().Unix()/7+1)*7, 0) // the clock only names the window
	c := newClock(start.Add(2 * time.Second))
	l, _ := newRedisLimiter(t, c, srv.Addr())
	reserveWindow(l, keyA, 7*time.Second, 3)
	keys, ttl := scanKeys(t, srv.Addr())
	want := fmt.Sprintf("test:key-a/rpw7/%d", start.Unix())
	if len(keys) != 1 || keys[0] != want {
		t.Fatalf("keys %v; want [%s]", keys, want)
	}
	if d := ttl[want]; d <= 9*time.Second || d > 10*time.Second {
		t.Fatalf("TTL %s; want 5 s to the window end + 5 s grace", d)
	}
}
