package gateway

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
)

// Compile builds a snapshot of every resource in st at store revision rev.
// A resource that does not compile is left out and listed in Errors.
func Compile(st *State, rev int64) *Snapshot {
	s := &Snapshot{Rev: rev, RouteByID: map[string]*Route{}, Services: map[string]*Service{}, Upstreams: map[string]*Upstream{},
		PluginConfigs: map[string]Plugins{}, PluginMetadata: map[string]json.RawMessage{}, Consumers: map[string]*Consumer{},
		Auth: map[string]map[string]*Consumer{}, AuthConf: map[string]map[string]json.RawMessage{}, SSLs: map[string]*Cert{}, sniExact: map[string]*Cert{}, sniWildcard: map[string]*Cert{},
		Secrets: map[string]json.RawMessage{}}
	fail := func(r *Resource, err error) { s.Errors = append(s.Errors, Error{Key: r.Key, Msg: err.Error()}) }
	each := func(coll string, f func(r *Resource) error) {
		for _, r := range sorted(st.All(coll)) {
			if r.err != nil {
				fail(r, r.err)
				continue
			}
			if err := f(r); err != nil {
				fail(r, err)
			}
		}
	}
	each(Upstreams, func(r *Resource) error {
		u, err := compileUpstream(r.ID, r.spec.(*upstreamSpec))
		if err == nil {
			s.Upstreams[r.ID] = u
		}
		return err
	})
	each(PluginConfigs, func(r *Resource) error {
		s.PluginConfigs[r.ID] = r.spec.(*pluginConfigSpec).Plugins
		return nil
	})
	each(Services, func(r *Resource) error {
		svc, err := s.compileService(r.ID, r.spec.(*serviceSpec))
		if err == nil {
			s.Services[r.ID] = svc
		}
		return err
	})
	each(Routes, func(r *Resource) error {
		rt, err := s.compileRoute(r.ID, r.spec.(*routeSpec), r.ModRev)
		if err == nil {
			s.RouteByID[r.ID] = rt
		}
		return err
	})
	s.Routes = make([]*Route, 0, len(s.RouteByID))
	for _, r := range s.RouteByID {
		if r.Enabled {
			s.Routes = append(s.Routes, r)
		}
	}
	sort.Slice(s.Routes, func(i, j int) bool { return routeBefore(s.Routes[i], s.Routes[j]) })
	each(GlobalRules, func(r *Resource) error {
		gr := &GlobalRule{ID: r.ID, Plugins: r.spec.(*globalRuleSpec).Plugins}
		s.GlobalRules = append(s.GlobalRules, gr)
		ps, err := resolvePlugins(gr.Plugins)
		if err != nil {
			gr.Err = err.Error()
			return err
		}
		gr.Plugins = ps
		return nil
	})
	sort.SliceStable(s.GlobalRules, func(i, j int) bool { return idLess(s.GlobalRules[i].ID, s.GlobalRules[j].ID) })
	each(PluginMetadata, func(r *Resource) error {
		s.PluginMetadata[r.ID] = r.spec.(json.RawMessage)
		return nil
	})
	each(Secrets, func(r *Resource) error {
		s.Secrets[r.ID] = r.spec.(json.RawMessage)
		return nil
	})
	each(Consumers, func(r *Resource) error {
		c := r.spec.(*consumerSpec)
		ps, err := resolvePlugins(c.Plugins)
		if err != nil {
			return err
		}
		con := &Consumer{Username: r.ID, Plugins: ps}
		if err := s.indexAuth(con, ps); err != nil {
			return err
		}
		s.Consumers[r.ID] = con
		return nil
	})
	each(Credentials, func(r *Resource) error {
		user, _, _ := strings.Cut(r.ID, "/")
		con := s.Consumers[user]
		if con == nil {
			return fmt.Errorf("consumer %q not found", user)
		}
		ps, err := resolvePlugins(r.spec.(*credentialSpec).Plugins)
		if err != nil {
			return err
		}
		return s.indexAuth(con, ps)
	})
	each(SSLs, func(r *Resource) error {
		c, err := compileSSL(r.ID, r.spec.(*sslSpec))
		if err != nil {
			return err
		}
		s.SSLs[r.ID] = c
		spec := r.spec.(*sslSpec)
		c.Enabled = spec.Status == nil || *spec.Status == 1
		if c.Enabled && c.Type == "server" {
			for _, sni := range c.SNIs {
				if strings.HasPrefix(sni, "*.") {
					s.sniWildcard[sni[1:]] = c
				} else {
					s.sniExact[sni] = c
				}
			}
		}
		return nil
	})
	each(StreamRoutes, func(r *Resource) error {
		sr, err := s.compileStreamRoute(r.ID, r.spec.(*streamRouteSpec))
		if err == nil {
			s.StreamRoutes = append(s.StreamRoutes, sr)
		}
		return err
	})
	return s
}

// WithRoutes returns a copy of s in which only the named routes are
// recompiled from st (changed, added or deleted): the incremental path for
// writes that touch routes alone. Everything else is shared with s.
func (s *Snapshot) WithRoutes(st *State, ids []string, rev int64) *Snapshot {
	n := *s
	n.Rev = rev
	n.RouteByID = make(map[string]*Route, len(s.RouteByID)+len(ids))
	for k, v := range s.RouteByID {
		n.RouteByID[k] = v
	}
	changed := make(map[string]bool, len(ids))
	var errs []Error
	for _, e := range s.Errors {
		if c, id, _ := st.ParseKey(e.Key); c == Routes && contains(ids, id) {
			continue
		}
		errs = append(errs, e)
	}
	added := make([]*Route, 0, len(ids))
	for _, id := range ids {
		changed[id] = true
		delete(n.RouteByID, id)
		r := st.Get(Routes, id)
		if r == nil {
			continue
		}
		if r.err != nil {
			errs = append(errs, Error{Key: r.Key, Msg: r.err.Error()})
			continue
		}
		rt, err := n.compileRoute(id, r.spec.(*routeSpec), r.ModRev)
		if err != nil {
			errs = append(errs, Error{Key: r.Key, Msg: err.Error()})
			continue
		}
		n.RouteByID[id] = rt
		if rt.Enabled {
			added = append(added, rt)
		}
	}
	n.Errors = errs
	sort.Slice(added, func(i, j int) bool { return routeBefore(added[i], added[j]) })
	// Merge the kept routes (already in order) with the recompiled ones.
	out := make([]*Route, 0, len(s.Routes)+len(added))
	j := 0
	for _, r := range s.Routes {
		if changed[r.ID] {
			continue
		}
		for j < len(added) && routeBefore(added[j], r) {
			out = append(out, added[j])
			j++
		}
		out = append(out, r)
	}
	n.Routes = append(out, added[j:]...)
	return &n
}

// Check compiles one resource body against s without publishing anything:
// the admin API refuses a write that fails here.
func (s *Snapshot) Check(coll, id string, raw []byte) error {
	spec, err := decodeSpec(coll, raw)
	if err != nil {
		return err
	}
	switch coll {
	case Routes:
		_, err = s.compileRoute(id, spec.(*routeSpec), 0)
	case Services:
		_, err = s.compileService(id, spec.(*serviceSpec))
	case Upstreams:
		_, err = compileUpstream(id, spec.(*upstreamSpec))
	case SSLs:
		_, err = compileSSL(id, spec.(*sslSpec))
	case StreamRoutes:
		_, err = s.compileStreamRoute(id, spec.(*streamRouteSpec))
	case Consumers:
		_, err = resolvePlugins(spec.(*consumerSpec).Plugins)
	case Credentials:
		_, err = resolvePlugins(spec.(*credentialSpec).Plugins)
	case GlobalRules:
		_, err = resolvePlugins(spec.(*globalRuleSpec).Plugins)
	case PluginConfigs:
		_, err = resolvePlugins(spec.(*pluginConfigSpec).Plugins)
	}
	return err
}

func routeBefore(a, b *Route) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	return a.order.less(b.order)
}

// idOrder sorts IDs: numeric ones by number first, then the others as
// strings. It is computed once per route, not per comparison.
type idOrder struct {
	num   uint64
	isNum bool
	s     string
}

func orderOf(id string) idOrder {
	n, err := strconv.ParseUint(id, 10, 64)
	return idOrder{num: n, isNum: err == nil, s: id}
}

func (a idOrder) less(b idOrder) bool {
	switch {
	case a.isNum && b.isNum:
		if a.num != b.num {
			return a.num < b.num
		}
		return a.s < b.s
	case a.isNum:
		return true
	case b.isNum:
		return false
	}
	return a.s < b.s
}

// idLess orders numeric IDs numerically and others as strings (numbers first).
func idLess(a, b string) bool { return orderOf(a).less(orderOf(b)) }

func sorted(m map[string]*Resource) []*Resource {
	type keyed struct {
		o idOrder
		r *Resource
	}
	ks := make([]keyed, 0, len(m))
	for _, r := range m {
		ks = append(ks, keyed{orderOf(r.ID), r})
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].o.less(ks[j].o) })
	out := make([]*Resource, len(ks))
	for i, k := range ks {
		out[i] = k.r
	}
	return out
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func (s *Snapshot) compileRoute(id string, r *routeSpec, modRev int64) (*Route, error) {
	rt := &Route{ID: id, order: orderOf(id), Name: r.Name, Enabled: r.Status == nil || *r.Status == 1, Priority: r.Priority, FilterFunc: r.FilterFunc,
		Script: r.Script, Timeout: r.Timeout, EnableWebsocket: r.EnableWebsocket, ModRev: modRev,
		PluginConfigID: string(r.PluginConfigID), UpstreamID: string(r.UpstreamID)}
	if len(r.Vars) > 0 && string(r.Vars) != "null" && string(r.Vars) != "[]" {
		rt.Vars = r.Vars
	}
	uris := r.URIs
	if r.URI != "" {
		uris = []string{r.URI}
	}
	if len(uris) == 0 {
		return nil, errors.New("uri: required")
	}
	for _, u := range uris {
		if !strings.HasPrefix(u, "/") {
			return nil, fmt.Errorf("uri %q: must start with /", u)
		}
		if p, ok := strings.CutSuffix(u, "*"); ok {
			rt.URIs = append(rt.URIs, URI{Path: p, Prefix: true})
		} else {
			rt.URIs = append(rt.URIs, URI{Path: u})
		}
	}
	hosts := r.Hosts
	if r.Host != "" {
		hosts = []string{r.Host}
	}
	var err error
	if rt.Hosts, err = compileHosts(hosts); err != nil {
		return nil, err
	}
	for _, m := range r.Methods {
		b := methodBits[m]
		if b == 0 {
			return nil, fmt.Errorf("methods: unknown method %q", m)
		}
		rt.Methods |= b
	}
	addrs := r.RemoteAddrs
	if r.RemoteAddr != "" {
		addrs = []string{r.RemoteAddr}
	}
	for _, a := range addrs {
		p, err := parseCIDR(a)
		if err != nil {
			return nil, fmt.Errorf("remote_addrs: %w", err)
		}
		rt.RemoteAddrs = append(rt.RemoteAddrs, p)
	}
	// Plugins: the route's own, then its plugin config's, then its
	// service's, each adding only the plugins not configured yet.
	rt.Plugins = Plugins{}
	for k, v := range r.Plugins {
		rt.Plugins[k] = v
	}
	if r.PluginConfigID != "" {
		pc, ok := s.PluginConfigs[string(r.PluginConfigID)]
		if !ok {
			return nil, fmt.Errorf("plugin_config_id: plugin config %q not found", r.PluginConfigID)
		}
		mergeMissing(rt.Plugins, pc)
	}
	if r.ServiceID != "" {
		svc, ok := s.Services[string(r.ServiceID)]
		if !ok {
			return nil, fmt.Errorf("service_id: service %q not found", r.ServiceID)
		}
		rt.Service = svc
		mergeMissing(rt.Plugins, svc.Plugins)
		if len(rt.Hosts) == 0 {
			rt.Hosts = svc.Hosts
		}
		rt.Upstream = svc.Upstream
		rt.EnableWebsocket = rt.EnableWebsocket || svc.EnableWebsocket
	}
	switch {
	case r.Upstream != nil:
		if rt.Upstream, err = compileUpstream("", r.Upstream); err != nil {
			return nil, fmt.Errorf("upstream: %w", err)
		}
	case r.UpstreamID != "":
		u, ok := s.Upstreams[string(r.UpstreamID)]
		if !ok {
			return nil, fmt.Errorf("upstream_id: upstream %q not found", r.UpstreamID)
		}
		rt.Upstream = u
	}
	if rt.Plugins, err = resolvePlugins(rt.Plugins); err != nil {
		return nil, err
	}
	if rt.Upstream == nil && len(rt.Plugins) == 0 && rt.Script == "" {
		return nil, errors.New("a route needs an upstream, upstream_id, service_id or plugins")
	}
	return rt, nil
}

func mergeMissing(dst, src Plugins) {
	for k, v := range src {
		if _, ok := dst[k]; !ok {
			dst[k] = v
		}
	}
}

func compileHosts(hosts []string) ([]Host, error) {
	var out []Host
	for _, h := range hosts {
		h = strings.ToLower(h)
		if rest, ok := strings.CutPrefix(h, "*."); ok {
			if !validHostname(rest) {
				return nil, fmt.Errorf("host %q: not a host name", h)
			}
			out = append(out, Host{Name: h[1:], Wildcard: true})
			continue
		}
		if !validHostname(h) {
			return nil, fmt.Errorf("host %q: not a host name", h)
		}
		out = append(out, Host{Name: h})
	}
	return out, nil
}

func validHostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	if _, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return true
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

func parseCIDR(a string) (netip.Prefix, error) {
	if strings.Contains(a, "/") {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not an IP or CIDR", a)
		}
		return p.Masked(), nil
	}
	ip, err := netip.ParseAddr(a)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an IP or CIDR", a)
	}
	return netip.PrefixFrom(ip, ip.BitLen()), nil
}

func (s *Snapshot) compileService(id string, sv *serviceSpec) (*Service, error) {
	svc := &Service{ID: id, Name: sv.Name, Plugins: sv.Plugins, EnableWebsocket: sv.EnableWebsocket}
	var err error
	if svc.Plugins, err = resolvePlugins(sv.Plugins); err != nil {
		return nil, err
	}
	if svc.Hosts, err = compileHosts(sv.Hosts); err != nil {
		return nil, err
	}
	switch {
	case sv.Upstream != nil:
		if svc.Upstream, err = compileUpstream("", sv.Upstream); err != nil {
			return nil, fmt.Errorf("upstream: %w", err)
		}
	case sv.UpstreamID != "":
		u, ok := s.Upstreams[string(sv.UpstreamID)]
		if !ok {
			return nil, fmt.Errorf("upstream_id: upstream %q not found", sv.UpstreamID)
		}
		svc.Upstream = u
	}
	return svc, nil
}

func compileUpstream(id string, u *upstreamSpec) (*Upstream, error) {
	up := &Upstream{ID: id, Name: u.Name, Type: or(u.Type, "roundrobin"), Scheme: or(u.Scheme, "http"), PassHost: or(u.PassHost, "pass"),
		UpstreamHost: u.UpstreamHost, Retries: -1, RetryTimeout: u.RetryTimeout, Timeout: u.Timeout, HashOn: u.HashOn, Key: u.Key,
		Checks: u.Checks, TLS: u.TLS, KeepalivePool: u.KeepalivePool, DiscoveryType: u.DiscoveryType, ServiceName: u.ServiceName}
	if u.Retries != nil {
		up.Retries = *u.Retries
	}
	if up.Type == "chash" && up.HashOn == "" {
		up.HashOn = "vars"
	}
	if up.PassHost == "rewrite" && up.UpstreamHost == "" {
		return nil, errors.New("upstream_host: required when pass_host is rewrite")
	}
	if u.DiscoveryType == "" && u.Nodes == nil {
		return nil, errors.New("nodes: required without discovery_type")
	}
	defPort := 80
	switch up.Scheme {
	case "https", "grpcs", "tls":
		defPort = 443
	}
	up.Nodes = make([]Node, 0, len(u.Nodes))
	for i, n := range u.Nodes {
		if !validHostname(n.Host) {
			return nil, fmt.Errorf("nodes[%d]: %q is not a host name or IP", i, n.Host)
		}
		if n.Port < 0 || n.Port > 65535 {
			return nil, fmt.Errorf("nodes[%d]: port %d out of range", i, n.Port)
		}
		if n.Weight < 0 {
			return nil, fmt.Errorf("nodes[%d]: weight must be >= 0", i)
		}
		port := n.Port
		if port == 0 {
			port = defPort
		}
		up.Nodes = append(up.Nodes, Node{Host: n.Host, Port: port, Weight: n.Weight, Priority: n.Priority,
			Addr: net.JoinHostPort(strings.Trim(n.Host, "[]"), strconv.Itoa(port))})
	}
	// Map-form nodes decode in random order; a fixed order keeps balancing
	// and snapshots reproducible.
	sort.SliceStable(up.Nodes, func(i, j int) bool { return up.Nodes[i].Addr < up.Nodes[j].Addr })
	return up, nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// IsReference reports whether a value is a secret or env reference resolved
// by the data plane, not PEM to parse now.
func IsReference(v string) bool {
	return strings.HasPrefix(v, "$secret://") || strings.HasPrefix(v, "$env://")
}

func compileSSL(id string, sp *sslSpec) (*Cert, error) {
	c := &Cert{ID: id, Type: or(sp.Type, "server"), Protocols: sp.SSLProtocols}
	if sp.SNI != "" {
		c.SNIs = []string{strings.ToLower(sp.SNI)}
	}
	for _, s := range sp.SNIs {
		c.SNIs = append(c.SNIs, strings.ToLower(s))
	}
	if c.Type == "server" && len(c.SNIs) == 0 {
		return nil, errors.New("sni: required for a server certificate")
	}
	certs := append([]string{sp.Cert}, sp.Certs...)
	keys := append([]string{sp.Key}, sp.Keys...)
	if len(certs) != len(keys) {
		return nil, errors.New("certs and keys: must have the same number of entries")
	}
	for i := range certs {
		f := "cert"
		if i > 0 {
			f = fmt.Sprintf("certs[%d]", i-1)
		}
		cp, isRef, err := ResolveRef(certs[i])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		kp, keyRef, err := ResolveRef(keys[i])
		if err != nil {
			return nil, fmt.Errorf("%s key: %w", f, err)
		}
		c.Reference = c.Reference || isRef || keyRef
		pair, err := ParseCertPair(cp, kp)
		if err != nil {
			if i == 0 {
				return nil, err
			}
			return nil, fmt.Errorf("certs[%d]: %w", i-1, err)
		}
		c.Certificates = append(c.Certificates, pair)
	}
	return c, nil
}

// ParseCertPair parses a PEM certificate (chain) and its private key and
// checks that they belong together. Errors never quote the key.
func ParseCertPair(certPEM, keyPEM string) (tls.Certificate, error) {
	block, _ := pem.Decode([]byte(certPEM))
	if block == nil || block.Type != "CERTIFICATE" {
		return tls.Certificate{}, errors.New("failed to parse cert: not a PEM certificate")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("failed to parse cert: %v", err)
	}
	if kb, _ := pem.Decode([]byte(keyPEM)); kb == nil || !strings.Contains(kb.Type, "PRIVATE KEY") {
		return tls.Certificate{}, errors.New("failed to parse key: not a PEM private key")
	}
	pair, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		return tls.Certificate{}, errors.New("failed to match cert and key: the private key does not belong to the certificate or cannot be parsed")
	}
	pair.Leaf = leaf
	return pair, nil
}

func (s *Snapshot) compileStreamRoute(id string, r *streamRouteSpec) (*StreamRoute, error) {
	sr := &StreamRoute{ID: id, ServerAddr: r.ServerAddr, ServerPort: r.ServerPort, SNI: r.SNI, Plugins: r.Plugins}
	if r.RemoteAddr != "" {
		p, err := parseCIDR(r.RemoteAddr)
		if err != nil {
			return nil, fmt.Errorf("remote_addr: %w", err)
		}
		sr.RemoteAddr = p
	}
	if r.ServerAddr != "" {
		if _, err := netip.ParseAddr(r.ServerAddr); err != nil {
			return nil, fmt.Errorf("server_addr: %q is not an IP", r.ServerAddr)
		}
	}
	var err error
	switch {
	case r.Upstream != nil:
		if sr.Upstream, err = compileUpstream("", r.Upstream); err != nil {
			return nil, fmt.Errorf("upstream: %w", err)
		}
	case r.UpstreamID != "":
		u, ok := s.Upstreams[string(r.UpstreamID)]
		if !ok {
			return nil, fmt.Errorf("upstream_id: upstream %q not found", r.UpstreamID)
		}
		sr.Upstream = u
	case r.ServiceID != "":
		svc, ok := s.Services[string(r.ServiceID)]
		if !ok {
			return nil, fmt.Errorf("service_id: service %q not found", r.ServiceID)
		}
		sr.Upstream = svc.Upstream
	}
	return sr, nil
}

// authKeys are the plugins whose credentials identify a consumer, and the
// field that does.
var authKeys = map[string]string{"key-auth": "key", "basic-auth": "username", "jwt-auth": "key"}

// AuthKey returns the identifying value of an auth plugin's credential
// configuration ("" when the plugin is not an auth plugin or has none).
func AuthKey(plugin string, conf json.RawMessage) string {
	field, ok := authKeys[plugin]
	if !ok {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(conf, &m) != nil {
		return ""
	}
	v, _ := m[field].(string)
	return v
}

func (s *Snapshot) indexAuth(c *Consumer, plugins Plugins) error {
	for name, conf := range plugins {
		k := AuthKey(name, conf)
		if k == "" {
			continue
		}
		m := s.Auth[name]
		if m == nil {
			m = map[string]*Consumer{}
			s.Auth[name] = m
		}
		if prev, ok := m[k]; ok && prev != c {
			return fmt.Errorf("duplicate %s credential, already used by consumer %q", name, prev.Username)
		}
		m[k] = c
		mc := s.AuthConf[name]
		if mc == nil {
			mc = map[string]json.RawMessage{}
			s.AuthConf[name] = mc
		}
		mc[k] = conf
	}
	return nil
}
