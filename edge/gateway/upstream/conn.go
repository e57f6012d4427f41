package upstream

import (
	"crypto/tls"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// Raw connections for the requests the gateway relays itself rather than
// through a node's fasthttp client: WebSocket upgrades, which outlive one
// request/response exchange.

// Dial opens a connection to node i within the connect timeout: TCP, and
// TLS with the node's client settings when the scheme is https (ALPN
// http/1.1 only, since an upgrade needs HTTP/1.1).
func (p *Pool) Dial(i int) (net.Conn, error) {
	n := p.Nodes[i]
	start := time.Now()
	c, err := fasthttp.DialTimeout(n.Addr, p.connect)
	if err != nil {
		return nil, err
	}
	if p.Up.Scheme != "https" {
		return c, nil
	}
	cfg := n.client.TLSConfig.Clone()
	cfg.NextProtos = []string{"http/1.1"}
	tc := tls.Client(c, cfg)
	_ = tc.SetDeadline(start.Add(p.connect))
	if err := tc.Handshake(); err != nil {
		c.Close()
		return nil, err
	}
	_ = tc.SetDeadline(time.Time{})
	return tc, nil
}

// Timeouts returns the effective connect, send and read timeouts.
func (p *Pool) Timeouts() (connect, send, read time.Duration) { return p.connect, p.send, p.read }

// Report feeds the outcome of a request the gateway sent itself (status
// 0 with err set for a failure) to node i's passive health checks.
func (p *Pool) Report(i int, status int, err error) { p.passive(p.Nodes[i], status, err) }

// Begin and End count a long-lived connection to node i as in flight, so
// least_conn and ewma see it for as long as it lasts.
func (p *Pool) Begin(i int) { p.Nodes[i].inflight.Add(1) }

// End is Begin's counterpart.
func (p *Pool) End(i int) { p.Nodes[i].inflight.Add(-1) }
