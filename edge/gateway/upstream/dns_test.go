package upstream

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"gw/admin/gateway"
)

// dnsServer is a real DNS server (miekg/dns) answering from a zone the
// test edits; fail makes it answer SERVFAIL.
type dnsServer struct {
	addr string
	mu   sync.Mutex
	rrs  []dns.RR
	fail bool
	hits map[uint16]int
}

func newDNSServer(t testing.TB, zone ...string) *dnsServer {
	t.Helper()
	s := &dnsServer{hits: map[uint16]int{}}
	s.set(t, zone...)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = pc.LocalAddr().String()
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(s.serve)}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	return s
}

func (s *dnsServer) set(t testing.TB, zone ...string) {
	t.Helper()
	var rrs []dns.RR
	for _, z := range zone {
		rr, err := dns.NewRR(z)
		if err != nil {
			t.Fatalf("%s: %v", z, err)
		}
		rrs = append(rrs, rr)
	}
	s.mu.Lock()
	s.rrs = rrs
	s.mu.Unlock()
}

func (s *dnsServer) serve(w dns.ResponseWriter, req *dns.Msg) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := new(dns.Msg)
	m.SetReply(req)
	q := req.Question[0]
	s.hits[q.Qtype]++
	if s.fail {
		m.Rcode = dns.RcodeServerFailure
		w.WriteMsg(m)
		return
	}
	known := false
	for _, rr := range s.rrs {
		if !strings.EqualFold(rr.Header().Name, q.Name) {
			continue
		}
		known = true
		if rr.Header().Rrtype == q.Qtype {
			m.Answer = append(m.Answer, rr)
			if srv, ok := rr.(*dns.SRV); ok {
				for _, a := range s.rrs {
					if strings.EqualFold(a.Header().Name, srv.Target) && a.Header().Rrtype == dns.TypeA {
						m.Extra = append(m.Extra, a)
					}
				}
			}
		}
	}
	if !known {
		m.Rcode = dns.RcodeNameError
	}
	w.WriteMsg(m)
}

func TestDNSLookup(t *testing.T) {
	s := newDNSServer(t,
		"_web._tcp.svc.test. 30 IN SRV 10 3 8001 a.svc.test.",
		"_web._tcp.svc.test. 20 IN SRV 10 1 8002 b.svc.test.",
		"_web._tcp.svc.test. 20 IN SRV 20 1 8003 backup.svc.test.",
		"a.svc.test. 5 IN A 127.0.0.1",
		"b.svc.test. 60 IN A 127.0.0.2",
		"multi.test. 7 IN A 10.0.0.2",
		"multi.test. 9 IN A 10.0.0.1",
		"v6.test. 9 IN AAAA ::1",
		"nosrv.test. 9 IN A 10.0.0.9",
	)
	r, err := NewDNSResolver(s.addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		port  int
		nodes string
		ttl   time.Duration
	}{
		{"_web._tcp.svc.test", 0, "127.0.0.1:8001=3 127.0.0.2:8002=1", 5 * time.Second},
		{"multi.test", 9000, "10.0.0.1:9000=1 10.0.0.2:9000=1", 7 * time.Second},
		{"nosrv.test", 0, "10.0.0.9:80=1", 9 * time.Second},
		{"v6.test", 81, "[::1]:81=1", 9 * time.Second},
		{"10.1.1.1", 0, "10.1.1.1:80=1", dnsMaxTTL},
	} {
		nodes, ttl, err := r.Lookup(ctx, tc.name, tc.port, 80)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var got []string
		for _, n := range nodes {
			got = append(got, n.Addr+"="+strconv.Itoa(n.Weight))
		}
		if strings.Join(got, " ") != tc.nodes || ttl != tc.ttl {
			t.Errorf("%s: got %v ttl %v; want %s ttl %v", tc.name, got, ttl, tc.nodes, tc.ttl)
		}
	}
	if _, _, err := r.Lookup(ctx, "missing.test", 80, 80); err == nil {
		t.Error("missing.test: no error")
	}
}

// TestDNSDiscoveryPool: the pool follows a record change after its TTL
// and keeps the last good nodes while the server fails.
func TestDNSDiscoveryPool(t *testing.T) {
	s := newDNSServer(t, "api.test. 1 IN A 127.0.0.1")
	r, err := NewDNSResolver(s.addr)
	if err != nil {
		t.Fatal(err)
	}
	u := &gateway.Upstream{ID: "d", Type: "roundrobin", Scheme: "http", PassHost: "pass", Retries: -1, DiscoveryType: "dns", ServiceName: "api.test:8080"}
	var failed atomic.Int32
	logf := func(msg string, args ...any) {
		if strings.HasPrefix(msg, "dns discovery failed") {
			failed.Add(1)
		}
	}
	p, err := New(u, nil, nil, Options{DNS: r, Log: logf})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	nodesOf := func() string {
		var a []string
		for _, n := range p.Current().Nodes {
			a = append(a, n.Addr)
		}
		return strings.Join(a, " ")
	}
	waitUntil(t, "first lookup", func() bool { return nodesOf() == "127.0.0.1:8080" })
	s.set(t, "api.test. 1 IN A 127.0.0.3", "api.test. 1 IN A 127.0.0.2")
	start := time.Now()
	waitUntil(t, "record change", func() bool { return nodesOf() == "127.0.0.2:8080 127.0.0.3:8080" })
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("change picked up after %v; TTL is 1 s", d)
	}
	s.mu.Lock()
	s.fail = true
	s.mu.Unlock()
	waitUntil(t, "a failed lookup", func() bool { return failed.Load() > 0 })
	if nodesOf() != "127.0.0.2:8080 127.0.0.3:8080" {
		t.Errorf("after a failed lookup: nodes %q; want the last good set kept", nodesOf())
	}

	if _, err := New(&gateway.Upstream{ID: "c", Scheme: "http", DiscoveryType: "consul", ServiceName: "x"}, nil, nil, Options{DNS: r}); err == nil ||
		!strings.Contains(err.Error(), `discovery_type "consul" is not built`) {
		t.Errorf("consul: %v", err)
	}
	if _, err := New(&gateway.Upstream{ID: "c", Scheme: "http", DiscoveryType: "dns", ServiceName: "bad name"}, nil, nil, Options{DNS: r}); err == nil {
		t.Error("bad service_name accepted")
	}
}

func waitUntil(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestParseServiceName(t *testing.T) {
	for _, tc := range []struct {
		in   string
		host string
		port int
		ok   bool
	}{
		{"a.test:80", "a.test", 80, true},
		{"A.Test.", "a.test", 0, true},
		{"_sip._tcp.x", "_sip._tcp.x", 0, true},
		{"[::1]:81", "::1", 81, true},
		{"a.test:0", "", 0, false},
		{"a.test:x", "", 0, false},
		{"bad name", "", 0, false},
		{"", "", 0, false},
		{".", "", 0, false}, // found by FuzzGatewayServiceName
	} {
		h, p, err := ParseServiceName(tc.in)
		if (err == nil) != tc.ok || h != tc.host || p != tc.port {
			t.Errorf("%q: got %q %d %v", tc.in, h, p, err)
		}
	}
}
