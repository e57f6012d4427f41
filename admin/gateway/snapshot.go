// Package gateway compiles the management API's stored resources (routes,
// services, upstreams, plugin configs, global rules, consumers and their
// credentials, SSL certificates, stream routes, plugin metadata, secrets)
// into an immutable, precomputed Snapshot: routes with their service and
// plugin config merged and their upstream resolved, consumers indexed by
// credential, certificates indexed by SNI. The Runner keeps the Snapshot in
// step with the store's Watch and swaps it atomically (Holder), so a write
// through any gw process sharing the store applies everywhere.
//
// The general gateway's data plane (the router and plugins that serve these
// routes) reads the Holder; it is not part of this package.
package gateway

import (
	"crypto/tls"
	"encoding/json"
	"net/netip"
	"strings"
	"sync/atomic"
)

// Snapshot is one compiled, immutable view of every stored resource. Nothing
// in it may be modified once published.
type Snapshot struct {
	// Rev is the store revision the snapshot reflects.
	Rev int64
	// Routes are the enabled routes, highest priority first (then by ID).
	Routes []*Route
	// RouteByID holds every route that compiled, enabled or not.
	RouteByID      map[string]*Route
	Services       map[string]*Service
	Upstreams      map[string]*Upstream
	PluginConfigs  map[string]Plugins
	GlobalRules    []*GlobalRule // in order of ID
	PluginMetadata map[string]json.RawMessage
	Consumers      map[string]*Consumer
	// Auth maps an auth plugin name (key-auth, basic-auth, jwt-auth) and a
	// credential's identifying value (key, username) to its consumer.
	Auth map[string]map[string]*Consumer
	// AuthConf holds the credential configuration behind each Auth entry
	// (a basic-auth password, a jwt-auth secret), keyed the same way.
	AuthConf     map[string]map[string]json.RawMessage
	SSLs         map[string]*Cert
	sniExact     map[string]*Cert
	sniWildcard  map[string]*Cert // by suffix ".example.com"
	StreamRoutes []*StreamRoute
	Secrets      map[string]json.RawMessage // "vault/1" -> config
	// Errors lists stored resources left out because they do not compile
	// (written by a process that did not check them, or whose reference
	// went away with a ttl); the admin API refuses such writes itself.
	Errors []Error
}

// Error is one resource that did not compile.
type Error struct {
	Key string `json:"key"`
	Msg string `json:"error"`
}

// URI is one route path: exact, or a prefix when it ended in "*".
type URI struct {
	Path   string
	Prefix bool
}

// Host is one route host: exact, or a suffix match for "*.example.com".
type Host struct {
	Name     string // lower case; for a wildcard the suffix ".example.com"
	Wildcard bool
}

// Method bits; a route with Methods == 0 allows every method.
const (
	MethodGET uint16 = 1 << iota
	MethodPOST
	MethodPUT
	MethodDELETE
	MethodPATCH
	MethodHEAD
	MethodOPTIONS
	MethodCONNECT
	MethodTRACE
	MethodPURGE
)

var methodBits = map[string]uint16{"GET": MethodGET, "POST": MethodPOST, "PUT": MethodPUT, "DELETE": MethodDELETE,
	"PATCH": MethodPATCH, "HEAD": MethodHEAD, "OPTIONS": MethodOPTIONS, "CONNECT": MethodCONNECT, "TRACE": MethodTRACE, "PURGE": MethodPURGE}

// MethodBit returns the bit of an HTTP method, 0 for an unknown one.
func MethodBit(m string) uint16 { return methodBits[m] }

// Route is a compiled route.
type Route struct {
	ID          string
	Name        string
	Enabled     bool
	URIs        []URI
	Hosts       []Host
	Methods     uint16
	RemoteAddrs []netip.Prefix
	Priority    int
	Vars        json.RawMessage // conditions, evaluated by the data plane
	FilterFunc  string
	Script      string
	// Plugins are the route's plugins merged over its plugin config's and
	// its service's (the route's own entry wins, then the plugin config's).
	Plugins         Plugins
	Upstream        *Upstream // inline, by upstream_id, or the service's
	Service         *Service
	PluginConfigID  string
	Timeout         *Timeout
	EnableWebsocket bool
	ModRev          int64
	UpstreamID      string // as referenced (the resolved pool is Upstream)
	order           idOrder
}

// Service is a compiled service.
type Service struct {
	ID              string
	Name            string
	Plugins         Plugins
	Upstream        *Upstream
	Hosts           []Host
	EnableWebsocket bool
}

// Node is one upstream target.
type Node struct {
	Host     string
	Port     int
	Weight   int
	Priority int
	Addr     string // host:port, ready to dial
}

// Upstream is a compiled upstream pool with its defaults applied.
type Upstream struct {
	ID            string // "" for an inline upstream
	Name          string
	Type          string // roundrobin, chash, ewma, least_conn
	Nodes         []Node
	Scheme        string
	PassHost      string
	UpstreamHost  string
	Retries       int // -1: one attempt per node (the APISIX default)
	RetryTimeout  float64
	Timeout       *Timeout
	HashOn        string
	Key           string
	Checks        json.RawMessage
	TLS           json.RawMessage
	KeepalivePool json.RawMessage
	DiscoveryType string
	ServiceName   string
}

// GlobalRule is a compiled global rule.
type GlobalRule struct {
	ID      string
	Plugins Plugins
	// Err is why the rule cannot run (a secret reference that does not
	// resolve): the data plane then serves nothing rather than skip it.
	Err string
}

// Consumer is a compiled consumer.
type Consumer struct {
	Username string
	Plugins  Plugins // consumer-level plugins (limits and the like)
}

// Cert is a compiled SSL object.
type Cert struct {
	ID        string
	Type      string // server or client
	SNIs      []string
	Protocols []string
	// Certificates are the parsed pairs.
	Certificates []tls.Certificate
	// Reference reports that some PEM came from a resolved secret
	// reference ($env://).
	Reference bool
	Enabled   bool // status 1 (a disabled certificate is not served)
}

// StreamRoute is a compiled L4 route.
type StreamRoute struct {
	ID         string
	RemoteAddr netip.Prefix
	ServerAddr string
	ServerPort int
	SNI        string
	Upstream   *Upstream
	Plugins    Plugins
}

// CertFor returns the enabled server certificate for an SNI: an exact
// match, else the longest wildcard suffix, else nil.
func (s *Snapshot) CertFor(sni string) *Cert {
	sni = strings.ToLower(sni)
	if c := s.sniExact[sni]; c != nil {
		return c
	}
	for i := 0; i < len(sni); i++ {
		if sni[i] == '.' {
			if c := s.sniWildcard[sni[i:]]; c != nil {
				return c
			}
		}
	}
	return nil
}

// Match returns the highest-priority enabled route whose URI, host and
// method match (vars, remote addresses and filter functions are the data
// plane's to evaluate; a route carrying them is still returned here so the
// caller can check them and go on with MatchFrom).
func (s *Snapshot) Match(method, host, path string) *Route {
	r, _ := s.MatchFrom(0, method, host, path)
	return r
}

// MatchFrom is Match starting at Routes[from]; it returns the route and its
// index (-1 when none matches).
func (s *Snapshot) MatchFrom(from int, method, host, path string) (*Route, int) {
	bit := methodBits[method]
	for i := from; i < len(s.Routes); i++ {
		r := s.Routes[i]
		if r.Methods != 0 && r.Methods&bit == 0 {
			continue
		}
		if !matchHost(r.Hosts, host) || !matchURI(r.URIs, path) {
			continue
		}
		return r, i
	}
	return nil, -1
}

func matchURI(uris []URI, path string) bool {
	for _, u := range uris {
		if u.Prefix {
			if strings.HasPrefix(path, u.Path) {
				return true
			}
		} else if path == u.Path {
			return true
		}
	}
	return false
}

func matchHost(hosts []Host, host string) bool {
	if len(hosts) == 0 {
		return true
	}
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host[i:], "]") {
		host = host[:i]
	}
	for _, h := range hosts {
		if h.Wildcard {
			if len(host) > len(h.Name) && strings.EqualFold(host[len(host)-len(h.Name):], h.Name) {
				return true
			}
		} else if strings.EqualFold(host, h.Name) {
			return true
		}
	}
	return false
}

// Holder publishes the active Snapshot; the data plane loads it once per
// request.
type Holder struct {
	p atomic.Pointer[Snapshot]
}

// Load returns the active snapshot (nil before the first compile).
func (h *Holder) Load() *Snapshot { return h.p.Load() }

// Store swaps in s.
func (h *Holder) Store(s *Snapshot) { h.p.Store(s) }
