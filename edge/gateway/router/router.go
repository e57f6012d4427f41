// Package router matches a request against the routes of one compiled
// admin snapshot. It is built once per snapshot (New) and read without
// locks: exact URIs sit in a map and prefix URIs ("/api/*") in a radix
// tree, so finding the candidates costs one map lookup plus one walk down
// the request path, whatever the number of routes; only the few routes
// sharing a path are then checked for host, method, client address and
// vars.
//
// Order, as lua-resty-radixtree's: an exact URI before any prefix, a
// longer prefix before a shorter one, and among routes on the same path
// the higher priority first, then the lower ID.
package router

import (
	"bytes"
	"math/bits"
	"net/netip"
	"unsafe"

	"github.com/valyala/fasthttp"

	"gw/admin/gateway"
	"gw/edge/gateway/vars"
)

// Entry is one route ready to match.
type Entry struct {
	Route   *gateway.Route
	hosts   []gateway.Host
	methods uint16
	cidrs   []netip.Prefix
	vars    *Expr
	order   int // position in the snapshot's priority order
}

// Router is the compiled matcher of one snapshot; it is immutable.
type Router struct {
	exact  map[string][]*Entry
	prefix *node
	n      int
}

// Error is a route that could not be compiled for matching (its vars).
type Error struct {
	RouteID string
	Err     error
}

// New compiles the enabled routes of snap. A route whose vars expression
// does not compile is left out and reported (the admin API checks vars at
// write time with the same compiler, so this is only a store written by
// something else).
func New(snap *gateway.Snapshot) (*Router, []Error) {
	r := &Router{exact: map[string][]*Entry{}, prefix: &node{}}
	var errs []Error
	for i, rt := range snap.Routes {
		if !rt.Enabled {
			continue
		}
		e := &Entry{Route: rt, hosts: rt.Hosts, methods: rt.Methods, cidrs: rt.RemoteAddrs, order: i}
		if rt.Service != nil && len(rt.Hosts) == 0 {
			// A service's hosts apply to its routes that name none.
			e.hosts = rt.Service.Hosts
		}
		if len(rt.Vars) > 0 {
			x, err := CompileExpr(rt.Vars)
			if err != nil {
				errs = append(errs, Error{rt.ID, err})
				continue
			}
			e.vars = x
		}
		for _, u := range rt.URIs {
			if u.Prefix {
				r.prefix.insert(u.Path, e)
			} else {
				r.exact[u.Path] = insertSorted(r.exact[u.Path], e)
			}
		}
		r.n++
	}
	return r, errs
}

// Len is the number of routes the router serves.
func (r *Router) Len() int { return r.n }

// CheckVars compiles a vars expression for the admin API's write check.
func CheckVars(raw []byte) error {
	_, err := CompileExpr(raw)
	return err
}

func insertSorted(l []*Entry, e *Entry) []*Entry {
	i := len(l)
	for i > 0 && l[i-1].order > e.order {
		i--
	}
	l = append(l, nil)
	copy(l[i+1:], l[i:])
	l[i] = e
	return l
}

// Request is what a match reads from the request, taken once.
type Request struct {
	Ctx    *fasthttp.RequestCtx
	Path   []byte
	Host   []byte // without port
	Method uint16
	ip     netip.Addr
	ipDone bool
	// Buf is scratch space for vars evaluation, reused across requests.
	Buf []byte
}

// Reset prepares q for ctx.
func (q *Request) Reset(ctx *fasthttp.RequestCtx) {
	q.Ctx = ctx
	q.Path = ctx.Path()
	q.Host = vars.HostOnly(ctx.Request.Header.Host())
	q.Method = methodBit(ctx.Method())
	q.ipDone = false
}

func (q *Request) remoteIP() netip.Addr {
	if !q.ipDone {
		q.ipDone = true
		q.ip = netip.Addr{}
		if ip := q.Ctx.RemoteIP(); ip != nil {
			if a, ok := netip.AddrFromSlice(ip); ok {
				q.ip = a.Unmap()
			}
		}
	}
	return q.ip
}

// Match returns the route for q, or nil.
func (r *Router) Match(q *Request) *Entry {
	if l, ok := r.exact[string(q.Path)]; ok {
		if e := r.first(l, q); e != nil {
			return e
		}
	}
	return r.prefix.match(q.Path, r, q)
}

func (r *Router) first(l []*Entry, q *Request) *Entry {
	for _, e := range l {
		if e.matches(q) {
			return e
		}
	}
	return nil
}

func (e *Entry) matches(q *Request) bool {
	if e.methods != 0 && e.methods&q.Method == 0 {
		return false
	}
	if len(e.hosts) > 0 && !matchHost(e.hosts, q.Host) {
		return false
	}
	if len(e.cidrs) > 0 {
		ip := q.remoteIP()
		ok := false
		for _, p := range e.cidrs {
			if p.Contains(ip) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if e.vars != nil {
		var ok bool
		ok, q.Buf = e.vars.Eval(q.Ctx, nil, q.Buf)
		if !ok {
			return false
		}
	}
	return true
}

func matchHost(hosts []gateway.Host, host []byte) bool {
	for i := range hosts {
		h := &hosts[i]
		if h.Wildcard {
			if len(host) > len(h.Name) && bytes.EqualFold(host[len(host)-len(h.Name):], s2b(h.Name)) {
				return true
			}
		} else if len(host) == len(h.Name) && bytes.EqualFold(host, s2b(h.Name)) {
			return true
		}
	}
	return false
}

func methodBit(m []byte) uint16 {
	switch string(m) {
	case "GET":
		return gateway.MethodGET
	case "POST":
		return gateway.MethodPOST
	case "PUT":
		return gateway.MethodPUT
	case "DELETE":
		return gateway.MethodDELETE
	case "PATCH":
		return gateway.MethodPATCH
	case "HEAD":
		return gateway.MethodHEAD
	case "OPTIONS":
		return gateway.MethodOPTIONS
	case "CONNECT":
		return gateway.MethodCONNECT
	case "TRACE":
		return gateway.MethodTRACE
	case "PURGE":
		return gateway.MethodPURGE
	}
	return 0
}

// node is a radix tree node over prefix paths: label is the edge from its
// parent; entries are the routes whose prefix ends here.
type node struct {
	label string
	// has marks the first bytes of the children's labels; children are
	// sorted by that byte, so a child's index is the number of marks
	// below its byte: one lookup whatever the fan-out.
	has      [4]uint64
	children []*node
	entries  []*Entry
}

func (n *node) insert(path string, e *Entry) {
	for {
		if path == "" {
			n.entries = insertSorted(n.entries, e)
			return
		}
		c := n.child(path[0])
		if c == nil {
			n.addChild(&node{label: path, entries: []*Entry{e}})
			return
		}
		l := commonPrefix(c.label, path)
		if l < len(c.label) {
			// Split the child at l: mid takes its place.
			mid := &node{label: c.label[:l]}
			c.label = c.label[l:]
			mid.addChild(c)
			n.children[n.index(mid.label[0])] = mid
			c = mid
		}
		n, path = c, path[l:]
	}
}

// addChild adds c, whose label's first byte no child has yet.
func (n *node) addChild(c *node) {
	b := c.label[0]
	i := n.index(b)
	n.has[b>>6] |= 1 << (b & 63)
	n.children = append(n.children, nil)
	copy(n.children[i+1:], n.children[i:])
	n.children[i] = c
}

// index is the number of children whose first byte is below b.
func (n *node) index(b byte) int {
	w := b >> 6
	i := bits.OnesCount64(n.has[w] & (1<<(b&63) - 1))
	for j := byte(0); j < w; j++ {
		i += bits.OnesCount64(n.has[j])
	}
	return i
}

func commonPrefix(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// match walks path down the tree, remembering the nodes that carry
// routes, then tries them deepest (longest prefix) first. The walk is a
// loop; a child is found through a bitmap of first bytes (constant cost
// whatever the fan-out) and labels, mostly short, are compared inline
// (calls to IndexByte and memequal cost more than the work) (see docs/PERFORMANCE.md, "Gateway route match at 10k
// routes").
func (n *node) match(path []byte, r *Router, q *Request) *Entry {
	var routed [8]*node
	depth := 0
	if len(n.entries) > 0 {
		routed[0], depth = n, 1
	}
	root, full := n, path
	for len(path) > 0 {
		c := n.child(path[0])
		if c == nil || !hasLabel(path, c.label) {
			break
		}
		path, n = path[len(c.label):], c
		if len(n.entries) > 0 {
			if depth == len(routed) {
				// More routed prefixes on one path than kept here.
				return root.matchAll(full, r, q)
			}
			routed[depth] = n
			depth++
		}
	}
	for depth > 0 {
		depth--
		if e := r.first(routed[depth].entries, q); e != nil {
			return e
		}
	}
	return nil
}

// child returns the child whose label starts with b, or nil.
func (n *node) child(b byte) *node {
	if n.has[b>>6]&(1<<(b&63)) == 0 {
		return nil
	}
	return n.children[n.index(b)]
}

// hasLabel reports whether path starts with label, whose first byte the
// child lookup has matched already.
func hasLabel(path []byte, label string) bool {
	if len(path) < len(label) {
		return false
	}
	p := path[:len(label)]
	for i := 1; i < len(label); i++ {
		if p[i] != label[i] {
			return false
		}
	}
	return true
}

// matchAll is match without a bound on the routed prefixes of one path.
func (n *node) matchAll(path []byte, r *Router, q *Request) *Entry {
	if len(path) > 0 {
		if c := n.child(path[0]); c != nil && hasLabel(path, c.label) {
			if e := c.matchAll(path[len(c.label):], r, q); e != nil {
				return e
			}
		}
	}
	if len(n.entries) > 0 {
		return r.first(n.entries, q)
	}
	return nil
}

// s2b views a compiled host name as bytes for a comparison.
func s2b(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// Index is the route's position in the snapshot's Routes, for callers
// that keep per-route state beside the router.
func (e *Entry) Index() int { return e.order }
