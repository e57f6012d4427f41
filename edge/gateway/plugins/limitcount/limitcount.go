// Package limitcount is the limit-count plugin: at most `count` requests
// per `time_window` seconds for each key (a variable such as remote_addr,
// a combination of variables, or a constant), counted in fixed windows
// locally or in Redis through the limiter package, with the
// X-RateLimit-* headers and the `rate_limiting_info` variable.
package limitcount

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/puzpuzpuz/xsync/v3"

	"gw/edge/gateway/plugin"
	"gw/edge/gateway/vars"
	"gw/limiter"
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
	AllowDegradation bool     `json:"allow_degradation"`
	ClusterNodes     []string `json:"redis_cluster_nodes"`
}

const (
	keyVar = iota
	keyCombination
	keyConstant
)

type limitCount struct {
	plugin.Base
	count, window int64
	code          int
	msg           []byte
	keyType       int
	keyVar        vars.Var
	keyTmpl       vars.Template
	constant      []byte
	scope         string
	show          bool

	lim  *limiter.Limiter // windows the limiter has (1 s, 1 min, 1 h, 1 day)
	kind limiter.Kind
	win  *windows // any other window length, counted in this process

	ids *interner
}

var remoteAddr, _ = vars.Compile("remote_addr")

func decode(raw json.RawMessage) (conf, error) {
	c := conf{RejectedCode: 503, Key: "remote_addr", KeyType: "var", Policy: "local", RedisPort: 6379, RedisTimeout: 1000}
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("cannot decode: %w", err)
	}
	if c.Count <= 0 || c.TimeWindow <= 0 {
		return c, fmt.Errorf("`count` and `time_window` must be positive")
	}
	_, std := limiter.WindowKind(time.Duration(c.TimeWindow)*time.Second, false)
	switch c.Policy {
	case "local":
	case "redis":
		if c.RedisSSL {
			return c, fmt.Errorf("`redis_ssl` is %w in this build", plugin.ErrNotBuilt)
		}
		if !std {
			return c, fmt.Errorf("policy redis counts windows of 1, 60, 3600 or 86400 seconds; time_window %d is %w in this build", c.TimeWindow, plugin.ErrNotBuilt)
		}
	default:
		return c, fmt.Errorf("policy %q is %w in this build", c.Policy, plugin.ErrNotBuilt)
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
	p := &limitCount{count: c.Count, window: c.TimeWindow, code: c.RejectedCode, show: c.ShowHeaders == nil || *c.ShowHeaders}
	if c.RejectedMsg != "" {
		b, _ := json.Marshal(map[string]string{"error_msg": c.RejectedMsg})
		p.msg = b
	}
	if p.keyType, p.keyVar, p.keyTmpl, p.constant, err = compileKey(&c); err != nil {
		return nil, err
	}
	// Counters belong to the group, else to this configuration where it is
	// configured: a changed count or window starts afresh, as APISIX.
	if c.Group != "" {
		p.scope = "lc/group/" + c.Group
	} else {
		h := xxhash.Sum64(raw)
		p.scope = "lc/" + owner + "/" + hex.EncodeToString([]byte{byte(h >> 56), byte(h >> 48), byte(h >> 40), byte(h >> 32), byte(h >> 24), byte(h >> 16), byte(h >> 8), byte(h)})
	}
	ids, _ := env.Shared.GetOrCreate("limit-count/ids", func() (any, error) { return newInterner(), nil })
	p.ids = ids.(*interner)

	kind, std := limiter.WindowKind(time.Duration(c.TimeWindow)*time.Second, false)
	switch c.Policy {
	case "local":
		if std {
			l, _ := env.Shared.GetOrCreate("limiter/local", func() (any, error) {
				return limiter.New(limiter.Config{Logger: env.Log}), nil
			})
			p.lim, p.kind = l.(*limiter.Limiter), kind
		} else {
			w, _ := env.Shared.GetOrCreate("limit-count/windows", func() (any, error) { return newWindows(), nil })
			p.win = w.(*windows)
		}
	case "redis":
		addr := c.RedisHost + ":" + strconv.Itoa(c.RedisPort)
		pw := xxhash.Sum64String(c.RedisPassword)
		key := "limiter/redis/" + addr + "/" + strconv.Itoa(c.RedisDatabase) + "/" + c.RedisUsername + "/" + strconv.FormatUint(pw, 16) + "/" + strconv.Itoa(c.RedisTimeout)
		l, _ := env.Shared.GetOrCreate(key, func() (any, error) {
			return limiter.New(limiter.Config{Logger: env.Log, Redis: &limiter.RedisConfig{
				Addr: addr, Username: c.RedisUsername, Password: c.RedisPassword, DB: c.RedisDatabase,
				KeyPrefix: "gw:lc:", Timeout: time.Duration(c.RedisTimeout) * time.Millisecond,
			}}), nil
		})
		p.lim, p.kind = l.(*limiter.Limiter), kind
	}
	return p, nil
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

	var allowed bool
	var remaining, reset int64
	if p.lim != nil {
		r := resPool.Get().(*limiter.Reservation)
		r.Reset()
		r.Add(limiter.Subject{Scope: p.scope, ID: id}, p.kind, p.count)
		d := p.lim.Reserve(r, 0)
		p.lim.Settle(r, 0)
		resPool.Put(r)
		allowed = d.Allowed
		if allowed {
			remaining, reset = d.Requests.Remaining, ceilSeconds(d.Requests.Reset)
		} else {
			remaining, reset = 0, ceilSeconds(d.Reset)
		}
	} else {
		allowed, remaining, reset = p.win.take(p.scope, id, p.count, p.window)
	}
	c.Limit = plugin.LimitInfo{Set: p.show, Limit: p.count, Remaining: remaining, Reset: reset}
	c.RateInfo = appendInfo(c.RateInfo[:0], key, p.count, remaining, reset)
	if !allowed {
		c.Reply(p.code, p.msg)
		return false
	}
	return true
}

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

// windows counts fixed windows of any length in this process.
type windows struct {
	m *xsync.MapOf[string, *counter]
}

type counter struct {
	win atomic.Int64
	n   atomic.Int64
}

func newWindows() *windows { return &windows{m: xsync.NewMapOf[string, *counter]()} }

// take charges one request to key's current window of length window
// seconds (aligned to the Unix epoch).
func (w *windows) take(scope, id string, limit, window int64) (allowed bool, remaining, reset int64) {
	now := time.Now().Unix()
	cur := now / window
	reset = (cur+1)*window - now
	k := scopeKey(scope, id)
	ctr, ok := w.m.Load(k)
	if !ok {
		if w.m.Size() >= maxInterned {
			w.m.Range(func(k string, c *counter) bool {
				if c.win.Load() < cur {
					w.m.Delete(k)
				}
				return true
			})
		}
		ctr, _ = w.m.LoadOrCompute(k, func() *counter { c := &counter{}; c.win.Store(cur); return c })
	}
	for {
		old := ctr.win.Load()
		if old >= cur {
			break
		}
		if ctr.win.CompareAndSwap(old, cur) {
			ctr.n.Store(0)
			break
		}
	}
	for {
		n := ctr.n.Load()
		if n >= limit {
			return false, 0, reset
		}
		if ctr.n.CompareAndSwap(n, n+1) {
			return true, limit - n - 1, reset
		}
	}
}

func scopeKey(scope, id string) string { return scope + "\x00" + id }
