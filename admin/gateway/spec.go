package gateway

import (
	"encoding/json"
	"strconv"
)

// The spec types are the stored JSON bodies decoded once per write (the
// admin API has validated them against their JSON Schema already). Only the
// fields the snapshot precomputes are typed; plugin configurations stay raw
// JSON for the data plane's plugins to compile.

// ID is a resource ID: a string or a positive integer in JSON.
type ID string

// UnmarshalJSON accepts "abc" and 12.
func (id *ID) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*id = ID(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*id = ID(n.String())
	return nil
}

// Plugins maps a plugin name to its configuration as stored.
type Plugins map[string]json.RawMessage

// Timeout is an upstream or route timeout, seconds.
type Timeout struct {
	Connect float64 `json:"connect"`
	Send    float64 `json:"send"`
	Read    float64 `json:"read"`
}

type routeSpec struct {
	ID              ID                `json:"id"`
	Name            string            `json:"name"`
	URI             string            `json:"uri"`
	URIs            []string          `json:"uris"`
	Host            string            `json:"host"`
	Hosts           []string          `json:"hosts"`
	Methods         []string          `json:"methods"`
	RemoteAddr      string            `json:"remote_addr"`
	RemoteAddrs     []string          `json:"remote_addrs"`
	Priority        int               `json:"priority"`
	Vars            json.RawMessage   `json:"vars"`
	FilterFunc      string            `json:"filter_func"`
	Script          string            `json:"script"`
	Plugins         Plugins           `json:"plugins"`
	PluginConfigID  ID                `json:"plugin_config_id"`
	Upstream        *upstreamSpec     `json:"upstream"`
	UpstreamID      ID                `json:"upstream_id"`
	ServiceID       ID                `json:"service_id"`
	Timeout         *Timeout          `json:"timeout"`
	EnableWebsocket bool              `json:"enable_websocket"`
	Status          *int              `json:"status"`
	Labels          map[string]string `json:"labels"`
}

type serviceSpec struct {
	ID              ID            `json:"id"`
	Name            string        `json:"name"`
	Plugins         Plugins       `json:"plugins"`
	Upstream        *upstreamSpec `json:"upstream"`
	UpstreamID      ID            `json:"upstream_id"`
	Hosts           []string      `json:"hosts"`
	EnableWebsocket bool          `json:"enable_websocket"`
}

type nodeSpec struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Weight   int    `json:"weight"`
	Priority int    `json:"priority"`
}

// nodesSpec is either {"host:port": weight} or [{host, port, weight}].
type nodesSpec []nodeSpec

func (n *nodesSpec) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '{' {
		var m map[string]int
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		out := make(nodesSpec, 0, len(m))
		for addr, w := range m {
			host, port := splitHostPort(addr)
			out = append(out, nodeSpec{Host: host, Port: port, Weight: w})
		}
		*n = out
		return nil
	}
	var arr []nodeSpec
	if err := json.Unmarshal(b, &arr); err != nil {
		return err
	}
	*n = arr
	return nil
}

type upstreamSpec struct {
	ID            ID              `json:"id"`
	Name          string          `json:"name"`
	Nodes         nodesSpec       `json:"nodes"`
	Retries       *int            `json:"retries"`
	RetryTimeout  float64         `json:"retry_timeout"`
	Timeout       *Timeout        `json:"timeout"`
	Type          string          `json:"type"`
	HashOn        string          `json:"hash_on"`
	Key           string          `json:"key"`
	Scheme        string          `json:"scheme"`
	Checks        json.RawMessage `json:"checks"`
	TLS           json.RawMessage `json:"tls"`
	KeepalivePool json.RawMessage `json:"keepalive_pool"`
	PassHost      string          `json:"pass_host"`
	UpstreamHost  string          `json:"upstream_host"`
	DiscoveryType string          `json:"discovery_type"`
	ServiceName   string          `json:"service_name"`
}

type pluginConfigSpec struct {
	ID      ID      `json:"id"`
	Plugins Plugins `json:"plugins"`
}

type globalRuleSpec struct {
	ID      ID      `json:"id"`
	Plugins Plugins `json:"plugins"`
}

type consumerSpec struct {
	Username string  `json:"username"`
	Plugins  Plugins `json:"plugins"`
}

type credentialSpec struct {
	ID      ID      `json:"id"`
	Plugins Plugins `json:"plugins"`
}

type sslSpec struct {
	ID           ID       `json:"id"`
	Type         string   `json:"type"`
	SNI          string   `json:"sni"`
	SNIs         []string `json:"snis"`
	Cert         string   `json:"cert"`
	Key          string   `json:"key"`
	Certs        []string `json:"certs"`
	Keys         []string `json:"keys"`
	Status       *int     `json:"status"`
	SSLProtocols []string `json:"ssl_protocols"`
}

type streamRouteSpec struct {
	ID         ID            `json:"id"`
	RemoteAddr string        `json:"remote_addr"`
	ServerAddr string        `json:"server_addr"`
	ServerPort int           `json:"server_port"`
	SNI        string        `json:"sni"`
	Upstream   *upstreamSpec `json:"upstream"`
	UpstreamID ID            `json:"upstream_id"`
	ServiceID  ID            `json:"service_id"`
	Plugins    Plugins       `json:"plugins"`
}

// splitHostPort splits "host:port" ("[v6]:port"); a missing port is 0
// (the scheme's default applies).
func splitHostPort(addr string) (string, int) {
	for i := len(addr) - 1; i >= 0; i-- {
		switch addr[i] {
		case ':':
			if p, err := strconv.Atoi(addr[i+1:]); err == nil {
				h := addr[:i]
				if len(h) > 1 && h[0] == '[' && h[len(h)-1] == ']' {
					h = h[1 : len(h)-1]
				}
				return h, p
			}
			return addr, 0
		case ']':
			return addr, 0
		}
	}
	return addr, 0
}
