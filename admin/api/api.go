// Package api is the management (admin) REST API under /gw/admin: routes,
// services, upstreams, consumers and their credentials, plugin configs,
// global rules, plugin metadata, stream routes, SSL certificates and
// secret managers, plus the schema and plugin endpoints. It behaves like
// Apache APISIX's Admin API v3 where the spec is silent: status codes,
// {key, value} and {total, list} shapes, createdIndex/modifiedIndex from
// the store's revisions, PATCH as a recursive merge, ttl, paging and
// filters, reference checks and APISIX-style error_msg texts.
//
// Every write is validated by JSON Schema (schemas/), checked against the
// other resources (references, duplicate credentials, one global rule per
// plugin, indistinguishable routes) and compiled (admin/gateway) before it
// is stored; the store's Watch then publishes the new snapshot, and the
// answer waits for it so a 2xx means the data plane sees the change.
package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"gw/admin/gateway"
	"gw/admin/store"
)

// Prefix is the admin API's base path.
const Prefix = "/gw/admin"

// Config configures the API.
type Config struct {
	Store  store.Store
	Runner *gateway.Runner
	// Key is the admin key; every request must carry it (X-API-KEY header,
	// api_key query argument or cookie).
	Key string
	// KeyPrefix is shown before store keys in answers ("/gw", or the etcd
	// prefix): the store holds "/routes/1", the answer says "/gw/routes/1".
	KeyPrefix string
	Log       *slog.Logger
	// ApplyWait bounds how long a write waits for its snapshot (default 3 s).
	ApplyWait time.Duration
	// Built, when set, names the plugins the data plane runs: only those
	// are listed, served by the schema endpoints and accepted in writes
	// (another plugin is a 400 "unknown plugin"), so no stored plugin is
	// silently not run. Nil accepts every plugin with a schema.
	Built func(name string) bool
	// CheckPlugin, when set, validates one plugin configuration the way the
	// data plane will compile it (unknown fields, options it does not run);
	// an error is a 400 naming the plugin. consumer is true for consumers'
	// and credentials' plugins.
	CheckPlugin func(name string, conf []byte, consumer bool) error
}

// Server answers the admin API.
type Server struct {
	cfg      Config
	schemas  *Schemas
	adminKey []byte
	// mu serialises this process's writes, so that the checks against the
	// other resources and the write itself are one step.
	mu  sync.Mutex
	now func() time.Time
}

// New returns the API server.
func New(cfg Config) (*Server, error) {
	if cfg.Key == "" {
		return nil, errors.New("admin API: an admin key is required")
	}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = "/gw"
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.ApplyWait == 0 {
		cfg.ApplyWait = 3 * time.Second
	}
	sch, err := LoadSchemas()
	if err != nil {
		return nil, err
	}
	if cfg.Built != nil {
		sch.restrict(cfg.Built)
	}
	return &Server{cfg: cfg, schemas: sch, adminKey: []byte(cfg.Key), now: time.Now}, nil
}

// Schemas returns the compiled schemas (for the fuzz target and tests).
func (s *Server) Schemas() *Schemas { return s.schemas }

// apiError is an answer with an error_msg body.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return e.msg }

func fail(code int, msg string) *apiError { return &apiError{code, msg} }

func (s *Server) authorized(ctx *fasthttp.RequestCtx) bool {
	got := ctx.Request.Header.Peek("X-API-KEY")
	if len(got) == 0 {
		got = ctx.QueryArgs().Peek("api_key")
	}
	if len(got) == 0 {
		got = ctx.Request.Header.Cookie("X-API-KEY")
	}
	if len(got) == 0 {
		got = ctx.Request.Header.Cookie("api_key")
	}
	return len(got) > 0 && subtle.ConstantTimeCompare(got, s.adminKey) == 1
}

// Handler serves every admin request.
func (s *Server) Handler(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.SetContentType("application/json")
	path := string(ctx.Path())
	rest, ok := strings.CutPrefix(path, Prefix+"/")
	if !ok {
		writeErr(ctx, fail(404, "not found"))
		return
	}
	if !s.authorized(ctx) {
		writeErr(ctx, fail(401, "failed to check token"))
		return
	}
	status, body, err := s.route(ctx, strings.Trim(rest, "/"))
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			s.cfg.Log.Error("admin API request failed", "method", string(ctx.Method()), "path", path, "error", err.Error())
			ae = fail(503, err.Error())
		}
		writeErr(ctx, ae)
		return
	}
	ctx.SetStatusCode(status)
	switch b := body.(type) {
	case []byte:
		ctx.SetBody(b)
	case string:
		ctx.Response.Header.SetContentType("text/plain; charset=utf-8")
		ctx.SetBodyString(b)
	default:
		out, merr := json.Marshal(b)
		if merr != nil {
			writeErr(ctx, fail(500, "cannot encode the answer"))
			return
		}
		ctx.SetBody(out)
	}
}

func writeErr(ctx *fasthttp.RequestCtx, e *apiError) {
	ctx.Response.Header.SetContentType("application/json")
	ctx.SetStatusCode(e.code)
	b, _ := json.Marshal(map[string]string{"error_msg": e.msg})
	ctx.SetBody(b)
}

// target is a parsed admin path.
type target struct {
	c       *collection
	id      string // "" on the collection path
	sub     string // PATCH sub_path
	listPfx string // the store prefix a list on this path reads
}

func (s *Server) route(ctx *fasthttp.RequestCtx, rest string) (int, any, error) {
	method := string(ctx.Method())
	segs := strings.Split(rest, "/")
	switch segs[0] {
	case "schema":
		if method != "GET" {
			return 0, nil, fail(405, "not supported `"+method+"` method for schema")
		}
		return s.schemaDoc(ctx, segs[1:])
	case "plugins":
		return s.pluginsEndpoint(ctx, method, segs[1:])
	}
	t, err := s.parseTarget(segs)
	if err != nil {
		return 0, nil, err
	}
	if t.id == "" {
		switch method {
		case "GET":
			return s.list(ctx, t)
		case "POST":
			if !t.c.methods["POST"] {
				return 0, nil, fail(405, "not supported `POST` method for "+t.c.kind)
			}
			return s.write(ctx, t, method)
		case "PUT":
			return s.write(ctx, t, method)
		}
		return 0, nil, fail(405, "not supported `"+method+"` method for "+t.c.kind)
	}
	if !t.c.methods[method] {
		return 0, nil, fail(405, "not supported `"+method+"` method for "+t.c.kind)
	}
	if t.sub != "" && method != "PATCH" {
		return 0, nil, fail(404, "not found")
	}
	switch method {
	case "GET":
		return s.get(ctx, t)
	case "DELETE":
		return s.remove(ctx, t)
	case "PUT", "PATCH":
		return s.write(ctx, t, method)
	}
	return 0, nil, fail(405, "not supported `"+method+"` method for "+t.c.kind)
}

// validID is the common ID rule: 1 to 64 of letters, digits, -, _ and .
func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func (s *Server) parseTarget(segs []string) (*target, error) {
	root := storeRoot
	switch segs[0] {
	case gateway.Consumers:
		if len(segs) >= 3 && segs[2] == "credentials" {
			if len(segs) > 4 || !validID(segs[1]) {
				return nil, fail(404, "not found")
			}
			t := &target{c: collections[gateway.Credentials], listPfx: root + "/consumers/" + segs[1] + "/credentials/"}
			if len(segs) == 4 {
				if !validID(segs[3]) {
					return nil, fail(400, "invalid credential id")
				}
				t.id = segs[1] + "/" + segs[3]
			} else {
				t.id = ""
				t.sub = segs[1] // the consumer, for a PUT with the id in the body
			}
			return t, nil
		}
	case gateway.Secrets:
		t := &target{c: collections[gateway.Secrets], listPfx: root + "/secrets/"}
		if len(segs) == 1 {
			return t, nil
		}
		if !secretTypes[segs[1]] {
			return nil, fail(400, "invalid secret manager type ["+segs[1]+"]: must be vault, aws or gcp")
		}
		t.listPfx += segs[1] + "/"
		switch len(segs) {
		case 2:
			t.sub = segs[1]
		case 3:
			if !validID(segs[2]) {
				return nil, fail(400, "invalid secret id")
			}
			t.id = segs[1] + "/" + segs[2]
		default:
			return nil, fail(404, "not found")
		}
		return t, nil
	}
	c := collections[segs[0]]
	if c == nil || c.name == gateway.Credentials {
		return nil, fail(404, "not found")
	}
	t := &target{c: c, listPfx: root + "/" + c.name + "/"}
	if len(segs) >= 2 {
		t.id = segs[1]
		if c.name != gateway.PluginMetadata && !validID(t.id) {
			return nil, fail(400, "invalid "+c.kind+" id ["+truncate(t.id)+"]")
		}
	}
	if len(segs) > 2 {
		t.sub = strings.Join(segs[2:], "/")
	}
	return t, nil
}

// item is one resource as answered.
type item struct {
	Key           string          `json:"key"`
	Value         json.RawMessage `json:"value"`
	CreatedIndex  int64           `json:"createdIndex"`
	ModifiedIndex int64           `json:"modifiedIndex"`
}

func (s *Server) shown(c *collection, kv store.KV) item {
	v := kv.Value
	if c.name == gateway.SSLs {
		v = redactSSL(v)
	}
	return item{Key: s.cfg.KeyPrefix + kv.Key, Value: v, CreatedIndex: kv.CreateRev, ModifiedIndex: kv.ModRev}
}

// redactSSL removes the private keys: reads never return them.
func redactSSL(v []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(v, &m) != nil {
		return v
	}
	delete(m, "key")
	delete(m, "keys")
	out, err := json.Marshal(m)
	if err != nil {
		return v
	}
	return out
}

func (s *Server) key(t *target) string {
	if t.c.name == gateway.Credentials {
		user, id, _ := strings.Cut(t.id, "/")
		return storeRoot + "/consumers/" + user + "/credentials/" + id
	}
	return storeRoot + "/" + t.c.name + "/" + t.id
}

func (s *Server) get(ctx *fasthttp.RequestCtx, t *target) (int, any, error) {
	kv, err := s.cfg.Store.Get(context.Background(), s.key(t))
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil, fail(404, "Key not found")
	}
	if err != nil {
		return 0, nil, err
	}
	return 200, s.shown(t.c, kv), nil
}

// storeRoot is the root of resource keys in the store: keys are
// "/routes/1"; the etcd store adds its own prefix (--etcd-prefix, /gw).
const storeRoot = ""
