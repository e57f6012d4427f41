// Package upstream turns a compiled admin upstream into a Pool: one
// keep-alive fasthttp client per node, a balancer (roundrobin, chash,
// least_conn, ewma), health state fed by active probes and by real
// traffic, and the retry, timeout and Host-header policy of one request.
//
// Pools outlive snapshots: the gateway keeps a pool for as long as its
// upstream's configuration is unchanged (Fingerprint), so connections,
// balancer state and health verdicts survive unrelated admin writes.
package upstream

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"gw/admin/gateway"
	"gw/edge/gateway/vars"
	"gw/edge/rawsock"
)

// Node is one upstream target with its client and runtime state.
type Node struct {
	Addr   string // host:port
	Host   string // the node's host as configured (for pass_host node)
	Port   int
	Weight int
	client *fasthttp.HostClient
	// hostHeader is Host for pass_host node: the host, with the port when
	// it is not the scheme's default.
	hostHeader []byte

	down     atomic.Bool
	inflight atomic.Int64
	// Passive health counters (consecutive; reset by the opposite outcome).
	fails, timeouts, okRun atomic.Int32
	// ewma is the decayed response time in ns (float64 bits) and ewmaAt
	// the unix-ns time of its last update.
	ewma, ewmaAt atomic.Uint64
}

// Healthy reports whether the node takes traffic.
func (n *Node) Healthy() bool { return !n.down.Load() }

// Pool is the runtime of one upstream.
type Pool struct {
	Up           *gateway.Upstream
	Nodes        []*Node
	picker       picker
	retries      int
	retryTimeout time.Duration
	passHost     uint8
	rewriteHost  []byte
	hashOn       uint8
	hashVar      vars.Var
	hashTmpl     vars.Template
	hashKey      []byte // header or cookie name
	checks       *checks
	log          func(msg string, args ...any)
	stop         chan struct{}
	stopOnce     sync.Once
	// connect, send and read are the effective timeouts, kept for the
	// connections the gateway opens itself (WebSocket upgrades).
	connect, send, read time.Duration
	// disc is the node source of a discovery_type upstream (nil: static
	// nodes); requests go to Current.
	disc *discovered
}

const (
	passPass uint8 = iota
	passNode
	passRewrite
)

const (
	hashVars uint8 = iota
	hashHeader
	hashCookie
	hashConsumer
	hashCombination
)

// Options are the process-wide client settings.
type Options struct {
	MaxResponseBytes int
	// Log reports health transitions and probe errors.
	Log func(msg string, args ...any)
	// DNS resolves discovery_type dns upstreams (nil: they are not served).
	DNS *DNSResolver
}

// Fingerprint identifies an upstream's configuration; equal fingerprints
// share a pool across snapshots. routeTimeout is the route's own timeout,
// which overrides the upstream's.
func Fingerprint(u *gateway.Upstream, owner string, routeTimeout *gateway.Timeout) string {
	b, _ := json.Marshal(struct {
		U *gateway.Upstream
		O string
		T *gateway.Timeout
	}{u, owner, routeTimeout})
	return string(b)
}

// New builds a pool; it starts active health checks when the upstream has
// them (Close stops them).
func New(u *gateway.Upstream, routeTimeout *gateway.Timeout, snap *gateway.Snapshot, opt Options) (*Pool, error) {
	if u.DiscoveryType != "" {
		return newDiscovered(u, routeTimeout, snap, opt)
	}
	p := &Pool{Up: u, retries: u.Retries, retryTimeout: secs(u.RetryTimeout), log: opt.Log, stop: make(chan struct{})}
	switch u.Scheme {
	case "http", "https":
	default:
		return nil, fmt.Errorf("cannot build upstream %s: scheme %q is not served by the HTTP data plane", u.ID, u.Scheme)
	}
	switch u.PassHost {
	case "node":
		p.passHost = passNode
	case "rewrite":
		p.passHost, p.rewriteHost = passRewrite, []byte(u.UpstreamHost)
	}
	tmo := u.Timeout
	if routeTimeout != nil {
		tmo = routeTimeout
	}
	// APISIX's defaults: 60 s each.
	connect, send, read := 60*time.Second, 60*time.Second, 60*time.Second
	if tmo != nil {
		connect, send, read = orDur(tmo.Connect, connect), orDur(tmo.Send, send), orDur(tmo.Read, read)
	}
	p.connect, p.send, p.read = connect, send, read
	kp, err := parseKeepalive(u.KeepalivePool)
	if err != nil {
		return nil, fmt.Errorf("cannot build upstream %s: %w", u.ID, err)
	}
	idleMax := kp.Size
	if kp.IdleTimeout == 0 {
		// idle_timeout 0: an idle connection is not kept at all
		// (fasthttp would read a zero MaxIdleConnDuration as 10 s).
		idleMax = 0
	}
	tlsCfg, err := tlsConfig(u, snap)
	if err != nil {
		return nil, err
	}
	defPort := 80
	if u.Scheme == "https" {
		defPort = 443
	}
	for _, n := range u.Nodes {
		node := &Node{Addr: n.Addr, Host: n.Host, Port: n.Port, Weight: n.Weight}
		hh := n.Host
		if n.Port != defPort {
			hh = net.JoinHostPort(n.Host, strconv.Itoa(n.Port))
		}
		node.hostHeader = []byte(hh)
		var tc *tls.Config
		if tlsCfg != nil {
			tc = tlsCfg.Clone()
			if tc.ServerName == "" {
				tc.ServerName = n.Host
			}
		}
		dialTimeout := connect
		node.client = &fasthttp.HostClient{
			Addr:      n.Addr,
			IsTLS:     u.Scheme == "https",
			TLSConfig: tc,
			Dial: func(addr string) (net.Conn, error) {
				c, err := fasthttp.DialTimeout(addr, dialTimeout)
				if err != nil {
					return nil, err
				}
				// rawsock: no scheduler hand-off per write; keptConn:
				// keepalive_pool.requests counts per connection.
				return newKeptConn(rawsock.Wrap(c)), nil
			},
			Transport:                &keepalive{size: idleMax, requests: kp.Requests},
			ReadTimeout:              read,
			WriteTimeout:             send,
			MaxIdleConnDuration:      secs(kp.IdleTimeout),
			MaxResponseBodySize:      opt.MaxResponseBytes,
			NoDefaultUserAgentHeader: true,
			// The path sent is the normalised one the route matched (as
			// nginx's $uri), so "/a/../b" cannot reach the backend as
			// something the router did not see.
			DisableHeaderNamesNormalizing: true,
			// The gateway decides retries itself (retries, retry_timeout).
			MaxIdemponentCallAttempts: 1,
			RetryIfErr:                func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
		}
		p.Nodes = append(p.Nodes, node)
	}
	if len(p.Nodes) > maxNodes {
		return nil, fmt.Errorf("cannot build upstream %s: %d nodes; at most %d are served", u.ID, len(p.Nodes), maxNodes)
	}
	if err := p.compileHash(); err != nil {
		return nil, err
	}
	switch u.Type {
	case "roundrobin", "":
		p.picker = newRoundRobin(p.Nodes)
	case "chash":
		p.picker = newCHash(p.Nodes)
	case "least_conn":
		p.picker = leastConn{}
	case "ewma":
		p.picker = ewma{}
	default:
		return nil, fmt.Errorf("cannot build upstream %s: type %q is not built", u.ID, u.Type)
	}
	if len(u.Checks) > 0 {
		c, err := parseChecks(u.Checks)
		if err != nil {
			return nil, fmt.Errorf("cannot build upstream %s: checks: %w", u.ID, err)
		}
		p.checks = c
		if c.active != nil {
			go p.probeLoop(opt, tlsCfg)
		}
	}
	return p, nil
}

func (p *Pool) compileHash() error {
	u := p.Up
	if u.Type != "chash" {
		return nil
	}
	switch u.HashOn {
	case "vars", "":
		v, ok := vars.Compile(u.Key)
		if !ok {
			return fmt.Errorf("cannot build upstream %s: chash key: unknown variable %q", u.ID, u.Key)
		}
		p.hashOn, p.hashVar = hashVars, v
	case "header":
		p.hashOn, p.hashKey = hashHeader, []byte(u.Key)
	case "cookie":
		p.hashOn, p.hashKey = hashCookie, []byte(u.Key)
	case "consumer":
		p.hashOn = hashConsumer
	case "vars_combinations":
		t, err := vars.CompileTemplate(u.Key)
		if err != nil {
			return fmt.Errorf("cannot build upstream %s: chash key: %w", u.ID, err)
		}
		p.hashOn, p.hashTmpl = hashCombination, t
	default:
		return fmt.Errorf("cannot build upstream %s: hash_on %q is not built", u.ID, u.HashOn)
	}
	return nil
}

// Close stops the pool's health checks; in-flight requests finish.
func (p *Pool) Close() { p.stopOnce.Do(func() { close(p.stop) }) }

// Attempts is how many nodes one request may try: retries+1, where the
// APISIX default (retries unset) is one attempt per node.
func (p *Pool) Attempts() int {
	if p.retries < 0 {
		return len(p.Nodes)
	}
	return p.retries + 1
}

// RetryTimeout bounds the time spent retrying (0: no bound).
func (p *Pool) RetryTimeout() time.Duration { return p.retryTimeout }

// HostHeader returns the Host to send: nil keeps the client's.
func (p *Pool) HostHeader(n *Node) []byte {
	switch p.passHost {
	case passNode:
		return n.hostHeader
	case passRewrite:
		return p.rewriteHost
	}
	return nil
}

// ErrNoHealthy is returned by Pick when every node is down.
var ErrNoHealthy = errors.New("all upstream nodes are unhealthy")

// errNone is returned by Pick when every node was tried already.
var errNone = errors.New("no untried upstream node")

// Tried is the set of nodes a request has tried.
type Tried struct{ bits [maxNodes / 64]uint64 }

const maxNodes = 256

func (t *Tried) has(i int) bool { return t.bits[i>>6]&(1<<(i&63)) != 0 }

// Add marks node i tried.
func (t *Tried) Add(i int) { t.bits[i>>6] |= 1 << (i & 63) }

// Pick chooses a healthy, untried node. key is the hash key for chash
// (nil: a rotating choice).
func (p *Pool) Pick(key []byte, tried *Tried) (int, error) {
	usable := false
	anyHealthy := false
	for i, n := range p.Nodes {
		if n.Weight <= 0 || n.down.Load() {
			continue
		}
		anyHealthy = true
		if !tried.has(i) {
			usable = true
			break
		}
	}
	if !anyHealthy {
		return -1, ErrNoHealthy
	}
	if !usable {
		return -1, errNone
	}
	return p.picker.pick(p.Nodes, key, tried), nil
}

// HashKey appends the request's chash key to dst (nil when the pool is
// not chash or the key is undefined; the client address is then used, as
// APISIX does).
func (p *Pool) HashKey(dst []byte, ctx *fasthttp.RequestCtx, vc *vars.Context) []byte {
	if p.Up.Type != "chash" {
		return nil
	}
	var ok bool
	switch p.hashOn {
	case hashVars:
		dst, ok = p.hashVar.Append(dst, ctx, vc)
	case hashHeader:
		b := ctx.Request.Header.PeekBytes(p.hashKey)
		dst, ok = append(dst, b...), b != nil
	case hashCookie:
		b := ctx.Request.Header.CookieBytes(p.hashKey)
		dst, ok = append(dst, b...), b != nil
	case hashConsumer:
		if vc != nil && vc.ConsumerName != "" {
			dst, ok = append(dst, vc.ConsumerName...), true
		}
	case hashCombination:
		n := len(dst)
		dst = p.hashTmpl.Append(dst, ctx, vc)
		ok = len(dst) > n
	}
	if !ok || len(dst) == 0 {
		if ip := ctx.RemoteIP(); ip != nil {
			return append(dst[:0], ip...)
		}
	}
	return dst
}

// Do sends req to node i and reports the outcome to its health state.
func (p *Pool) Do(i int, req *fasthttp.Request, resp *fasthttp.Response) error {
	n := p.Nodes[i]
	// The client refuses a request whose scheme differs from the node's.
	if p.Up.Scheme == "https" {
		req.URI().SetSchemeBytes(schemeHTTPS)
	} else {
		req.URI().SetSchemeBytes(schemeHTTP)
	}
	n.inflight.Add(1)
	var err error
	if _, timed := p.picker.(ewma); timed {
		// Only the ewma balancer reads response times: two clock reads,
		// an exp and two atomics per request saved for the others.
		start := time.Now()
		err = n.client.Do(req, resp)
		n.observe(time.Since(start), start)
	} else {
		err = n.client.Do(req, resp)
	}
	n.inflight.Add(-1)
	p.passive(n, resp.StatusCode(), err)
	return err
}

var schemeHTTP, schemeHTTPS = []byte("http"), []byte("https")

// IsTimeout reports whether err is a timeout.
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) || (errors.As(err, &ne) && ne.Timeout())
}

func (n *Node) observe(rtt time.Duration, at time.Time) {
	// Decay with a 10 s time constant, as APISIX's ewma balancer.
	now := uint64(at.UnixNano())
	prevAt := n.ewmaAt.Swap(now)
	prev := math.Float64frombits(n.ewma.Load())
	w := 0.0
	if prevAt != 0 && now > prevAt {
		w = math.Exp(-float64(now-prevAt) / float64(10*time.Second))
	}
	n.ewma.Store(math.Float64bits(prev*w + float64(rtt)*(1-w)))
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func orDur(s float64, def time.Duration) time.Duration {
	if s <= 0 {
		return def
	}
	return secs(s)
}

func tlsConfig(u *gateway.Upstream, snap *gateway.Snapshot) (*tls.Config, error) {
	if u.Scheme != "https" && len(u.TLS) == 0 {
		return nil, nil
	}
	var t struct {
		ClientCert   string          `json:"client_cert"`
		ClientKey    string          `json:"client_key"`
		ClientCertID gateway.ID      `json:"client_cert_id"`
		Verify       bool            `json:"verify"`
		CACerts      []string        `json:"ca_certs"`
		Extra        json.RawMessage `json:"-"`
	}
	if len(u.TLS) > 0 {
		if err := json.Unmarshal(u.TLS, &t); err != nil {
			return nil, fmt.Errorf("cannot read upstream tls: %w", err)
		}
	}
	// As APISIX: the upstream's certificate is verified only with
	// tls.verify true.
	c := &tls.Config{InsecureSkipVerify: !t.Verify, MinVersion: tls.VersionTLS12}
	if u.PassHost == "rewrite" {
		c.ServerName = u.UpstreamHost
	}
	if len(t.CACerts) > 0 {
		pool := x509.NewCertPool()
		for i, pem := range t.CACerts {
			if !pool.AppendCertsFromPEM([]byte(pem)) {
				return nil, fmt.Errorf("cannot read upstream tls.ca_certs[%d]: no PEM certificate", i)
			}
		}
		c.RootCAs = pool
	}
	switch {
	case t.ClientCert != "":
		cp, _, err := gateway.ResolveRef(t.ClientCert)
		if err != nil {
			return nil, fmt.Errorf("cannot read upstream tls.client_cert: %w", err)
		}
		kp, _, err := gateway.ResolveRef(t.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("cannot read upstream tls.client_key: %w", err)
		}
		pair, err := tls.X509KeyPair([]byte(cp), []byte(kp))
		if err != nil {
			return nil, fmt.Errorf("cannot read upstream tls client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	case t.ClientCertID != "":
		cert := snap.SSLs[string(t.ClientCertID)]
		if cert == nil || len(cert.Certificates) == 0 {
			return nil, fmt.Errorf("cannot read upstream tls: client_cert_id %q has no loaded certificate", t.ClientCertID)
		}
		c.Certificates = cert.Certificates[:1]
	}
	return c, nil
}
