package cache

import (
	"fmt"
	"testing"
	"time"

	"gw/limiter/circuit"
	"gw/limiter/redistest"
)

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRedisStore: entries are shared by two stores on one redis-server,
// expire with their TTL, and a colliding check hash is a miss.
func TestRedisStore(t *testing.T) {
	rs := redistest.Start(t)
	a := NewRedis(RedisConfig{Addr: rs.Addr()}, nil)
	defer a.Close()
	b := NewRedis(RedisConfig{Addr: rs.Addr()}, nil)
	defer b.Close()

	k := key("q")
	if _, st := a.Get(k); st != Miss {
		t.Fatalf("empty: %v", st)
	}
	a.Set(k, Entry{StatusCode: 200, ContentType: []byte("application/json"), Body: []byte(`{"a":1}`)}, 300*time.Millisecond)
	var e Entry
	waitFor(t, "the write", func() bool {
		var st Status
		e, st = b.Get(k)
		return st == Hit
	})
	if string(e.Body) != `{"a":1}` || string(e.ContentType) != "application/json" || e.StatusCode != 200 {
		t.Fatalf("entry %+v", e)
	}
	bad := *k
	bad.Check++
	if _, st := b.Get(&bad); st != Miss {
		t.Fatalf("colliding key: %v", st)
	}
	time.Sleep(400 * time.Millisecond)
	if _, st := b.Get(k); st != Miss {
		t.Fatalf("after ttl: %v", st)
	}
}

// TestRedisOutage: a killed server makes lookups answer Error (never
// block past Timeout), opens the circuit, and a probe reattaches once the
// server is back.
func TestRedisOutage(t *testing.T) {
	rs := redistest.Start(t)
	r := NewRedis(RedisConfig{Addr: rs.Addr(), Timing: circuit.Timing{Timeout: 100 * time.Millisecond, ProbeInterval: 200 * time.Millisecond, FailureThreshold: 2}}, nil)
	defer r.Close()
	k := key("q")
	if _, st := r.Get(k); st != Miss {
		t.Fatalf("connected: %v", st)
	}
	rs.Kill()
	for i := 0; i < 3; i++ {
		start := time.Now()
		if _, st := r.Get(k); st != Error {
			t.Fatalf("down: %v", st)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("lookup took %v while down", d)
		}
	}
	if r.State() != RedisCircuitOpen {
		t.Fatalf("state %d; want circuit open", r.State())
	}
	r.Set(k, Entry{StatusCode: 200, Body: []byte("{}")}, time.Minute) // dropped quietly
	rs.Restart()
	waitFor(t, "reattach", func() bool { return r.State() == RedisConnected })
	// The probe's fresh client holds no connection the restart broke: no
	// lookup errs (keys spread over its pipelined connections), and one
	// write lands.
	for i := 0; i < 16; i++ {
		if _, st := r.Get(key(fmt.Sprint("after-", i))); st != Miss {
			t.Fatalf("lookup %d after reattach: %v; want a miss", i, st)
		}
	}
	r.Set(k, Entry{StatusCode: 200, Body: []byte("{}")}, time.Minute)
	waitFor(t, "a hit after reattach", func() bool {
		_, st := r.Get(k)
		return st == Hit
	})
}

// TestRedisUnreachableAtStart: no server at startup is not an error; the
// store misses with Error and attaches when a server appears.
func TestRedisUnreachableAtStart(t *testing.T) {
	rs := redistest.Start(t)
	rs.Kill()
	r := NewRedis(RedisConfig{Addr: rs.Addr(), Timing: circuit.Timing{ProbeInterval: 200 * time.Millisecond, DialTimeout: 200 * time.Millisecond}}, nil)
	defer r.Close()
	if _, st := r.Get(key("q")); st != Error {
		t.Fatalf("unreachable: %v", st)
	}
	rs.Restart()
	waitFor(t, "attach", func() bool { return r.State() == RedisConnected })
	if _, st := r.Get(key("q")); st != Miss {
		t.Fatal("attached store does not answer")
	}
}

func TestValueCodec(t *testing.T) {
	e := Entry{StatusCode: 201, ContentType: []byte("application/json; charset=utf-8"), Body: []byte(`{"x":1}`)}
	got, check, ok := ParseValue(AppendValue(nil, 42, e))
	if !ok || check != 42 || got.StatusCode != 201 || string(got.ContentType) != string(e.ContentType) || string(got.Body) != string(e.Body) {
		t.Fatalf("round trip: %+v %d %v", got, check, ok)
	}
	for _, v := range [][]byte{nil, make([]byte, 10), AppendValue(nil, 1, Entry{StatusCode: 200, ContentType: []byte("abc")})[:12]} {
		if _, _, ok := ParseValue(v); ok {
			t.Errorf("%q decoded", v)
		}
	}
	if _, _, ok := ParseValue(AppendValue(nil, 1, Entry{StatusCode: 500})); ok {
		t.Error("a non-2xx status decoded")
	}
}
