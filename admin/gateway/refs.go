package gateway

import (
	"encoding/json"
	"sort"
)

// Referrer is a resource that names another by ID.
type Referrer struct {
	Coll, ID string
}

// Referrers lists the resources whose upstream_id, service_id or
// plugin_config_id names (coll, id), in ID order.
func (s *State) Referrers(coll, id string) []Referrer {
	var out []Referrer
	match := func(c string, rid string, v ID) {
		if string(v) == id {
			out = append(out, Referrer{c, rid})
		}
	}
	for _, r := range sorted(s.All(Routes)) {
		sp, ok := r.spec.(*routeSpec)
		if !ok {
			continue
		}
		switch coll {
		case Upstreams:
			match(Routes, r.ID, sp.UpstreamID)
		case Services:
			match(Routes, r.ID, sp.ServiceID)
		case PluginConfigs:
			match(Routes, r.ID, sp.PluginConfigID)
		}
	}
	if coll == Upstreams {
		for _, r := range sorted(s.All(Services)) {
			if sp, ok := r.spec.(*serviceSpec); ok {
				match(Services, r.ID, sp.UpstreamID)
			}
		}
	}
	for _, r := range sorted(s.All(StreamRoutes)) {
		sp, ok := r.spec.(*streamRouteSpec)
		if !ok {
			continue
		}
		switch coll {
		case Upstreams:
			match(StreamRoutes, r.ID, sp.UpstreamID)
		case Services:
			match(StreamRoutes, r.ID, sp.ServiceID)
		}
	}
	return out
}

// ConflictingRoute returns the ID of another route a new route body cannot
// be told apart from: a shared URI with the same methods, hosts and
// priority, neither with vars, filter_func or remote addresses
// (partially overlapping methods, another priority, nested paths and
// routes with vars are distinguishable). "" when there is none.
func (s *State) ConflictingRoute(id string, raw []byte) string {
	var n routeSpec
	if json.Unmarshal(raw, &n) != nil || !plain(&n) {
		return ""
	}
	nu, nm, nh := uriSet(&n), methodSet(&n), hostSet(&n)
	ids := make([]string, 0)
	for rid, r := range s.All(Routes) {
		if rid == id {
			continue
		}
		o, ok := r.spec.(*routeSpec)
		if !ok || !plain(o) || o.Priority != n.Priority || methodSet(o) != nm || hostSet(o) != nh {
			continue
		}
		if o.Status != nil && *o.Status == 0 || n.Status != nil && *n.Status == 0 {
			continue
		}
		for _, u := range uriList(o) {
			if nu[u] {
				ids = append(ids, rid)
				break
			}
		}
	}
	if len(ids) == 0 {
		return ""
	}
	sort.Slice(ids, func(i, j int) bool { return idLess(ids[i], ids[j]) })
	return ids[0]
}

func plain(r *routeSpec) bool {
	return (len(r.Vars) == 0 || string(r.Vars) == "null" || string(r.Vars) == "[]") && r.FilterFunc == "" &&
		r.RemoteAddr == "" && len(r.RemoteAddrs) == 0
}

func uriList(r *routeSpec) []string {
	if r.URI != "" {
		return []string{r.URI}
	}
	return r.URIs
}

func uriSet(r *routeSpec) map[string]bool {
	m := map[string]bool{}
	for _, u := range uriList(r) {
		m[u] = true
	}
	return m
}

func methodSet(r *routeSpec) uint16 {
	var b uint16
	for _, m := range r.Methods {
		b |= methodBits[m]
	}
	return b
}

func hostSet(r *routeSpec) string {
	hs := r.Hosts
	if r.Host != "" {
		hs = []string{r.Host}
	}
	c := append([]string(nil), hs...)
	sort.Strings(c)
	out := ""
	for _, h := range c {
		out += h + "\x00"
	}
	return out
}

// AuthOwner returns the consumer already holding an auth plugin credential
// value (key-auth key, basic-auth username, jwt-auth key), looking at
// consumers and credentials, skipping the resource being written
// (skipColl, skipID). "" when the value is free.
func (s *State) AuthOwner(plugin, value, skipColl, skipID string) string {
	if value == "" {
		return ""
	}
	for _, coll := range []string{Consumers, Credentials} {
		for id, r := range s.All(coll) {
			if coll == skipColl && id == skipID {
				continue
			}
			var plugins Plugins
			owner := id
			switch sp := r.spec.(type) {
			case *consumerSpec:
				plugins = sp.Plugins
			case *credentialSpec:
				plugins = sp.Plugins
				owner, _, _ = cut(id)
			default:
				continue
			}
			if conf, ok := plugins[plugin]; ok && AuthKey(plugin, conf) == value {
				return owner
			}
		}
	}
	return ""
}

func cut(id string) (string, string, bool) {
	for i := 0; i < len(id); i++ {
		if id[i] == '/' {
			return id[:i], id[i+1:], true
		}
	}
	return id, "", false
}

// GlobalRuleWith returns the ID of another global rule that configures
// plugin ("" when none).
func (s *State) GlobalRuleWith(plugin, skipID string) string {
	for _, r := range sorted(s.All(GlobalRules)) {
		if r.ID == skipID {
			continue
		}
		if sp, ok := r.spec.(*globalRuleSpec); ok {
			if _, ok := sp.Plugins[plugin]; ok {
				return r.ID
			}
		}
	}
	return ""
}
