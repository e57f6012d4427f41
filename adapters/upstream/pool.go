// Package upstream is gw's HTTP client towards providers (and MCP servers,
// for tools/call's lean path in edge/mcp): one keep-alive
// fasthttp.HostClient per (scheme, host:port, TLS settings, fixed
// addresses), shared across snapshots so that a reload keeps warm
// connections; a dialer that honours resolve_addresses or else a small
// DNS cache; read deadlines for streamed bodies; and error classification
// for retry logic.
//
// # Ownership
//
// The caller acquires req and resp (fasthttp.AcquireRequest/Response) and
// releases both. Do returns with the body read and the connection back in
// the pool. DoStream returns once the headers are read; resp.BodyStream()
// then reads from the connection, and the caller must call
// resp.CloseBodyStream() before fasthttp.ReleaseResponse(resp): the
// connection returns to the pool if the body was read to io.EOF and is
// closed otherwise (a stream abandoned on a gap timeout, a caller that left).
// DoStreamWatched is DoStream whose exchange another goroutine can abort at
// any point, the wait for the headers included (watch.go).
package upstream

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// Options are the deployment-wide client settings. Zero fields take the
// defaults named on them.
type Options struct {
	MaxConnsPerHost     int           // default fasthttp.DefaultMaxConnsPerHost (512)
	MaxIdleConnDuration time.Duration // default fasthttp.DefaultMaxIdleConnDuration (10 s)
	// MaxConnWaitTimeout is how long a request waits for a free connection
	// when MaxConnsPerHost are busy; 0 fails at once (KindBusy).
	MaxConnWaitTimeout  time.Duration
	DialTimeout         time.Duration // one dial, all addresses; default 10 s
	ReadBufferSize      int           // default 4096; bounds response header size
	WriteBufferSize     int           // default 4096
	MaxResponseBodySize int           // buffered bodies (Do); 0: unlimited
	UserAgent           string        // default "gw"; a request's own User-Agent wins
	// DNS is the cache the dialers share; nil creates one with the spec's
	// limits.
	DNS *DNSCache
	// CACertPEM is the deployment's upstream.tls.ca_cert (PEM text):
	// trusted by every https target in addition to the system roots and
	// the target's own tls.ca_cert. Bedrock and Realtime dispatch, which
	// ignore a key's tls block, get only this.
	CACertPEM []byte
	// InsecureSkipVerify is upstream.tls.verify false: no target's
	// certificate is checked, whatever its own tls.verify (test use only).
	InsecureSkipVerify bool
}

// Target is where a provider key's requests go.
type Target struct {
	// BaseURL is an absolute http(s) URL; only scheme, host and port are
	// used here (requests carry their full URL).
	BaseURL string
	TLS     TLS
	// ResolveAddresses replace DNS for the host, tried in order.
	ResolveAddresses []netip.Addr
}

// TLS is a provider key's `tls` block, for https targets.
type TLS struct {
	CACert string         // PEM as written; part of the pool key (hashed)
	CAPool *x509.CertPool // system roots plus CACert; nil: system roots
	Verify bool           // verify the server certificate
}

// ErrBadTarget is returned by Pool.Client for a base URL that is not an
// absolute http or https URL.
var ErrBadTarget = errors.New("upstream: base URL must be an absolute http or https URL")

// Pool holds the clients of every target. It is safe for concurrent use and
// lives for the process: snapshots take clients from it when they compile.
type Pool struct {
	opts Options
	dns  *DNSCache

	mu      sync.Mutex
	clients map[string]*Client
}

// NewPool returns an empty pool.
func NewPool(opts Options) *Pool {
	if opts.MaxConnsPerHost <= 0 {
		opts.MaxConnsPerHost = fasthttp.DefaultMaxConnsPerHost
	}
	if opts.MaxIdleConnDuration <= 0 {
		opts.MaxIdleConnDuration = fasthttp.DefaultMaxIdleConnDuration
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 10 * time.Second
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "gw"
	}
	p := &Pool{opts: opts, dns: opts.DNS, clients: make(map[string]*Client)}
	if p.dns == nil {
		p.dns = NewDNSCache(DNSOptions{})
	}
	return p
}

// DNS returns the pool's DNS cache.
func (p *Pool) DNS() *DNSCache { return p.dns }

// Client returns the client of t, creating it on first use. Targets with the
// same key (see Key) share one client and its connections, across snapshots.
func (p *Pool) Client(t Target) (*Client, error) {
	ep, err := parseTarget(t)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.clients[ep.key]; c != nil {
		return c, nil
	}
	c := p.newClient(ep, t)
	p.clients[ep.key] = c
	return c, nil
}

// Sweep forgets clients with no open connection that were not used for
// idle, and returns how many it dropped. A snapshot that still holds a
// dropped client may keep using it; it is only no longer shared. Call it
// after a reload or periodically.
func (p *Pool) Sweep(idle time.Duration) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for k, c := range p.clients {
		if c.hc.ConnsCount() == 0 && time.Since(c.hc.LastUseTime()) >= idle {
			delete(p.clients, k)
			n++
		}
	}
	return n
}

// Len returns the number of clients held.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.clients)
}

// CloseIdleConnections closes the idle connections of every client.
func (p *Pool) CloseIdleConnections() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.clients {
		c.hc.CloseIdleConnections()
	}
}

// endpoint is a parsed Target.
type endpoint struct {
	key      string
	tls      bool
	hostname string // without brackets
	addr     string // host:port
}

// parseTarget canonicalises t. The key is
// "scheme://host:port|verify=<bool>|ca=<sha256 of the PEM or system>|ra=<addresses>",
// so equal settings from different snapshots map to one client while a
// different CA, verify flag or address list gets its own.
func parseTarget(t Target) (endpoint, error) {
	u, err := url.Parse(t.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return endpoint{}, ErrBadTarget
	}
	ep := endpoint{tls: u.Scheme == "https", hostname: strings.ToLower(u.Hostname())}
	port := u.Port()
	if port == "" {
		port = "80"
		if ep.tls {
			port = "443"
		}
	}
	ep.addr = net.JoinHostPort(ep.hostname, port)
	var b strings.Builder
	b.WriteString(u.Scheme)
	b.WriteString("://")
	b.WriteString(ep.addr)
	if ep.tls {
		if t.TLS.Verify {
			b.WriteString("|verify=true")
		} else {
			b.WriteString("|verify=false")
		}
		b.WriteString("|ca=")
		if t.TLS.CACert == "" {
			b.WriteString("system")
		} else {
			sum := sha256.Sum256([]byte(t.TLS.CACert))
			b.WriteString(hex.EncodeToString(sum[:]))
		}
	}
	if len(t.ResolveAddresses) > 0 {
		b.WriteString("|ra=")
		for i, a := range t.ResolveAddresses {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(a.String())
		}
	}
	ep.key = b.String()
	return ep, nil
}

func (p *Pool) newClient(ep endpoint, t Target) *Client {
	d := &dialer{fixed: t.ResolveAddresses, dns: p.dns, timeout: p.opts.DialTimeout}
	hc := &fasthttp.HostClient{
		Addr:                      ep.addr,
		Name:                      p.opts.UserAgent,
		IsTLS:                     ep.tls,
		DialTimeout:               d.dial,
		MaxConns:                  p.opts.MaxConnsPerHost,
		MaxIdleConnDuration:       p.opts.MaxIdleConnDuration,
		MaxConnWaitTimeout:        p.opts.MaxConnWaitTimeout,
		ReadBufferSize:            p.opts.ReadBufferSize,
		WriteBufferSize:           p.opts.WriteBufferSize,
		MaxResponseBodySize:       p.opts.MaxResponseBodySize,
		MaxIdemponentCallAttempts: 1, // retries are Client.Do's and the edge's business
		DisablePathNormalizing:    true,
		ConnPoolStrategy:          fasthttp.LIFO, // warm connections first; idle ones age out
	}
	if ep.tls {
		hc.TLSConfig = &tls.Config{
			ServerName:         ep.hostname,
			RootCAs:            p.roots(t.TLS.CAPool), // nil: system roots
			InsecureSkipVerify: !t.TLS.Verify || p.opts.InsecureSkipVerify,
			MinVersion:         tls.VersionTLS12,
			ClientSessionCache: tls.NewLRUClientSessionCache(0),
		}
	}
	return &Client{hc: hc, key: ep.key}
}

// roots returns the CAs a target trusts: its own pool (system roots plus its
// tls.ca_cert; nil for the system roots alone) plus the deployment's
// upstream.tls.ca_cert.
func (p *Pool) roots(own *x509.CertPool) *x509.CertPool {
	if len(p.opts.CACertPEM) == 0 {
		return own
	}
	var pool *x509.CertPool
	if own != nil {
		pool = own.Clone()
	} else if sys, err := x509.SystemCertPool(); err == nil {
		pool = sys
	} else {
		pool = x509.NewCertPool()
	}
	pool.AppendCertsFromPEM(p.opts.CACertPEM)
	return pool
}

// Client sends requests to one target over its keep-alive pool. It is safe
// for concurrent use.
type Client struct {
	hc  *fasthttp.HostClient
	key string
}

// Key returns the canonical pool key (no credentials: user-info is not
// part of it).
func (c *Client) Key() string { return c.key }

// HostClient exposes the underlying client for metrics (ConnsCount,
// PendingRequests). Do not change its settings.
func (c *Client) HostClient() *fasthttp.HostClient { return c.hc }

// Do sends req and reads the whole response into resp. timeout bounds the
// whole call (dial, write, headers and body); 0 means no deadline. A request
// that fails on a keep-alive connection the server had closed while idle is
// resent once on another connection, unless its body is a stream (it cannot
// be read again). Errors are classified by Classify.
func (c *Client) Do(req *fasthttp.Request, resp *fasthttp.Response, timeout time.Duration) error {
	resp.StreamBody = false
	return c.do(req, resp, timeout, nil)
}

// DoStream sends req and returns once the response headers are read;
// resp.BodyStream() then yields the body as it arrives (see the package
// comment for who releases what). headerTimeout bounds dial, write and the
// wait for the headers (0: none). The deadline it sets stays on the
// connection: call SetReadDeadline before each body read to apply the gap
// timeout (a zero time.Time clears it).
func (c *Client) DoStream(req *fasthttp.Request, resp *fasthttp.Response, headerTimeout time.Duration) error {
	resp.StreamBody = true
	return c.do(req, resp, headerTimeout, nil)
}

// do sends req, resending it once on a stale keep-alive connection. b is
// the body of DoStreamWatched (nil for the others), set on req for each
// attempt.
func (c *Client) do(req *fasthttp.Request, resp *fasthttp.Response, timeout time.Duration, b *watchedBody) error {
	start := time.Now()
	var deadline time.Time
	if timeout > 0 {
		deadline = start.Add(timeout)
	}
	// A body stream is read once: fasthttp drops it from req once written,
	// so it is told apart before the first attempt, not after it.
	stream := b == nil && req.IsBodyStream()
	for attempt := 0; ; attempt++ {
		if b != nil {
			b.off, b.started, b.refused = 0, false, false
			req.SetBodyStream(b, len(b.body))
		}
		var err error
		if timeout > 0 {
			err = c.hc.DoDeadline(req, resp, deadline)
		} else {
			err = c.hc.Do(req, resp)
		}
		if err == nil || attempt > 0 || stream || b != nil && b.refused || Classify(err, 0) != KindTransport || !staleIdleConn(resp, start) {
			return err
		}
	}
}

// staleIdleConn reports whether the failed attempt in resp ran on an idle
// pooled connection that the server closed before answering.
func staleIdleConn(resp *fasthttp.Response, start time.Time) bool {
	a, ok := resp.RemoteAddr().(*ConnAddr)
	return ok && a.conn != nil && a.conn.staleIdle(start)
}
