// Package startup holds the deployment settings read once at process start:
// defaults, then an optional startup YAML file, then GW_* environment
// variables, then command-line flags (flags > env > file > defaults).
//
// One table (Settings) drives all four sources and the documentation, so a
// setting cannot exist in one place and be missing in another.
package startup

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// Config is the deployment configuration.
type Config struct {
	Listen        string
	ResourcesFile string

	UpstreamTimeoutMS   int64
	UpstreamTLSCACert   string // path to a PEM bundle trusted in addition to the system roots
	UpstreamTLSVerify   bool
	UpstreamMaxConns    int64 // per upstream host
	UpstreamIdleTimeout time.Duration
	UpstreamMaxResponse int64 // largest buffered upstream answer, bytes

	RealtimeIdleTimeout time.Duration // /v1/realtime: no data frame either way for this long closes the session; 0 disables
	RealtimeMaxSession  time.Duration // /v1/realtime: a session's longest life; 0 disables

	DebugListen  string // pprof; "" disables
	StatusListen string // ops endpoints on their own listener; "" serves them on Listen

	RedisAddr     string
	RedisPassword string
	RedisDB       int64

	CacheMemoryMaxBytes     int64         // the memory cache backend's bound, per replica
	CacheRedisProbeInterval time.Duration // the redis cache backend's reattach probe period

	AdminListen string
	AdminKey    string
	// GatewayListen serves the admin-managed routes (only with the admin
	// API on); "" disables the data plane.
	GatewayListen string
	// GatewayTLSListen serves the same routes over TLS with the admin
	// API's certificates chosen by SNI; "" (the default) disables it.
	GatewayTLSListen string
	// GatewayDNSServers are the resolvers of discovery_type dns upstreams
	// (comma-separated host:port); "" reads /etc/resolv.conf.
	GatewayDNSServers string
	// The admin API's store: "embedded" (single node, in AdminDataDir) or
	// "etcd" (AdminEtcdEndpoints, keys under AdminEtcdPrefix).
	AdminStore         string
	AdminDataDir       string
	AdminEtcdEndpoints string // comma-separated
	AdminEtcdPrefix    string

	MaxBodyBytes   int64
	MaxUploadBytes int64         // multipart uploads (audio transcriptions, image edits)
	HeaderTimeout  time.Duration // a request's headers, from its first byte
	BodyTimeout    time.Duration // a request's body, once its headers are in
	IdleTimeout    time.Duration // keep-alive connections without a request
	MaxConnsPerIP  int64         // concurrent connections per peer address; 0: no cap
	ShutdownGrace  time.Duration
	TrustedProxies []netip.Prefix
	RealIPHeader   string
	AccessLog      bool
	StatusUI       bool // the live status page /ui beside the status endpoints

	// Control plane (usage delivery to POST /dp/telemetry over mutual TLS);
	// "" URL disables it.
	ControlPlaneURL        string
	ControlPlaneClientCert string // PEM file
	ControlPlaneClientKey  string // PEM file
	ControlPlaneCACert     string // PEM file; "" trusts the system roots
}

// Defaults returns the built-in defaults.
func Defaults() Config {
	return Config{
		Listen:                  "127.0.0.1:8080",
		UpstreamTimeoutMS:       6000000,
		UpstreamTLSVerify:       true,
		UpstreamMaxConns:        1024,
		UpstreamIdleTimeout:     90 * time.Second,
		DebugListen:             "127.0.0.1:9091",
		UpstreamMaxResponse:     32 << 20,
		RealtimeIdleTimeout:     10 * time.Minute,
		RealtimeMaxSession:      time.Hour,
		MaxBodyBytes:            32 << 20,
		MaxUploadBytes:          512 << 20,
		HeaderTimeout:           10 * time.Second,
		BodyTimeout:             2 * time.Minute,
		IdleTimeout:             2 * time.Minute,
		ShutdownGrace:           30 * time.Second,
		RealIPHeader:            "x-forwarded-for",
		AccessLog:               true,
		StatusUI:                true,
		AdminStore:              "embedded",
		GatewayListen:           "127.0.0.1:9080",
		AdminDataDir:            "./data",
		AdminEtcdPrefix:         "/gw",
		CacheMemoryMaxBytes:     256 << 20,
		CacheRedisProbeInterval: 30 * time.Second,
	}
}

// Setting describes one startup setting in every source.
type Setting struct {
	Path string // dotted YAML path in the startup file
	Env  string // GW_* variable
	Flag string // command-line flag name
	Help string
	accessor
}

// accessor reads and writes one Config field as text.
type accessor struct {
	set func(c *Config, v string) error
	get func(c *Config) string
}

func str(dst func(*Config) *string) accessor {
	return accessor{func(c *Config, v string) error { *dst(c) = v; return nil },
		func(c *Config) string { return *dst(c) }}
}

func integer(min int64, dst func(*Config) *int64) accessor {
	return accessor{func(c *Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return errors.New("must be an integer")
		}
		if n < min {
			return fmt.Errorf("must be >= %d", min)
		}
		*dst(c) = n
		return nil
	},
		func(c *Config) string { return strconv.FormatInt(*dst(c), 10) }}
}

func boolean(dst func(*Config) *bool) accessor {
	return accessor{func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errors.New("must be true or false")
		}
		*dst(c) = b
		return nil
	},
		func(c *Config) string { return strconv.FormatBool(*dst(c)) }}
}

func duration(dst func(*Config) *time.Duration) accessor {
	return accessor{func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return errors.New("must be a non-negative duration such as 30s")
		}
		*dst(c) = d
		return nil
	},
		func(c *Config) string { return dst(c).String() }}
}

// Settings is the table of every startup setting.
var Settings = []Setting{
	{"listen", "GW_LISTEN", "listen", "address of the caller-facing proxy listener", str(func(c *Config) *string { return &c.Listen })},
	{"resources_file", "GW_RESOURCES_FILE", "resources-file", "path of the resource file (required)", str(func(c *Config) *string { return &c.ResourcesFile })},
	{"upstream.timeout_ms", "GW_UPSTREAM_TIMEOUT_MS", "upstream-timeout-ms", "deployment default upstream timeout in ms; 0 disables", integer(0, func(c *Config) *int64 { return &c.UpstreamTimeoutMS })},
	{"upstream.tls.ca_cert", "GW_UPSTREAM_TLS_CA_CERT", "upstream-tls-ca-cert", "PEM file of extra CA certificates trusted for every upstream", str(func(c *Config) *string { return &c.UpstreamTLSCACert })},
	{"upstream.tls.verify", "GW_UPSTREAM_TLS_VERIFY", "upstream-tls-verify", "verify upstream certificates (false: test use only)", boolean(func(c *Config) *bool { return &c.UpstreamTLSVerify })},
	{"upstream.max_conns_per_host", "GW_UPSTREAM_MAX_CONNS_PER_HOST", "upstream-max-conns-per-host", "keep-alive pool size per upstream host", integer(1, func(c *Config) *int64 { return &c.UpstreamMaxConns })},
	{"upstream.idle_timeout", "GW_UPSTREAM_IDLE_TIMEOUT", "upstream-idle-timeout", "close idle upstream connections after this long", duration(func(c *Config) *time.Duration { return &c.UpstreamIdleTimeout })},
	{"upstream.max_response_bytes", "GW_UPSTREAM_MAX_RESPONSE_BYTES", "upstream-max-response-bytes", "largest buffered (non-streaming) upstream answer; a larger one fails the attempt with 502 upstream_response_too_large", integer(1024, func(c *Config) *int64 { return &c.UpstreamMaxResponse })},
	{"realtime.idle_timeout", "GW_REALTIME_IDLE_TIMEOUT", "realtime-idle-timeout", "close a /v1/realtime session that relays no data frame either way for this long (close 1001 to both sides); 0 disables", duration(func(c *Config) *time.Duration { return &c.RealtimeIdleTimeout })},
	{"realtime.max_session", "GW_REALTIME_MAX_SESSION", "realtime-max-session", "close a /v1/realtime session this long after it opened (close 1001 to both sides); 0 disables", duration(func(c *Config) *time.Duration { return &c.RealtimeMaxSession })},
	{"observability.debug", "GW_DEBUG_LISTEN", "debug-listen", "pprof listener (/debug/pprof/heap); empty disables; non-loopback warns", str(func(c *Config) *string { return &c.DebugListen })},
	{"observability.access_log", "GW_ACCESS_LOG", "access-log", "write one access log line per request to stderr", boolean(func(c *Config) *bool { return &c.AccessLog })},
	{"status.listen", "GW_STATUS_LISTEN", "status-listen", "separate listener for /status/config, /livez, /readyz, /metrics; empty serves them on listen", str(func(c *Config) *string { return &c.StatusListen })},
	{"status.ui", "GW_STATUS_UI", "status-ui", "serve the live status page /ui (and /ui/events) wherever the status endpoints are served; false turns it off", boolean(func(c *Config) *bool { return &c.StatusUI })},
	{"shared_store.redis.address", "GW_REDIS_ADDR", "redis-addr", "Redis host:port shared by replicas for rate counters and cache; empty keeps state per process", str(func(c *Config) *string { return &c.RedisAddr })},
	{"shared_store.redis.password", "GW_REDIS_PASSWORD", "redis-password", "Redis password (prefer the env variable)", str(func(c *Config) *string { return &c.RedisPassword })},
	{"shared_store.redis.db", "GW_REDIS_DB", "redis-db", "Redis database number", integer(0, func(c *Config) *int64 { return &c.RedisDB })},
	{"cache.memory_max_bytes", "GW_CACHE_MEMORY_MAX_BYTES", "cache-memory-max-bytes", "bound of the response cache's memory backend per replica (bodies plus ~160 bytes per entry); least recently used entries go first", integer(4096, func(c *Config) *int64 { return &c.CacheMemoryMaxBytes })},
	{"cache.redis_probe_interval", "GW_CACHE_REDIS_PROBE_INTERVAL", "cache-redis-probe-interval", "while Redis is unreachable, how often the response cache probes it to reattach (lookups miss meanwhile)", duration(func(c *Config) *time.Duration { return &c.CacheRedisProbeInterval })},
	{"admin.listen", "GW_ADMIN_LISTEN", "admin-listen", "admin API listener; empty disables the admin API", str(func(c *Config) *string { return &c.AdminListen })},
	{"gateway.listen", "GW_GATEWAY_LISTEN", "gateway-listen", "listener of the general gateway serving the admin API's routes (only with admin.listen); empty disables it", str(func(c *Config) *string { return &c.GatewayListen })},
	{"gateway.tls_listen", "GW_GATEWAY_TLS_LISTEN", "gateway-tls-listen", "TLS listener of the general gateway: the same routes, certificates from the admin API's ssls chosen by SNI (only with admin.listen); empty (default) disables it", str(func(c *Config) *string { return &c.GatewayTLSListen })},
	{"gateway.dns_servers", "GW_GATEWAY_DNS_SERVERS", "gateway-dns-servers", "comma-separated DNS servers (host:port) for discovery_type dns upstreams; empty reads /etc/resolv.conf", str(func(c *Config) *string { return &c.GatewayDNSServers })},
	{"admin.key", "GW_ADMIN_KEY", "admin-key", "admin API key (X-API-KEY); prefer the env variable", str(func(c *Config) *string { return &c.AdminKey })},
	{"admin.store", "GW_STORE", "store", "admin API store: embedded (single node, survives restarts in data_dir) or etcd", str(func(c *Config) *string { return &c.AdminStore })},
	{"admin.data_dir", "GW_DATA_DIR", "data-dir", "directory of the embedded admin store (one gw process at a time)", str(func(c *Config) *string { return &c.AdminDataDir })},
	{"admin.etcd.endpoints", "GW_ETCD_ENDPOINTS", "etcd-endpoints", "comma-separated etcd endpoints (http://127.0.0.1:2379) for --store etcd", str(func(c *Config) *string { return &c.AdminEtcdEndpoints })},
	{"admin.etcd.prefix", "GW_ETCD_PREFIX", "etcd-prefix", "key prefix of the admin resources in etcd", str(func(c *Config) *string { return &c.AdminEtcdPrefix })},
	{"server.max_body_bytes", "GW_MAX_BODY_BYTES", "max-body-bytes", "largest accepted request body; larger Content-Length gets 413", integer(1024, func(c *Config) *int64 { return &c.MaxBodyBytes })},
	{"server.max_upload_bytes", "GW_MAX_UPLOAD_BYTES", "max-upload-bytes", "largest multipart upload (/v1/audio/transcriptions, /v1/audio/translations, /v1/images/edits); it streams through in bounded memory, spooled to a temp file beyond 256 KiB; larger gets 413", integer(1024, func(c *Config) *int64 { return &c.MaxUploadBytes })},
	{"server.header_timeout", "GW_HEADER_TIMEOUT", "header-timeout", "time a client has to send a request's complete headers (from its first byte, or from connecting); 0 disables", duration(func(c *Config) *time.Duration { return &c.HeaderTimeout })},
	{"server.body_timeout", "GW_BODY_TIMEOUT", "body-timeout", "time a client has to send a request body over 64 KiB (or chunked) once its headers are in; smaller bodies arrive within header_timeout; 0 disables", duration(func(c *Config) *time.Duration { return &c.BodyTimeout })},
	{"server.idle_timeout", "GW_IDLE_TIMEOUT", "idle-timeout", "close a keep-alive connection that sends no request for this long", duration(func(c *Config) *time.Duration { return &c.IdleTimeout })},
	{"server.max_conns_per_ip", "GW_MAX_CONNS_PER_IP", "max-conns-per-ip", "concurrent connections allowed from one peer address (the TCP peer, not a forwarded address); 0: no cap", integer(0, func(c *Config) *int64 { return &c.MaxConnsPerIP })},
	{"server.shutdown_grace", "GW_SHUTDOWN_GRACE", "shutdown-grace", "on SIGTERM/SIGINT, how long in-flight requests and streams may finish", duration(func(c *Config) *time.Duration { return &c.ShutdownGrace })},
	{"server.trusted_proxies", "GW_TRUSTED_PROXIES", "trusted-proxies", "comma-separated CIDRs whose real-IP header is believed; empty trusts none", cidrs(func(c *Config) *[]netip.Prefix { return &c.TrustedProxies })},
	{"control_plane.url", "GW_CONTROL_PLANE_URL", "control-plane-url", "https base URL of the control plane; usage batches go to POST <url>/dp/telemetry over mutual TLS; empty disables", str(func(c *Config) *string { return &c.ControlPlaneURL })},
	{"control_plane.client_cert", "GW_CONTROL_PLANE_CLIENT_CERT", "control-plane-client-cert", "PEM file of the gateway's client certificate (required with control_plane.url)", str(func(c *Config) *string { return &c.ControlPlaneClientCert })},
	{"control_plane.client_key", "GW_CONTROL_PLANE_CLIENT_KEY", "control-plane-client-key", "PEM file of the client certificate's private key", str(func(c *Config) *string { return &c.ControlPlaneClientKey })},
	{"control_plane.ca_cert", "GW_CONTROL_PLANE_CA_CERT", "control-plane-ca-cert", "PEM file of the CA that signs the control plane's certificate; empty trusts the system roots", str(func(c *Config) *string { return &c.ControlPlaneCACert })},
	{"server.real_ip_header", "GW_REAL_IP_HEADER", "real-ip-header", "header carrying the client address when the peer is a trusted proxy", str(func(c *Config) *string { return &c.RealIPHeader })},
}

func cidrs(dst func(*Config) *[]netip.Prefix) accessor {
	return accessor{func(c *Config, v string) error {
		var out []netip.Prefix
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			p, err := netip.ParsePrefix(part)
			if err != nil {
				return fmt.Errorf("%q is not a CIDR", part)
			}
			out = append(out, p.Masked())
		}
		*dst(c) = out
		return nil
	}, func(c *Config) string {
		parts := make([]string, len(*dst(c)))
		for i, p := range *dst(c) {
			parts[i] = p.String()
		}
		return strings.Join(parts, ",")
	}}
}

// Get returns a setting's current value as text (for docs and `gw serve --print-config`).
// Secret settings print as [REDACTED] when set.
func (s Setting) Get(c *Config) string {
	v := s.get(c)
	if v != "" && (s.Path == "admin.key" || s.Path == "shared_store.redis.password") {
		return "[REDACTED]"
	}
	return v
}

// LoadFile applies a startup YAML file over c. Unknown keys are errors.
func LoadFile(c *Config, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("cannot read startup config: %w", err)
	}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		return fmt.Errorf("cannot parse startup config %q: %w", path, err)
	}
	if len(root.Content) == 0 {
		return nil
	}
	byPath := map[string]Setting{}
	for _, s := range Settings {
		byPath[s.Path] = s
	}
	var errs []string
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		if n.Kind != yaml.MappingNode {
			errs = append(errs, prefix+": must be a mapping")
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if prefix != "" {
				p = prefix + "." + k.Value
			}
			if s, ok := byPath[p]; ok {
				val := v.Value
				if v.Kind == yaml.SequenceNode { // trusted_proxies as a list
					parts := make([]string, 0, len(v.Content))
					for _, c := range v.Content {
						parts = append(parts, c.Value)
					}
					val = strings.Join(parts, ",")
				} else if v.Kind != yaml.ScalarNode {
					errs = append(errs, p+": must be a scalar")
					continue
				}
				if err := s.set(c, val); err != nil {
					errs = append(errs, p+": "+err.Error())
				}
				continue
			}
			if v.Kind == yaml.MappingNode && hasPrefix(byPath, p+".") {
				walk(v, p)
				continue
			}
			errs = append(errs, p+": unknown setting")
		}
	}
	walk(root.Content[0], "")
	if len(errs) > 0 {
		return fmt.Errorf("startup config %q:\n%s", path, strings.Join(errs, "\n"))
	}
	return nil
}

func hasPrefix(m map[string]Setting, prefix string) bool {
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// ApplyEnv applies GW_* variables over c.
func ApplyEnv(c *Config, lookup func(string) (string, bool)) error {
	var errs []string
	for _, s := range Settings {
		if v, ok := lookup(s.Env); ok {
			if err := s.set(c, v); err != nil {
				errs = append(errs, s.Env+": "+err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "\n"))
	}
	return nil
}

// Set applies one flag value by flag name.
func Set(c *Config, flag, value string) error {
	for _, s := range Settings {
		if s.Flag == flag {
			if err := s.set(c, value); err != nil {
				return fmt.Errorf("--%s: %w", flag, err)
			}
			return nil
		}
	}
	return fmt.Errorf("unknown flag --%s", flag)
}

// Validate checks cross-field rules and returns warnings worth logging.
func (c *Config) Validate() (warnings []string, err error) {
	if c.ResourcesFile == "" && c.AdminListen == "" {
		return nil, errors.New("resources file is required unless the admin API is on: pass --resources-file (GW_RESOURCES_FILE, resources_file) or --admin-listen")
	}
	for _, l := range []struct{ name, addr string }{{"listen", c.Listen}, {"observability.debug", c.DebugListen}, {"status.listen", c.StatusListen}, {"admin.listen", c.AdminListen}, {"gateway.listen", c.GatewayListen}, {"gateway.tls_listen", c.GatewayTLSListen}} {
		if l.addr == "" {
			if l.name == "listen" {
				return nil, errors.New("listen: required")
			}
			continue
		}
		host, _, err := net.SplitHostPort(l.addr)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not host:port", l.name, l.addr)
		}
		if l.name == "observability.debug" && !isLoopback(host) {
			warnings = append(warnings, "observability.debug listens on non-loopback address "+l.addr+"; profiles expose process internals")
		}
	}
	if c.ControlPlaneURL != "" {
		if !strings.HasPrefix(c.ControlPlaneURL, "https://") {
			return warnings, errors.New("control_plane.url: must be an https URL (mutual TLS)")
		}
		if c.ControlPlaneClientCert == "" || c.ControlPlaneClientKey == "" {
			return warnings, errors.New("control_plane.client_cert and control_plane.client_key: required when control_plane.url is set")
		}
	} else if c.ControlPlaneClientCert != "" || c.ControlPlaneClientKey != "" || c.ControlPlaneCACert != "" {
		warnings = append(warnings, "control_plane certificates are set without control_plane.url; no usage is sent to a control plane")
	}
	if c.AdminListen != "" && c.AdminKey == "" {
		return warnings, errors.New("admin.key: required when admin.listen is set (GW_ADMIN_KEY)")
	}
	switch c.AdminStore {
	case "embedded":
		if c.AdminListen != "" && c.AdminDataDir == "" {
			return warnings, errors.New("admin.data_dir: required with admin.store embedded (GW_DATA_DIR)")
		}
	case "etcd":
		if c.AdminListen != "" && strings.TrimSpace(c.AdminEtcdEndpoints) == "" {
			return warnings, errors.New("admin.etcd.endpoints: required with admin.store etcd (GW_ETCD_ENDPOINTS)")
		}
	default:
		return warnings, fmt.Errorf("admin.store: %q is not embedded or etcd", c.AdminStore)
	}
	return warnings, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// NotEnforced is a startup setting that is set but has no runtime effect
// in this build.
type NotEnforced struct {
	Setting string // the file path, e.g. upstream.tls.ca_cert
	Missing string
}

// Unenforced lists the settings c sets that this build does not act on.
func (c *Config) Unenforced() []NotEnforced {
	var out []NotEnforced
	if c.AdminListen != "" {
		out = append(out, NotEnforced{"admin.listen", "the data plane on gateway.listen serves routes (uri, host, methods, remote_addrs, vars, priority) " +
			"with their upstreams (static nodes; roundrobin, chash, least_conn, ewma; retries, retry_timeout, timeout, pass_host, http/https with tls, " +
			"keepalive_pool (size, requests, idle_timeout); active and passive health checks; discovery_type dns; WebSocket proxying; TLS by SNI with gateway.tls_listen), consumers and credentials, and the plugins key-auth, basic-auth, jwt-auth, " +
			"proxy-rewrite, limit-count, error-page, http-logger and prometheus (the admin API refuses every other plugin), but the data plane is not built for: the plugin options " +
			"_meta.pre_function and _meta.error_response, proxy-rewrite scheme and use_real_request_uri_unsafe, limit-count redis_keepalive_timeout/redis_keepalive_pool, " +
			"http-logger include_req_body_expr/include_resp_body_expr (a route, consumer or global rule using one answers 503 rather than run without it), " +
			"filter_func and script (those routes answer 503), " +
			"discovery types other than dns and non-HTTP schemes (those routes answer 503), SSL certificates unless gateway.tls_listen is set, secret references in SSL certificates, " +
			"stream routes, plugin metadata other than error-page's, http-logger's and prometheus', and secrets"})
		if c.GatewayListen == "" {
			out[len(out)-1].Missing = "gateway.listen is empty: the data plane is not built into this process's listeners, so no stored route is served"
		}
	}
	return out
}
