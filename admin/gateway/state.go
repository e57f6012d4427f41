package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"gw/admin/store"
)

// Collections, as they appear in keys (/gw/<collection>/<id>). Credentials
// live under their consumer (/gw/consumers/<username>/credentials/<id>) and
// secrets under their type (/gw/secrets/<type>/<id>); both carry an ID with
// a slash here ("jack/cred-1", "vault/1").
const (
	Routes         = "routes"
	Services       = "services"
	Upstreams      = "upstreams"
	Consumers      = "consumers"
	Credentials    = "credentials"
	PluginConfigs  = "plugin_configs"
	GlobalRules    = "global_rules"
	PluginMetadata = "plugin_metadata"
	StreamRoutes   = "stream_routes"
	SSLs           = "ssls"
	Secrets        = "secrets"
)

// Resource is one stored resource with its decoded spec.
type Resource struct {
	Coll, ID, Key     string
	Raw               []byte
	CreateRev, ModRev int64
	Expires           time.Time
	spec              any
	err               error // the stored body does not decode
}

// State is every stored resource by collection and ID. It is owned by one
// goroutine at a time (the Runner holds a lock around it).
type State struct {
	Root string
	m    map[string]map[string]*Resource
}

// NewState returns an empty state for keys under root (e.g. "/gw").
func NewState(root string) *State {
	return &State{Root: strings.TrimSuffix(root, "/"), m: map[string]map[string]*Resource{}}
}

// Get returns a resource or nil.
func (s *State) Get(coll, id string) *Resource { return s.m[coll][id] }

// All returns a collection's resources by ID. The map must not be modified.
func (s *State) All(coll string) map[string]*Resource { return s.m[coll] }

// Len is the number of resources in a collection.
func (s *State) Len(coll string) int { return len(s.m[coll]) }

// Key returns the store key of a resource.
func (s *State) Key(coll, id string) string {
	if coll == Credentials {
		user, cid, _ := strings.Cut(id, "/")
		return s.Root + "/" + Consumers + "/" + user + "/credentials/" + cid
	}
	return s.Root + "/" + coll + "/" + id
}

// ParseKey splits a store key into collection and ID.
func (s *State) ParseKey(key string) (coll, id string, ok bool) {
	rest, ok := strings.CutPrefix(key, s.Root+"/")
	if !ok {
		return "", "", false
	}
	coll, id, ok = strings.Cut(rest, "/")
	if !ok || id == "" {
		return "", "", false
	}
	switch coll {
	case Consumers:
		if user, cid, ok := strings.Cut(id, "/credentials/"); ok {
			if user == "" || cid == "" || strings.Contains(cid, "/") {
				return "", "", false
			}
			return Credentials, user + "/" + cid, true
		}
	case Secrets:
		typ, sid, ok := strings.Cut(id, "/")
		return coll, id, ok && typ != "" && sid != "" && !strings.Contains(sid, "/")
	}
	if strings.Contains(id, "/") {
		return "", "", false
	}
	return coll, id, true
}

// Put stores a resource decoded from kv (a body that does not decode is kept
// with its error; the compile leaves it out and reports it).
func (s *State) Put(coll, id string, kv store.KV) *Resource {
	r := &Resource{Coll: coll, ID: id, Key: kv.Key, Raw: kv.Value, CreateRev: kv.CreateRev, ModRev: kv.ModRev, Expires: kv.Expires}
	r.spec, r.err = decodeSpec(coll, kv.Value)
	m := s.m[coll]
	if m == nil {
		m = map[string]*Resource{}
		s.m[coll] = m
	}
	m[id] = r
	return r
}

// Delete removes a resource.
func (s *State) Delete(coll, id string) { delete(s.m[coll], id) }

// Apply applies one watch event; it reports the collection touched, or ""
// for a key outside the known layout.
func (s *State) Apply(ev store.Event) string {
	coll, id, ok := s.ParseKey(ev.KV.Key)
	if !ok {
		return ""
	}
	if ev.Type == store.EventDelete {
		s.Delete(coll, id)
	} else {
		s.Put(coll, id, ev.KV)
	}
	return coll
}

// Decode returns the typed spec of a body for a collection (for checks).
func decodeSpec(coll string, raw []byte) (any, error) {
	var v any
	switch coll {
	case Routes:
		v = &routeSpec{}
	case Services:
		v = &serviceSpec{}
	case Upstreams:
		v = &upstreamSpec{}
	case Consumers:
		v = &consumerSpec{}
	case Credentials:
		v = &credentialSpec{}
	case PluginConfigs:
		v = &pluginConfigSpec{}
	case GlobalRules:
		v = &globalRuleSpec{}
	case SSLs:
		v = &sslSpec{}
	case StreamRoutes:
		v = &streamRouteSpec{}
	case PluginMetadata, Secrets:
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("cannot decode %s: %w", coll, err)
		}
		return json.RawMessage(raw), nil
	default:
		return nil, fmt.Errorf("unknown collection %q", coll)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("cannot decode %s: %w", coll, err)
	}
	return v, nil
}
