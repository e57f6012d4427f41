// Package limitcount is the limit-count plugin: at most `count` requests
// per `time_window` seconds for each key (a variable such as remote_addr,
// a combination of variables, or a constant), counted in fixed windows
// locally or in Redis through the limiter package, with the
// X-RateLimit-* headers and the `rate_limiting_info` variable.
package limitcount

import (
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/puzpuzpuz/xsync/v3"

	"gw/edge/gateway/plugin"
	"gw/edge/gateway/vars"
	"gw/limiter"
	"gw/limiter/circuit"
)

// Name and Priority are APISIX's.
const (
	Name     = "limit-count"
	Priority = 1002
)

func init() {
	plugin.Register(&plugin.Def{Name: Name, Priority: Priority, New: New, Check: Check})
}

type conf struct {
	Count            int64    `json:"count"`
	TimeWindow       int64    `json:"time_window"`
	RejectedCode     int      `json:"rejected_code"`
	RejectedMsg      string   `json:"rejected_msg"`
	Key              string   `json:"key"`
	KeyType          string   `json:"key_type"`
	Policy           string   `json:"policy"`
	ShowHeaders      *bool    `json:"show_limit_quota_header"`
	Group            string   `json:"group"`
	RedisHost        string   `json:"redis_host"`
	RedisPort        int      `json:"redis_port"`
	RedisUsername    string   `json:"redis_username"`
	RedisPassword    string   `json:"redis_password"`
	RedisDatabase    int      `json:"redis_database"`
	RedisTimeout     int      `json:"redis_timeout"`
	RedisSSL         bool     `json:"redis_ssl"`
	RedisSSLVerify   bool     `json:"redis_ssl_verify"`
	AllowDegradation bool     `json:"allow_degradation"`
	ClusterNodes     []string `json:"redis_cluster_nodes"`
	ClusterName      string   `json:"redis_cluster_name"`
	ClusterSSL       bool     `json:"redis_cluster_ssl"`
	ClusterSSLVerify bool     `json:"redis_cluster_ssl_verify"`
}

const (
	keyVar = iota
	keyCombination
	keyConstant
)

type limitCount struct {
	plugin.Base
	count    int64
	window   time.Duration
	code     int
	msg      []byte
	keyType  int
	keyVar   vars.Var
	keyTmpl  vars.Template
	constant []byte
	scope    string
	show     bool
	// degrade: when Redis cannot count, the request passes unlimited
	// (allow_degradation) instead of a 500.
	degrade bool

	lim *limiter.Limiter
	ids *interner
}

var remoteAddr, _ = vars.Compile("remote_addr")

// policyFields are the fields that only mean something under one policy:
// set under another they would be silently ignored, so they are refused.
var policyFields = map[string]string{
	"redis_host": "redis", "redis_port": "redis", "redis_database": "redis",
	"redis_cluster_nodes": "redis-cluster", "redis_cluster_name": "redis-cluster",
	"redis_cluster_ssl": "redis-cluster", "redis_cluster_ssl_verify": "redis-cluster",
	"redis_username": "redis*", "redis_password": "redis*", "redis_timeout": "redis*",
	"redis_ssl": "redis*", "redis_ssl_verify": "redis*",
}

func decode(raw json.RawMessage) (conf, error) {
	c := conf{RejectedCode: 503, Key: "remote_addr", KeyType: "var", Policy: "local", RedisPort: 6379, RedisTimeout: 1000}
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("cannot decode: %w", err)
	}
	if c.Count <= 0 || c.TimeWindow <= 0 {
		return c, fmt.Errorf("`count` and `time_window` must be positive")
	}
	if c.TimeWindow > int64(limiter.MaxWindow/time.Second) {
		return c, fmt.Errorf("`time_window` %d is above the longest window, %d seconds", c.TimeWindow, int64(limiter.MaxWindow/time.Second))
	}
	switch c.Policy {
	case "local", "redis", "redis-cluster":
	default:
		return c, fmt.Errorf("policy %q is %w in this build", c.Policy, plugin.ErrNotBuilt)
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(raw, &fields) // decoded above
	for f := range fields {
		pol, ok := policyFields[f]
		if !ok || pol == c.Policy || pol == "redis*" && c.Policy != "local" {
			continue
		}
		if pol == "redis*" {
			pol = "redis or redis-cluster"
		}
		return c, fmt.Errorf("`%s` applies to policy %s, not %s", f, pol, c.Policy)
	}
	if c.RedisTimeout <= 0 {
		return c, fmt.Errorf("`redis_timeout` must be positive")
	}
	switch c.Policy {
	case "redis":
		if c.RedisHost == "" {
			return c, fmt.Errorf("policy redis needs `redis_host`")
		}
		if c.RedisPort <= 0 || c.RedisPort > 65535 || c.RedisDatabase < 0 {
			return c, fmt.Errorf("`redis_port` or `redis_database` out of range")
		}
	case "redis-cluster":
		if len(c.ClusterNodes) == 0 || c.ClusterName == "" {
			return c, fmt.Errorf("policy redis-cluster needs `redis_cluster_nodes` and `redis_cluster_name`")
		}
		for i, n := range c.ClusterNodes {
			if _, port, err := net.SplitHostPort(n); err != nil || port == "" {
				return c, fmt.Errorf("`redis_cluster_nodes` #%d %q is not host:port", i, n)
			}
		}
	}
	return c, nil
}

// Check validates a configuration without the snapshot (the admin API's
// write-time check).
func Check(raw json.RawMessage) error {
	c, err := decode(raw)
	if err != nil {
		return err
	}
	_, _, _, _, err = compileKey(&c)
	return err
}

// compileKey compiles `key` by `key_type`.
func compileKey(c *conf) (kt int, v vars.Var, t vars.Template, constant []byte, err error) {
	switch c.KeyType {
	case "var":
		k := c.Key
		if len(k) > 0 && k[0] == '$' {
			k = k[1:]
		}
		var known bool
		if v, known = vars.Compile(k); !known {
			return 0, v, t, nil, fmt.Errorf("`key`: unknown variable %q", c.Key)
		}
		return keyVar, v, t, nil, nil
	case "var_combination":
		if t, err = vars.CompileTemplate(c.Key); err != nil {
			return 0, v, t, nil, fmt.Errorf("`key`: %w", err)
		}
		return keyCombination, v, t, nil, nil
	case "constant":
		return keyConstant, v, t, []byte(c.Key), nil
	}
	return 0, v, t, nil, fmt.Errorf("`key_type` %q is not supported", c.KeyType)
}

// New compiles a limit-count configuration.
func New(raw json.RawMessage, env *plugin.Env, owner string) (plugin.Plugin, error) {
	c, err := decode(raw)
	if err != nil {
		return nil, err
	}
	p := &limitCount{count: c.Count, window: time.Duration(c.TimeWindow) * time.Second, code: c.RejectedCode,
		show: c.ShowHeaders == nil || *c.ShowHeaders, degrade: c.AllowDegradation}
	if c.RejectedMsg != "" {
		b, _ := json.Marshal(map[string]string{"error_msg": c.RejectedMsg})
		p.msg = b
	}
	if p.keyType, p.keyVar, p.keyTmpl, p.constant, err = compileKey(&c); err != nil {
		return nil, err
	}
	// Counters belong to the group, else to this configuration where it is
	// configured: a changed count or window starts afresh, as APISIX. A
	// group's scope carries its window: the limiter keeps one counter of
	// an odd length per subject (APISIX refuses mismatched group configs).
	if c.Group != "" {
		p.scope = "lc/group/" + c.Group + "/" + strconv.FormatInt(c.TimeWindow, 10)
	} else {
		h := xxhash.Sum64(raw)
		p.scope = "lc/" + owner + "/" + hex.EncodeToString([]byte{byte(h >> 56), byte(h >> 48), byte(h >> 40), byte(h >> 32), byte(h >> 24), byte(h >> 16), byte(h >> 8), byte(h)})
	}
	ids, _ := env.Shared.GetOrCreate("limit-count/ids", func() (any, error) { return newInterner(), nil })
	p.ids = ids.(*interner)

	if c.Policy == "local" {
		l, _ := env.Shared.GetOrCreate("limiter/local", func() (any, error) {
			return limiter.New(limiter.Config{}), nil
		})
		p.lim = l.(*limiter.Limiter)
		return p, nil
	}
	cs, _ := env.Shared.GetOrCreate("limit-count/redis", func() (any, error) { return newClients(), nil })
	p.lim = cs.(*clients).acquire(p, redisConfig(&c), env.Log)
	return p, nil
}

// redisConfig is the connection of a Redis policy. Counters keep to
// limit-count's own key prefix; a failed call is reported (Unavailable),
// never counted locally, and the circuit probes every second so a Redis
// that is back is used within about a second.
func redisConfig(c *conf) limiter.RedisConfig {
	rc := limiter.RedisConfig{
		Username: c.RedisUsername, Password: c.RedisPassword,
		KeyPrefix: "gw:lc:", NoLocalFallback: true,
		Timing: circuit.Timing{
			Timeout:       time.Duration(c.RedisTimeout) * time.Millisecond,
			DialTimeout:   time.Duration(c.RedisTimeout) * time.Millisecond,
			ProbeInterval: time.Second,
		},
	}
	ssl, verify := c.RedisSSL, c.RedisSSLVerify
	if c.Policy == "redis-cluster" {
		rc.ClusterNodes, rc.Name = c.ClusterNodes, c.ClusterName
		ssl, verify = ssl || c.ClusterSSL, verify || c.ClusterSSLVerify
	} else {
		rc.Addr, rc.DB = net.JoinHostPort(c.RedisHost, strconv.Itoa(c.RedisPort)), c.RedisDatabase
	}
	if ssl {
		// APISIX's default is no verification (redis_ssl_verify false);
		// with it the system roots check every node's certificate against
		// the name it was dialled by.
		rc.TLS = &tls.Config{InsecureSkipVerify: !verify, MinVersion: tls.VersionTLS12}
	}
	return rc
}

func (p *limitCount) Phases() plugin.Phase { return plugin.Access | plugin.HeaderFilter }

var resPool = sync.Pool{New: func() any { return new(limiter.Reservation) }}

func (p *limitCount) Access(c *plugin.Ctx) bool {
	key := c.Buf[:0]
	switch p.keyType {
	case keyVar:
		var ok bool
		key, ok = p.keyVar.Append(key, c.R, &c.Vars)
		if !ok || len(key) == 0 {
			// APISIX falls back to the client address.
			key, _ = remoteAddr.Append(key[:0], c.R, &c.Vars)
		}
	case keyCombination:
		key = p.keyTmpl.Append(key, c.R, &c.Vars)
	default:
		key = append(key, p.constant...)
	}
	c.Buf = key[:0]
	id := p.ids.get(key)

	r := resPool.Get().(*limiter.Reservation)
	r.Reset()
	r.AddWindow(limiter.Subject{Scope: p.scope, ID: id}, p.window, p.count)
	d := p.lim.Reserve(r, 0)
	p.lim.Settle(r, 0)
	resPool.Put(r)
	if d.Unavailable {
		// Redis could not count it (APISIX: "failed to limit count").
		if p.degrade {
			return true
		}
		c.Reply(500, errFailed)
		return false
	}
	var remaining, reset int64
	if d.Allowed {
		remaining, reset = d.Requests.Remaining, ceilSeconds(d.Requests.Reset)
	} else {
		remaining, reset = 0, ceilSeconds(d.Reset)
	}
	c.Limit = plugin.LimitInfo{Set: p.show, Limit: p.count, Remaining: remaining, Reset: reset}
	c.RateInfo = appendInfo(c.RateInfo[:0], key, p.count, remaining, reset)
	if !d.Allowed {
		c.Reply(p.code, p.msg)
		return false
	}
	return true
}

var errFailed = []byte(`{"error_msg":"failed to limit count"}`)

var (
	hLimit     = []byte("X-RateLimit-Limit")
	hRemaining = []byte("X-RateLimit-Remaining")
	hReset     = []byte("X-RateLimit-Reset")
)

func (p *limitCount) HeaderFilter(c *plugin.Ctx) {
	if !c.Limit.Set {
		return
	}
	h := &c.R.Response.Header
	b := strconv.AppendInt(c.Buf[:0], c.Limit.Limit, 10)
	h.SetBytesKV(hLimit, b)
	b = strconv.AppendInt(b[:0], c.Limit.Remaining, 10)
	h.SetBytesKV(hRemaining, b)
	b = strconv.AppendInt(b[:0], c.Limit.Reset, 10)
	h.SetBytesKV(hReset, b)
	c.Buf = b[:0]
	c.Limit.Set = false // a second limit-count in the chain set its own
}

func ceilSeconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}

// appendInfo writes the rate_limiting_info JSON object.
func appendInfo(dst, key []byte, limit, remaining, reset int64) []byte {
	dst = append(dst, `{"rate_limiting_key":`...)
	dst = AppendJSONString(dst, key)
	dst = append(dst, `,"rate_limiting_limit":`...)
	dst = strconv.AppendInt(dst, limit, 10)
	dst = append(dst, `,"rate_limiting_remaining":`...)
	dst = strconv.AppendInt(dst, remaining, 10)
	dst = append(dst, `,"rate_limiting_reset":`...)
	dst = strconv.AppendInt(dst, reset, 10)
	return append(dst, '}')
}

// AppendJSONString appends s as a JSON string (plugin.AppendJSONString).
func AppendJSONString(dst, s []byte) []byte { return plugin.AppendJSONString(dst, s) }

// interner turns a request's key bytes into the string the limiter keys
// its counters by, allocating only the first time a key is seen.
type interner struct {
	m *xsync.MapOf[uint64, string]
}

const maxInterned = 1 << 16

func newInterner() *interner { return &interner{m: xsync.NewMapOf[uint64, string]()} }

func (in *interner) get(b []byte) string {
	h := xxhash.Sum64(b)
	if s, ok := in.m.Load(h); ok && s == string(b) {
		return s
	}
	s := string(b)
	if in.m.Size() >= maxInterned {
		// Bounded memory: clients rotating keys cost one string each.
		in.m.Clear()
	}
	in.m.Store(h, s)
	return s
}
