// Package plugin is the general gateway's plugin interface: each plugin
// (one package under edge/gateway/plugins) registers a Def with its name,
// APISIX priority and a constructor that compiles one configuration into a
// Plugin once per snapshot. The data plane composes the compiled plugins of
// global rules, services, plugin configs, routes and consumers into Chains
// and runs their phases (rewrite, access, header_filter, body_filter, log)
// on each request without decoding any configuration.
package plugin

import (
	"encoding/json"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	admingw "gw/admin/gateway"
	"gw/edge/gateway/vars"
	"gw/edge/usage"
)

// Phase is a bit set of the phases a plugin takes part in.
type Phase uint8

// The phases, in the order they run.
const (
	Rewrite Phase = 1 << iota
	Access
	HeaderFilter
	BodyFilter
	Log
)

// Plugin is one compiled plugin configuration. Rewrite and Access return
// false when the plugin answered the request itself (it set the response):
// later rewrite/access plugins and the upstream are skipped, the filters and
// log still run. A Plugin is shared by every request of its snapshot, so it
// must be safe for concurrent use and keep per-request state in the Ctx.
type Plugin interface {
	Phases() Phase
	Rewrite(c *Ctx) bool
	Access(c *Ctx) bool
	HeaderFilter(c *Ctx)
	BodyFilter(c *Ctx)
	Log(c *Ctx)
}

// Base gives a plugin no-op phases; embed it and override the ones used.
type Base struct{}

func (Base) Rewrite(*Ctx) bool { return true }
func (Base) Access(*Ctx) bool  { return true }
func (Base) HeaderFilter(*Ctx) {}
func (Base) BodyFilter(*Ctx)   {}
func (Base) Log(*Ctx)          {}
func (Base) Phases() Phase     { return 0 }

// Def describes one built plugin.
type Def struct {
	Name     string
	Priority int // APISIX's: higher runs first
	// Auth plugins identify a consumer; their consumer/credential entries
	// are credentials, not consumer-level plugins.
	Auth bool
	// Answers plugins answer every request they run on themselves (AI
	// proxies): a route with one needs no upstream.
	Answers bool
	// New compiles one configuration (as stored, `_meta` included). owner
	// names where it is configured ("route/1", "global_rule/2",
	// "consumer/jack") for counters and messages.
	New func(conf json.RawMessage, env *Env, owner string) (Plugin, error)
	// Check, when set, validates one configuration without the snapshot or
	// shared state: unknown fields and values the plugin does not run are
	// errors naming the field (wrapping ErrNotBuilt for the latter). The
	// admin API runs it on every write, so a configuration the data plane
	// would refuse is a 400, not a route answering 503.
	Check func(conf json.RawMessage) error
}

var (
	regMu sync.Mutex
	defs  = map[string]*Def{}
)

// Register adds a built plugin; plugin packages call it from init.
func Register(d *Def) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := defs[d.Name]; dup {
		panic("BUG: plugin " + d.Name + " registered twice")
	}
	defs[d.Name] = d
}

// Lookup returns a built plugin's Def, or nil.
func Lookup(name string) *Def {
	regMu.Lock()
	defer regMu.Unlock()
	return defs[name]
}

// Names returns the built plugins, sorted.
func Names() []string {
	regMu.Lock()
	defer regMu.Unlock()
	out := make([]string, 0, len(defs))
	for n := range defs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Env is what a constructor may use: the snapshot being compiled and the
// long-lived services shared across snapshots.
type Env struct {
	Snap   *admingw.Snapshot
	Log    *slog.Logger
	Shared *Shared
	// Usage receives the usage records of AI requests (ai-proxy-multi);
	// nil writes none.
	Usage *usage.Pipeline

	mu    sync.Mutex
	cache map[string]any
}

// Once returns the per-snapshot object under key, building it with mk the
// first time (an index of credentials every route's auth plugin shares).
func (e *Env) Once(key string, mk func() (any, error)) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if v, ok := e.cache[key]; ok {
		return v, nil
	}
	v, err := mk()
	if err != nil {
		return nil, err
	}
	if e.cache == nil {
		e.cache = map[string]any{}
	}
	e.cache[key] = v
	return v, nil
}

// Metadata returns the plugin metadata stored for name (nil when none).
func (e *Env) Metadata(name string) json.RawMessage {
	if e.Snap == nil {
		return nil
	}
	return e.Snap.PluginMetadata[name]
}

// Shared holds objects that outlive snapshots (counters, batchers, metric
// sets) keyed by what identifies them; plugins get or create them at
// compile time, never per request.
type Shared struct {
	mu    sync.Mutex
	items map[string]any
}

// NewShared returns an empty Shared.
func NewShared() *Shared { return &Shared{items: map[string]any{}} }

// GetOrCreate returns the object under key, creating it with mk once.
func (s *Shared) GetOrCreate(key string, mk func() (any, error)) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.items[key]; ok {
		return v, nil
	}
	v, err := mk()
	if err != nil {
		return nil, err
	}
	s.items[key] = v
	return v, nil
}

// Each calls f for every shared object (used to close them on shutdown).
func (s *Shared) Each(f func(key string, v any)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.items {
		f(k, v)
	}
}

// Ctx is one request's plugin state, pooled by the data plane. Plugins read
// and change the request and response through R.
type Ctx struct {
	R        *fasthttp.RequestCtx
	Vars     vars.Context // the route's, with ConsumerName set after auth
	Consumer *admingw.Consumer
	Start    time.Time
	// Generated is set when the gateway itself produced the response (no
	// route, upstream failure): error-page customises only those.
	Generated bool
	// Upstream is the address of the node that answered ("" when none).
	Upstream string
	// RateInfo is the `rate_limiting_info` variable (limit-count's JSON).
	RateInfo []byte
	// Limit is the last limit-count decision, for its response headers.
	Limit LimitInfo
	// Host, when set, replaces the upstream Host header whatever the
	// upstream's pass_host (proxy-rewrite `host`).
	Host    []byte
	hostSet bool
	// Buf and Buf2 are scratch space for plugins; contents die with the
	// phase that wrote them.
	Buf, Buf2 []byte
}

// Reset prepares c for a new request.
func (c *Ctx) Reset(r *fasthttp.RequestCtx, vc *vars.Context) {
	c.R = r
	c.Vars = *vc
	c.Consumer = nil
	// The server stamps each request as it begins reading it; a clock read
	// saved (a RequestCtx built outside a server has no stamp).
	if c.Start = r.Time(); c.Start.IsZero() {
		c.Start = time.Now()
	}
	c.Generated = false
	c.Upstream = ""
	c.RateInfo = c.RateInfo[:0]
	c.Limit = LimitInfo{}
	c.Host = c.Host[:0]
	c.hostSet = false
}

// SetHost makes the upstream Host header h.
func (c *Ctx) SetHost(h []byte) {
	c.Host = append(c.Host[:0], h...)
	c.hostSet = true
}

// HostOverride returns the Host set by SetHost, or nil.
func (c *Ctx) HostOverride() []byte {
	if !c.hostSet {
		return nil
	}
	return c.Host
}

// LimitInfo is a limit-count decision: the limit, what remains and the
// seconds until the window resets.
type LimitInfo struct {
	Set                     bool
	Limit, Remaining, Reset int64
}

// SetConsumer records the authenticated consumer.
func (c *Ctx) SetConsumer(con *admingw.Consumer) {
	c.Consumer = con
	c.Vars.ConsumerName = con.Username
}

// Reply answers the request from the gateway with a JSON error_msg body
// (APISIX's shape) or the given raw body.
func (c *Ctx) Reply(code int, body []byte) {
	c.R.Response.Reset()
	c.R.SetStatusCode(code)
	if len(body) > 0 {
		c.R.SetContentType("application/json")
		c.R.SetBody(body)
	}
}

// ErrorBody renders {"message":"<msg>"} as APISIX's auth plugins answer;
// msg must be JSON-safe (plugins pass constants).
func ErrorBody(msg string) []byte {
	return []byte(`{"message":"` + msg + `"}`)
}

// meta is the `_meta` every plugin configuration may carry.
type meta struct {
	Disable       bool            `json:"disable"`
	Priority      *int            `json:"priority"`
	Filter        json.RawMessage `json:"filter"`
	ErrorResponse json.RawMessage `json:"error_response"`
	PreFunction   string          `json:"pre_function"`
}

// ErrNotBuilt marks a configuration naming a plugin or option the data
// plane does not run: the route is refused service (503), never served
// without it.
var ErrNotBuilt = errors.New("not built")

// AppendJSONString appends s as a JSON string: quotes, backslashes and
// control bytes escaped, other bytes as they are.
func AppendJSONString(dst, s []byte) []byte {
	const hexd = "0123456789abcdef"
	dst = append(dst, '"')
	for _, b := range s {
		switch {
		case b == '"' || b == '\\':
			dst = append(dst, '\\', b)
		case b < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexd[b>>4], hexd[b&15])
		default:
			dst = append(dst, b)
		}
	}
	return append(dst, '"')
}
