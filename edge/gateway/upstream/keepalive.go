package upstream

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	aiup "gw/adapters/upstream"
)

// keepalive_pool as OpenResty's balancer keepalive (ngx.balancer
// enable_keepalive with a pool per peer, which APISIX names host#port):
// each node keeps at most size idle connections, so a connection returned
// to a full pool is closed; a connection is closed after it has served
// requests requests; an idle one is closed after idle_timeout (the
// HostClient's MaxIdleConnDuration). APISIX's defaults apply when the
// upstream sets no keepalive_pool: 320, 1000 and 60 s (its nginx
// keepalive, keepalive_requests and keepalive_timeout).
//
// fasthttp's HostClient has neither limit (it pools every returned
// connection and counts no requests), so the node clients take this
// RoundTripper: fasthttp's default transport for a buffered response,
// with the release decision made here.
type keepalive struct {
	size     int
	requests int
	// mu makes the idle count check and the release one step, so
	// concurrent releases cannot both see room for one more.
	mu sync.Mutex
}

// keepaliveSpec is the upstream's keepalive_pool with APISIX's defaults.
type keepaliveSpec struct {
	Size        int     `json:"size"`
	IdleTimeout float64 `json:"idle_timeout"`
	Requests    int     `json:"requests"`
}

func parseKeepalive(raw json.RawMessage) (keepaliveSpec, error) {
	kp := keepaliveSpec{Size: 320, IdleTimeout: 60, Requests: 1000}
	if len(raw) == 0 {
		return kp, nil
	}
	if err := json.Unmarshal(raw, &kp); err != nil {
		return kp, fmt.Errorf("cannot read keepalive_pool: %w", err)
	}
	// The admin schema bounds them (size >= 1, requests >= 1,
	// idle_timeout >= 0); this is for a store written by something else.
	if kp.Size < 1 || kp.Requests < 1 || kp.IdleTimeout < 0 {
		return kp, fmt.Errorf("cannot read keepalive_pool: size %d, requests %d, idle_timeout %g out of range", kp.Size, kp.Requests, kp.IdleTimeout)
	}
	return kp, nil
}

// keptConn counts the requests a connection has carried. It is used by
// one request at a time (the HostClient hands a connection out
// exclusively, through its locked pool), so served needs no atomics.
type keptConn struct {
	net.Conn
	served int
	req    aiup.RequestWriter // whole requests leave with the read of their answer
}

func newKeptConn(c net.Conn) *keptConn {
	return &keptConn{Conn: c, req: aiup.NewRequestWriter(c)}
}

func (k *keptConn) Write(p []byte) (int, error) { return k.req.Write(k.Conn, p) }

func (k *keptConn) Read(p []byte) (int, error) {
	k.req.Read()
	return k.Conn.Read(p)
}

// keptOf finds the counter under a connection the HostClient may have
// wrapped in TLS itself.
func keptOf(c net.Conn) *keptConn {
	switch c := c.(type) {
	case *keptConn:
		return c
	case *tls.Conn:
		if k, ok := c.NetConn().(*keptConn); ok {
			return k
		}
	}
	return nil
}

// RoundTrip sends req on a pooled (or new) connection and reads the whole
// answer, as fasthttp's default transport does for a buffered response.
func (k *keepalive) RoundTrip(hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response) (bool, error) {
	if resp.StreamBody {
		// Releasing a streamed answer's connection needs fasthttp's
		// internal stream type; the gateway buffers every answer.
		return fasthttp.DefaultTransport.RoundTrip(hc, req, resp)
	}
	cc, err := hc.AcquireConn(0, req.ConnectionClose())
	if err != nil {
		return false, err
	}
	conn := cc.Conn()
	last := false
	if kc := keptOf(conn); kc != nil {
		kc.served++
		last = kc.served >= k.requests
	}
	resp.ParseNetConn(conn)

	var deadline time.Time
	if hc.WriteTimeout > 0 {
		deadline = time.Now().Add(hc.WriteTimeout)
	}
	if err = conn.SetWriteDeadline(deadline); err != nil {
		hc.CloseConn(cc)
		return true, err
	}
	bw := hc.AcquireWriter(conn)
	err = req.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	hc.ReleaseWriter(bw)
	if err != nil {
		hc.CloseConn(cc)
		if x, ok := err.(interface{ Timeout() bool }); ok && x.Timeout() {
			err = fasthttp.ErrTimeout
		}
		return true, err
	}

	deadline = time.Time{}
	if hc.ReadTimeout > 0 {
		deadline = time.Now().Add(hc.ReadTimeout)
	}
	if err = conn.SetReadDeadline(deadline); err != nil {
		hc.CloseConn(cc)
		return true, err
	}
	if req.Header.IsHead() {
		resp.SkipBody = true
	}
	if hc.DisableHeaderNamesNormalizing {
		resp.Header.DisableNormalizing()
	}
	br := hc.AcquireReader(conn)
	err = resp.ReadLimitBody(br, hc.MaxResponseBodySize)
	hc.ReleaseReader(br)
	if err != nil {
		hc.CloseConn(cc)
		// The same answer would be too large again.
		return err != fasthttp.ErrBodyTooLarge, err
	}

	if last || req.ConnectionClose() || resp.ConnectionClose() {
		hc.CloseConn(cc)
		return false, nil
	}
	k.mu.Lock()
	if hc.IdleConnsCount() >= k.size {
		k.mu.Unlock()
		hc.CloseConn(cc)
		return false, nil
	}
	hc.ReleaseConn(cc)
	k.mu.Unlock()
	return false, nil
}
