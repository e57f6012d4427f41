package upstream

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

// checks is an upstream's parsed `checks`, with APISIX's defaults.
type checks struct {
	active  *active
	passive *passive
}

type active struct {
	typ         string // http, https, tcp
	timeout     time.Duration
	path        string
	host        string
	port        int
	verify      bool
	headers     [][2]string
	okInterval  time.Duration
	okStatuses  statusSet
	okNeeded    int
	badInterval time.Duration
	badStatuses statusSet
	httpFails   int
	tcpFails    int
	timeouts    int
}

type passive struct {
	okStatuses  statusSet
	okNeeded    int32
	badStatuses statusSet
	httpFails   int32
	tcpFails    int32
	timeouts    int32
}

// statusSet holds HTTP statuses 100..599 as bits.
type statusSet [8]uint64

func (s *statusSet) has(code int) bool {
	code -= 100
	return code >= 0 && code < 512 && s[code>>6]&(1<<(code&63)) != 0
}

func newStatusSet(codes []int) statusSet {
	var s statusSet
	for _, c := range codes {
		c -= 100
		if c >= 0 && c < 512 {
			s[c>>6] |= 1 << (c & 63)
		}
	}
	return s
}

type checksSpec struct {
	Active *struct {
		Type                   string      `json:"type"`
		Timeout                *float64    `json:"timeout"`
		HTTPPath               string      `json:"http_path"`
		Host                   string      `json:"host"`
		Port                   int         `json:"port"`
		HTTPSVerifyCertificate *bool       `json:"https_verify_certificate"`
		ReqHeaders             []string    `json:"req_headers"`
		Healthy                *thresholds `json:"healthy"`
		Unhealthy              *thresholds `json:"unhealthy"`
	} `json:"active"`
	Passive *struct {
		Type      string      `json:"type"`
		Healthy   *thresholds `json:"healthy"`
		Unhealthy *thresholds `json:"unhealthy"`
	} `json:"passive"`
}

type thresholds struct {
	Interval     *float64 `json:"interval"`
	HTTPStatuses []int    `json:"http_statuses"`
	Successes    *int     `json:"successes"`
	HTTPFailures *int     `json:"http_failures"`
	TCPFailures  *int     `json:"tcp_failures"`
	Timeouts     *int     `json:"timeouts"`
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

func parseChecks(raw json.RawMessage) (*checks, error) {
	var s checksSpec
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	c := &checks{}
	if a := s.Active; a != nil {
		ac := &active{typ: "http", timeout: time.Second, path: "/", host: a.Host, port: a.Port, verify: true,
			okInterval: time.Second, okStatuses: newStatusSet([]int{200, 302}), okNeeded: 2,
			badInterval: time.Second, badStatuses: newStatusSet([]int{429, 404, 500, 501, 502, 503, 504, 505}),
			httpFails: 5, tcpFails: 2, timeouts: 3}
		if a.Type != "" {
			ac.typ = a.Type
		}
		switch ac.typ {
		case "http", "https", "tcp":
		default:
			return nil, fmt.Errorf("active.type %q is not built", ac.typ)
		}
		if a.Timeout != nil {
			ac.timeout = secs(*a.Timeout)
		}
		if a.HTTPPath != "" {
			ac.path = a.HTTPPath
		}
		if a.HTTPSVerifyCertificate != nil {
			ac.verify = *a.HTTPSVerifyCertificate
		}
		for _, h := range a.ReqHeaders {
			k, v, ok := cutHeader(h)
			if !ok {
				return nil, fmt.Errorf("active.req_headers: %q is not \"Name: value\"", h)
			}
			ac.headers = append(ac.headers, [2]string{k, v})
		}
		if h := a.Healthy; h != nil {
			if h.Interval != nil {
				ac.okInterval = secs(*h.Interval)
			}
			if h.HTTPStatuses != nil {
				ac.okStatuses = newStatusSet(h.HTTPStatuses)
			}
			ac.okNeeded = intOr(h.Successes, ac.okNeeded)
		}
		if h := a.Unhealthy; h != nil {
			if h.Interval != nil {
				ac.badInterval = secs(*h.Interval)
			}
			if h.HTTPStatuses != nil {
				ac.badStatuses = newStatusSet(h.HTTPStatuses)
			}
			ac.httpFails = intOr(h.HTTPFailures, ac.httpFails)
			ac.tcpFails = intOr(h.TCPFailures, ac.tcpFails)
			ac.timeouts = intOr(h.Timeouts, ac.timeouts)
		}
		if ac.okInterval <= 0 || ac.badInterval <= 0 {
			return nil, errors.New("active: intervals must be positive")
		}
		c.active = ac
	}
	if p := s.Passive; p != nil {
		if p.Type != "" && p.Type != "http" && p.Type != "https" && p.Type != "tcp" {
			return nil, fmt.Errorf("passive.type %q is not built", p.Type)
		}
		okCodes := []int{}
		for code := 200; code < 400; code++ {
			okCodes = append(okCodes, code)
		}
		pc := &passive{okStatuses: newStatusSet(okCodes), okNeeded: 5, badStatuses: newStatusSet([]int{429, 500, 503}),
			httpFails: 5, tcpFails: 2, timeouts: 7}
		if h := p.Healthy; h != nil {
			if h.HTTPStatuses != nil {
				pc.okStatuses = newStatusSet(h.HTTPStatuses)
			}
			pc.okNeeded = int32(intOr(h.Successes, int(pc.okNeeded)))
		}
		if h := p.Unhealthy; h != nil {
			if h.HTTPStatuses != nil {
				pc.badStatuses = newStatusSet(h.HTTPStatuses)
			}
			pc.httpFails = int32(intOr(h.HTTPFailures, int(pc.httpFails)))
			pc.tcpFails = int32(intOr(h.TCPFailures, int(pc.tcpFails)))
			pc.timeouts = int32(intOr(h.Timeouts, int(pc.timeouts)))
		}
		c.passive = pc
	}
	return c, nil
}

func cutHeader(h string) (string, string, bool) {
	for i := 0; i < len(h); i++ {
		if h[i] == ':' {
			k := h[:i]
			v := h[i+1:]
			for len(v) > 0 && v[0] == ' ' {
				v = v[1:]
			}
			return k, v, k != ""
		}
	}
	return "", "", false
}

// passive feeds one real response (or error) into the node's health.
func (p *Pool) passive(n *Node, status int, err error) {
	if p.checks == nil || p.checks.passive == nil {
		return
	}
	pc := p.checks.passive
	switch {
	case err != nil && IsTimeout(err):
		if pc.timeouts > 0 && n.timeouts.Add(1) >= pc.timeouts {
			p.markDown(n, "passive: timeouts")
		}
		n.okRun.Store(0)
	case err != nil:
		if pc.tcpFails > 0 && n.fails.Add(1) >= pc.tcpFails {
			p.markDown(n, "passive: tcp failures")
		}
		n.okRun.Store(0)
	case pc.badStatuses.has(status):
		if pc.httpFails > 0 && n.fails.Add(1) >= pc.httpFails {
			p.markDown(n, "passive: http failures")
		}
		n.okRun.Store(0)
	case pc.okStatuses.has(status):
		if n.fails.Load() != 0 {
			n.fails.Store(0)
		}
		if n.timeouts.Load() != 0 {
			n.timeouts.Store(0)
		}
		if n.down.Load() && pc.okNeeded > 0 && n.okRun.Add(1) >= pc.okNeeded {
			p.markUp(n, "passive: successes")
		}
	}
}

func (p *Pool) markDown(n *Node, why string) {
	if !n.down.Swap(true) && p.log != nil {
		p.log("upstream node unhealthy", "upstream", p.Up.ID, "node", n.Addr, "reason", why)
	}
	n.fails.Store(0)
	n.timeouts.Store(0)
	n.okRun.Store(0)
}

func (p *Pool) markUp(n *Node, why string) {
	if n.down.Swap(false) && p.log != nil {
		p.log("upstream node healthy", "upstream", p.Up.ID, "node", n.Addr, "reason", why)
	}
	n.fails.Store(0)
	n.timeouts.Store(0)
	n.okRun.Store(0)
}

// probeLoop runs the active checks until Close: healthy nodes every
// healthy.interval, unhealthy ones every unhealthy.interval, each probe
// bounded by active.timeout.
func (p *Pool) probeLoop(opt Options, tlsCfg *tls.Config) {
	a := p.checks.active
	tick := a.okInterval
	if a.badInterval < tick {
		tick = a.badInterval
	}
	var tc *tls.Config
	if a.typ == "https" {
		tc = &tls.Config{InsecureSkipVerify: !a.verify, MinVersion: tls.VersionTLS12}
		if tlsCfg != nil {
			tc.Certificates = tlsCfg.Certificates
			tc.RootCAs = tlsCfg.RootCAs
		}
	}
	cl := &fasthttp.Client{TLSConfig: tc, ReadTimeout: a.timeout, WriteTimeout: a.timeout, MaxIdleConnDuration: 2 * a.okInterval,
		NoDefaultUserAgentHeader: true, MaxIdemponentCallAttempts: 1}
	type state struct {
		ok, httpBad, tcpBad, tmo int
		next                     time.Time
	}
	st := make([]state, len(p.Nodes))
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		now := time.Now()
		for i, n := range p.Nodes {
			s := &st[i]
			if now.Before(s.next) {
				continue
			}
			if n.down.Load() {
				s.next = now.Add(a.badInterval)
			} else {
				s.next = now.Add(a.okInterval)
			}
			kind := p.probe(cl, a, n)
			switch kind {
			case probeOK:
				s.httpBad, s.tcpBad, s.tmo = 0, 0, 0
				s.ok++
				if n.down.Load() && s.ok >= a.okNeeded {
					p.markUp(n, "active: successes")
					s.ok = 0
				}
			case probeHTTPBad:
				s.ok = 0
				s.httpBad++
				if a.httpFails > 0 && s.httpBad >= a.httpFails {
					p.markDown(n, "active: http failures")
					s.httpBad = 0
				}
			case probeTCPBad:
				s.ok = 0
				s.tcpBad++
				if a.tcpFails > 0 && s.tcpBad >= a.tcpFails {
					p.markDown(n, "active: tcp failures")
					s.tcpBad = 0
				}
			case probeTimeout:
				s.ok = 0
				s.tmo++
				if a.timeouts > 0 && s.tmo >= a.timeouts {
					p.markDown(n, "active: timeouts")
					s.tmo = 0
				}
			}
		}
		select {
		case <-p.stop:
			cl.CloseIdleConnections()
			return
		case <-t.C:
		}
	}
}

const (
	probeOK = iota
	probeNeutral
	probeHTTPBad
	probeTCPBad
	probeTimeout
)

func (p *Pool) probe(cl *fasthttp.Client, a *active, n *Node) int {
	host, port := n.Host, n.Port
	if a.port != 0 {
		port = a.port
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	if a.typ == "tcp" {
		c, err := net.DialTimeout("tcp", addr, a.timeout)
		if err != nil {
			if IsTimeout(err) {
				return probeTimeout
			}
			return probeTCPBad
		}
		c.Close()
		return probeOK
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	scheme := "http://"
	if a.typ == "https" {
		scheme = "https://"
	}
	req.SetRequestURI(scheme + addr + a.path)
	if a.host != "" {
		req.Header.SetHost(a.host)
	}
	for _, h := range a.headers {
		req.Header.Set(h[0], h[1])
	}
	err := cl.DoTimeout(req, resp, a.timeout)
	switch {
	case err != nil && IsTimeout(err):
		return probeTimeout
	case err != nil:
		return probeTCPBad
	case a.okStatuses.has(resp.StatusCode()):
		return probeOK
	case a.badStatuses.has(resp.StatusCode()):
		return probeHTTPBad
	}
	return probeNeutral
}
