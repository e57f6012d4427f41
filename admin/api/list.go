package api

import (
	"context"
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"gw/admin/gateway"
	"gw/admin/store"
)

// listQuery is a list request's paging and filters.
type listQuery struct {
	page, size int // size 0: no paging
	name, uri  *regexp.Regexp
	label      string
	filter     map[string]string
}

func parseListQuery(args *fasthttp.Args, routes bool) (*listQuery, error) {
	q := &listQuery{page: 1}
	if b := args.Peek("page_size"); b != nil {
		n, err := strconv.Atoi(string(b))
		if err != nil || n < 10 || n > 500 {
			return nil, fail(400, "invalid argument page_size: should be an integer from 10 to 500")
		}
		q.size = n
	}
	if b := args.Peek("page"); b != nil {
		n, err := strconv.Atoi(string(b))
		if err != nil || n < 1 {
			return nil, fail(400, "invalid argument page: should be an integer of at least 1")
		}
		q.page = n
	}
	var err error
	if b := args.Peek("name"); len(b) > 0 {
		if q.name, err = regexp.Compile(string(b)); err != nil {
			return nil, fail(400, "invalid argument name: not a regular expression")
		}
	}
	if b := args.Peek("uri"); len(b) > 0 && routes {
		if q.uri, err = regexp.Compile(string(b)); err != nil {
			return nil, fail(400, "invalid argument uri: not a regular expression")
		}
	}
	q.label = string(args.Peek("label"))
	if b := args.Peek("filter"); len(b) > 0 {
		// The argument is itself URL-encoded ("service_id%3D1"); the query
		// parser decoded it once.
		q.filter = map[string]string{}
		for _, part := range strings.Split(string(b), "&") {
			k, v, ok := strings.Cut(part, "=")
			if !ok || (k != "service_id" && k != "upstream_id") {
				return nil, fail(400, "invalid argument filter: supports service_id=<id> and upstream_id=<id>")
			}
			q.filter[k] = v
		}
	}
	return q, nil
}

func (q *listQuery) filtering() bool {
	return q.name != nil || q.uri != nil || q.label != "" || len(q.filter) > 0
}

// keep reports whether a stored value passes the filters.
func (q *listQuery) keep(raw []byte) bool {
	var v struct {
		Name       string            `json:"name"`
		Username   string            `json:"username"`
		URI        string            `json:"uri"`
		URIs       []string          `json:"uris"`
		Labels     map[string]string `json:"labels"`
		ServiceID  gateway.ID        `json:"service_id"`
		UpstreamID gateway.ID        `json:"upstream_id"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	if q.name != nil {
		name := v.Name
		if name == "" {
			name = v.Username
		}
		if !q.name.MatchString(name) {
			return false
		}
	}
	if q.uri != nil {
		ok := v.URI != "" && q.uri.MatchString(v.URI)
		for _, u := range v.URIs {
			ok = ok || q.uri.MatchString(u)
		}
		if !ok {
			return false
		}
	}
	if q.label != "" {
		k, want, hasVal := strings.Cut(q.label, ":")
		got, ok := v.Labels[k]
		if !ok || hasVal && got != want {
			return false
		}
	}
	for k, want := range q.filter {
		got := string(v.ServiceID)
		if k == "upstream_id" {
			got = string(v.UpstreamID)
		}
		if got != want {
			return false
		}
	}
	return true
}

type listBody struct {
	Total int    `json:"total"`
	List  []item `json:"list"`
}

func (s *Server) list(rctx *fasthttp.RequestCtx, t *target) (int, any, error) {
	q, err := parseListQuery(rctx.QueryArgs(), t.c.name == gateway.Routes)
	if err != nil {
		return 0, nil, err
	}
	kvs, _, err := s.cfg.Store.List(context.Background(), t.listPfx)
	if err != nil {
		return 0, nil, err
	}
	st := gateway.NewState(storeRoot)
	var kept []store.KV
	for _, kv := range kvs {
		if coll, _, ok := st.ParseKey(kv.Key); !ok || coll != t.c.name {
			continue // a consumer's credentials are not consumers
		}
		if q.filtering() && !q.keep(kv.Value) {
			continue
		}
		kept = append(kept, kv)
	}
	// Store order is key order; numeric IDs read better in number order.
	sort.SliceStable(kept, func(i, j int) bool { return keyLess(kept[i].Key, kept[j].Key) })
	out := listBody{Total: len(kept), List: []item{}}
	if q.size > 0 {
		from := (q.page - 1) * q.size
		if from > len(kept) {
			from = len(kept)
		}
		to := min(from+q.size, len(kept))
		kept = kept[from:to]
	}
	for _, kv := range kept {
		out.List = append(out.List, s.shown(t.c, kv))
	}
	return 200, out, nil
}

func keyLess(a, b string) bool {
	ia, ib := strings.LastIndexByte(a, '/'), strings.LastIndexByte(b, '/')
	if a[:ia] == b[:ib] {
		na, ea := strconv.ParseUint(a[ia+1:], 10, 64)
		nb, eb := strconv.ParseUint(b[ib+1:], 10, 64)
		if ea == nil && eb == nil {
			return na < nb
		}
	}
	return a < b
}

// schemaDoc serves /schema/<resource> and /schema/plugins/<name>.
func (s *Server) schemaDoc(rctx *fasthttp.RequestCtx, segs []string) (int, any, error) {
	if len(segs) == 2 && segs[0] == "plugins" {
		return s.pluginSchema(rctx, segs[1])
	}
	doc, ok := s.schemas.docs[schemaAliases[strings.Join(segs, "/")]]
	if !ok {
		return 0, nil, fail(404, "schema not found")
	}
	return 200, doc, nil
}

func (s *Server) pluginSchema(rctx *fasthttp.RequestCtx, name string) (int, any, error) {
	p := s.schemas.plugins[name]
	if p == nil {
		return 0, nil, fail(404, "plugin not found")
	}
	switch typ := string(rctx.QueryArgs().Peek("schema_type")); typ {
	case "", "route":
	case "consumer", "metadata":
		d := p.Docs[typ+"_schema"]
		if d == nil {
			return 0, nil, fail(404, "plugin "+name+" has no "+typ+" schema")
		}
		return 200, d, nil
	default:
		return 0, nil, fail(400, "invalid argument schema_type: route, consumer or metadata")
	}
	// The plugin schema, with its consumer and metadata schemas beside it.
	out := map[string]any{}
	for k, v := range p.Docs["schema"].(map[string]any) {
		out[k] = v
	}
	for _, part := range []string{"consumer_schema", "metadata_schema"} {
		if d := p.Docs[part]; d != nil {
			out[part] = d
		}
	}
	return 200, out, nil
}

// pluginsEndpoint serves /plugins/list, /plugins/<name> and PUT
// /plugins/reload.
func (s *Server) pluginsEndpoint(rctx *fasthttp.RequestCtx, method string, segs []string) (int, any, error) {
	if len(segs) == 1 && segs[0] == "reload" {
		if method != "PUT" {
			return 0, nil, fail(405, "not supported `"+method+"` method for plugins reload")
		}
		// The plugins are compiled into the binary: a reload lists the store
		// again and recompiles every resource with them.
		if err := s.cfg.Runner.Reload(context.Background()); err != nil {
			return 0, nil, err
		}
		return 200, "done", nil
	}
	if method != "GET" {
		return 0, nil, fail(405, "not supported `"+method+"` method for plugins")
	}
	switch {
	case len(segs) == 1 && segs[0] == "list":
		return 200, s.schemas.names, nil
	case len(segs) == 1 && segs[0] != "":
		return s.pluginSchema(rctx, segs[0])
	case len(segs) == 0:
		all := map[string]any{}
		for _, n := range s.schemas.names {
			all[n] = s.schemas.plugins[n].Docs["schema"]
		}
		return 200, all, nil
	}
	return 0, nil, fail(404, "not found")
}
