package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"gw/admin/gateway"
)

// discovery_type dns: the nodes of an upstream are the answers for its
// service_name. "name:port" looks up A, then AAAA records, served on that
// port; a bare name looks up SRV records first (target, port and weight
// from each record; the targets' addresses from the answer's additional
// section or their own A/AAAA lookup), then A, then AAAA on the scheme's
// default port, as APISIX's order SRV -> A -> AAAA. The set is refreshed
// when the shortest TTL in it runs out; a failed or empty lookup keeps the
// last good set and is retried with a backoff.

const (
	dnsMinTTL     = time.Second
	dnsMaxTTL     = time.Hour
	dnsMaxBackoff = 30 * time.Second
	dnsTimeout    = 5 * time.Second
)

// DNSResolver queries the configured DNS servers, in order, until one
// answers.
type DNSResolver struct {
	servers []string
	udp     *dns.Client
	tcp     *dns.Client
}

// NewDNSResolver returns a resolver for a comma-separated list of
// host[:port] servers (port 53 by default); an empty list reads
// /etc/resolv.conf.
func NewDNSResolver(servers string) (*DNSResolver, error) {
	r := &DNSResolver{udp: &dns.Client{Net: "udp", Timeout: 2 * time.Second}, tcp: &dns.Client{Net: "tcp", Timeout: 2 * time.Second}}
	for _, s := range strings.Split(servers, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(s); err != nil {
			s = net.JoinHostPort(strings.Trim(s, "[]"), "53")
		}
		r.servers = append(r.servers, s)
	}
	if len(r.servers) == 0 {
		cc, err := dns.ClientConfigFromFile("/etc/resolv.conf")
		if err != nil {
			return nil, fmt.Errorf("cannot read DNS servers from /etc/resolv.conf: %w", err)
		}
		for _, s := range cc.Servers {
			r.servers = append(r.servers, net.JoinHostPort(s, cc.Port))
		}
		if len(r.servers) == 0 {
			return nil, errors.New("cannot resolve service names: /etc/resolv.conf lists no DNS server")
		}
	}
	return r, nil
}

// ParseServiceName splits a dns service_name into its host (a DNS name
// or an IP) and port (0 when absent).
func ParseServiceName(s string) (host string, port int, err error) {
	host = s
	if h, p, e := net.SplitHostPort(s); e == nil {
		n, perr := strconv.Atoi(p)
		if perr != nil || n < 1 || n > 65535 {
			return "", 0, fmt.Errorf("service_name %q: bad port", s)
		}
		host, port = h, n
	}
	if _, e := netip.ParseAddr(host); e == nil {
		return host, port, nil
	}
	if _, ok := dns.IsDomainName(host); !ok || strings.ContainsAny(host, " :/[]") {
		return "", 0, fmt.Errorf("service_name %q: not a DNS name", s)
	}
	if host = strings.ToLower(strings.TrimSuffix(host, ".")); host == "" {
		return "", 0, fmt.Errorf("service_name %q: not a DNS name", s)
	}
	return host, port, nil
}

var errNoRecords = errors.New("no records")

// query asks each server in turn for name/qtype; a truncated UDP answer is
// asked again over TCP. NXDOMAIN and an empty answer are errNoRecords.
func (r *DNSResolver) query(ctx context.Context, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	var lastErr error
	for _, srv := range r.servers {
		resp, _, err := r.udp.ExchangeContext(ctx, m, srv)
		if err == nil && resp.Truncated {
			resp, _, err = r.tcp.ExchangeContext(ctx, m, srv)
		}
		if err != nil {
			lastErr = fmt.Errorf("%s: %w", srv, err)
			continue
		}
		switch resp.Rcode {
		case dns.RcodeSuccess:
			return resp, nil
		case dns.RcodeNameError:
			return nil, errNoRecords
		default:
			lastErr = fmt.Errorf("%s: %s", srv, dns.RcodeToString[resp.Rcode])
		}
	}
	return nil, lastErr
}

// Lookup resolves a service name into nodes (sorted by address) and the
// time until they must be looked up again.
func (r *DNSResolver) Lookup(ctx context.Context, host string, port, defPort int) ([]gateway.Node, time.Duration, error) {
	if _, err := netip.ParseAddr(host); err == nil {
		if port == 0 {
			port = defPort
		}
		return []gateway.Node{node(host, port, 1)}, dnsMaxTTL, nil
	}
	if port == 0 {
		resp, err := r.query(ctx, host, dns.TypeSRV)
		if err != nil && !errors.Is(err, errNoRecords) {
			return nil, 0, fmt.Errorf("cannot look up SRV %s: %w", host, err)
		}
		if resp != nil {
			nodes, ttl, err := r.srvNodes(ctx, resp)
			if err != nil || len(nodes) > 0 {
				return nodes, ttl, err
			}
		}
		port = defPort
	}
	for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
		resp, err := r.query(ctx, host, qt)
		if errors.Is(err, errNoRecords) {
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("cannot look up %s %s: %w", dns.TypeToString[qt], host, err)
		}
		if nodes, ttl := AddrNodes(resp.Answer, "", port, 1); len(nodes) > 0 {
			return nodes, ttl, nil
		}
	}
	return nil, 0, fmt.Errorf("cannot look up %s: no SRV, A or AAAA records", host)
}

// srvNodes turns an SRV answer into nodes, resolving targets the
// additional section does not cover.
func (r *DNSResolver) srvNodes(ctx context.Context, resp *dns.Msg) ([]gateway.Node, time.Duration, error) {
	recs, ttl := SRVRecords(resp.Answer)
	var nodes []gateway.Node
	for _, s := range recs {
		ns, t := AddrNodes(resp.Extra, s.Target, int(s.Port), srvWeight(s.Weight))
		if len(ns) == 0 {
			for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
				a, err := r.query(ctx, s.Target, qt)
				if errors.Is(err, errNoRecords) {
					continue
				}
				if err != nil {
					return nil, 0, fmt.Errorf("cannot look up %s %s: %w", dns.TypeToString[qt], s.Target, err)
				}
				if ns, t = AddrNodes(a.Answer, s.Target, int(s.Port), srvWeight(s.Weight)); len(ns) > 0 {
					break
				}
			}
		}
		if len(ns) > 0 {
			ttl = min(ttl, t)
		}
		nodes = append(nodes, ns...)
	}
	return dedupe(nodes), ttl, nil
}

// srvWeight maps an SRV weight to a node weight: 0 ("very small chance",
// RFC 2782) becomes 1 so the node still takes some traffic.
func srvWeight(w uint16) int {
	if w == 0 {
		return 1
	}
	return int(w)
}

// SRVRecords returns the SRV records of the most preferred priority (the
// lowest value; the others are RFC 2782's backups, which the balancers do
// not model) and the smallest TTL among them.
func SRVRecords(rrs []dns.RR) ([]*dns.SRV, time.Duration) {
	var out []*dns.SRV
	ttl := dnsMaxTTL
	for _, rr := range rrs {
		s, ok := rr.(*dns.SRV)
		if !ok || s.Port == 0 || s.Target == "" || s.Target == "." {
			continue
		}
		switch {
		case len(out) == 0 || s.Priority < out[0].Priority:
			out = append(out[:0], s)
			ttl = dnsMaxTTL
		case s.Priority > out[0].Priority:
			continue
		default:
			out = append(out, s)
		}
		ttl = min(ttl, clampTTL(s.Hdr.Ttl))
	}
	return out, ttl
}

// AddrNodes returns a node for each A/AAAA record in rrs (those named
// owner when owner is set) on port with weight, and the smallest TTL.
func AddrNodes(rrs []dns.RR, owner string, port, weight int) ([]gateway.Node, time.Duration) {
	var nodes []gateway.Node
	ttl := dnsMaxTTL
	for _, rr := range rrs {
		var ip net.IP
		switch a := rr.(type) {
		case *dns.A:
			ip = a.A
		case *dns.AAAA:
			ip = a.AAAA
		default:
			continue
		}
		if owner != "" && !strings.EqualFold(rr.Header().Name, dns.Fqdn(owner)) {
			continue
		}
		addr, ok := netip.AddrFromSlice(ip)
		if !ok || port < 1 || port > 65535 {
			continue
		}
		nodes = append(nodes, node(addr.Unmap().String(), port, weight))
		ttl = min(ttl, clampTTL(rr.Header().Ttl))
	}
	return dedupe(nodes), ttl
}

func node(host string, port, weight int) gateway.Node {
	return gateway.Node{Host: host, Port: port, Weight: weight, Addr: net.JoinHostPort(host, strconv.Itoa(port))}
}

func clampTTL(s uint32) time.Duration {
	return min(max(time.Duration(s)*time.Second, dnsMinTTL), dnsMaxTTL)
}

// dedupe sorts nodes by address and keeps the first of each.
func dedupe(nodes []gateway.Node) []gateway.Node {
	sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].Addr < nodes[j].Addr })
	out := nodes[:0]
	for i, n := range nodes {
		if i > 0 && n.Addr == nodes[i-1].Addr {
			continue
		}
		out = append(out, n)
	}
	return out
}

// discovered is the node source of a discovery_type dns pool: a
// background lookup that replaces the serving pool whenever the node set
// changes.
type discovered struct {
	res          *DNSResolver
	up           gateway.Upstream
	routeTimeout *gateway.Timeout
	snap         *gateway.Snapshot
	opt          Options
	host         string
	port         int
	defPort      int
	cur          atomic.Pointer[Pool]
	key          string // the current node set, to skip unchanged answers
}

// newDiscovered builds the outer pool of a dns upstream: its Current is
// an empty pool (503) until the first lookup answers.
func newDiscovered(u *gateway.Upstream, routeTimeout *gateway.Timeout, snap *gateway.Snapshot, opt Options) (*Pool, error) {
	if u.DiscoveryType != "dns" {
		return nil, fmt.Errorf("cannot build upstream %s: discovery_type %q is not built (dns is)", u.ID, u.DiscoveryType)
	}
	if opt.DNS == nil {
		return nil, fmt.Errorf("cannot build upstream %s: no DNS resolver (gateway.dns_servers)", u.ID)
	}
	host, port, err := ParseServiceName(u.ServiceName)
	if err != nil {
		return nil, fmt.Errorf("cannot build upstream %s: %w", u.ID, err)
	}
	d := &discovered{res: opt.DNS, up: *u, routeTimeout: routeTimeout, snap: snap, opt: opt, host: host, port: port, defPort: 80}
	d.up.DiscoveryType, d.up.Nodes = "", nil
	if u.Scheme == "https" {
		d.defPort = 443
	}
	// The empty pool checks the rest of the configuration now, so a bad
	// one blocks the route with its reason rather than failing later.
	empty, err := New(&d.up, routeTimeout, snap, opt)
	if err != nil {
		return nil, err
	}
	d.cur.Store(empty)
	p := &Pool{Up: u, disc: d, log: opt.Log, stop: make(chan struct{})}
	go d.loop(p.stop)
	return p, nil
}

// Current is the pool serving now: p itself, or for a discovered
// upstream the pool of its latest node set.
func (p *Pool) Current() *Pool {
	if p.disc == nil {
		return p
	}
	return p.disc.cur.Load()
}

func (d *discovered) loop(stop <-chan struct{}) {
	backoff := dnsMinTTL
	for {
		ctx, cancel := context.WithTimeout(context.Background(), dnsTimeout)
		nodes, ttl, err := d.res.Lookup(ctx, d.host, d.port, d.defPort)
		cancel()
		wait := ttl
		if err != nil {
			if d.opt.Log != nil {
				d.opt.Log("dns discovery failed; keeping the last nodes", "upstream", d.up.ID, "service_name", d.up.ServiceName,
					"nodes", len(d.cur.Load().Nodes), "error", err.Error())
			}
			wait, backoff = backoff, min(backoff*2, dnsMaxBackoff)
		} else {
			backoff = dnsMinTTL
			d.apply(nodes)
		}
		select {
		case <-stop:
			d.cur.Load().Close()
			return
		case <-time.After(wait):
		}
	}
}

// apply swaps in a pool for nodes unless the set is unchanged.
func (d *discovered) apply(nodes []gateway.Node) {
	var b strings.Builder
	for _, n := range nodes {
		b.WriteString(n.Addr)
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(n.Weight))
		b.WriteByte(',')
	}
	if b.String() == d.key {
		return
	}
	u := d.up
	u.Nodes = nodes
	p, err := New(&u, d.routeTimeout, d.snap, d.opt)
	if err != nil {
		if d.opt.Log != nil {
			d.opt.Log("dns discovery: cannot use the nodes; keeping the last ones", "upstream", d.up.ID, "error", err.Error())
		}
		return
	}
	d.key = b.String()
	old := d.cur.Swap(p)
	old.Close()
	if d.opt.Log != nil {
		d.opt.Log("dns discovery: upstream nodes changed", "upstream", d.up.ID, "service_name", d.up.ServiceName, "nodes", d.key)
	}
}
