package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"gw/admin/gateway"
	"gw/admin/store"
	"gw/edge/gateway/router"
)

func parseTTL(ctx *fasthttp.RequestCtx) (time.Duration, error) {
	raw := ctx.QueryArgs().Peek("ttl")
	if raw == nil {
		return 0, nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < 1 {
		return 0, fail(400, "invalid argument ttl: should be an integer of at least 1")
	}
	return time.Duration(n) * time.Second, nil
}

// idOf returns a body's ID field as text; ok is false when it is absent
// (a value of the wrong type is left to the schema).
func idOf(obj map[string]any, field string) (string, bool) {
	switch v := obj[field].(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	}
	return "", false
}

// lastID is the ID as written in the body: the part after a collection
// qualifier ("jack/cred-1" -> "cred-1"; secrets keep "vault/1").
func lastID(c *collection, id string) string {
	if c.name == gateway.Credentials {
		_, cid, _ := strings.Cut(id, "/")
		return cid
	}
	return id
}

var lastGenerated atomic.Int64

// genID returns a new time-ordered numeric ID for POST (unique in this
// process; a collision with another process's ID fails the create-only
// write with 409 and the client retries).
func genID(now time.Time) string {
	n := now.UnixMicro()
	for {
		last := lastGenerated.Load()
		if n <= last {
			n = last + 1
		}
		if lastGenerated.CompareAndSwap(last, n) {
			return strconv.FormatInt(n, 10)
		}
	}
}

func (s *Server) write(rctx *fasthttp.RequestCtx, t *target, method string) (int, any, error) {
	ctx := context.Background()
	ttl, err := parseTTL(rctx)
	if err != nil {
		return 0, nil, err
	}
	body := rctx.PostBody()
	if len(bytes.TrimSpace(body)) == 0 {
		return 0, nil, fail(400, "missing new configuration")
	}
	v, err := decodeJSON(body)
	if err != nil {
		return 0, nil, fail(400, "invalid request body: "+err.Error())
	}
	c := t.c
	idField := "id"
	if c.idField != "" {
		idField = c.idField
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := t.id
	var prev *store.KV
	var obj map[string]any
	if method == "PATCH" {
		cur, err := s.cfg.Store.Get(ctx, s.key(t))
		if errors.Is(err, store.ErrNotFound) {
			return 0, nil, fail(404, "Key not found")
		}
		if err != nil {
			return 0, nil, err
		}
		prev = &cur
		d, err := decodeJSON(cur.Value)
		if err != nil {
			return 0, nil, fmt.Errorf("stored %s is not JSON: %w", c.kind, err)
		}
		obj, _ = d.(map[string]any)
		if obj == nil {
			return 0, nil, fmt.Errorf("stored %s is not a JSON object", c.kind)
		}
		if t.sub != "" {
			if err := patchSub(obj, t.sub, v); err != nil {
				return 0, nil, err
			}
		} else {
			patch, ok := v.(map[string]any)
			if !ok {
				return 0, nil, fail(400, "invalid configuration: the body must be a JSON object")
			}
			if bid, ok := idOf(patch, idField); ok && bid != lastID(c, id) {
				return 0, nil, fail(400, "wrong "+c.kind+" id")
			}
			merge(obj, patch)
		}
	} else {
		var ok bool
		if obj, ok = v.(map[string]any); !ok {
			return 0, nil, fail(400, "invalid configuration: the body must be a JSON object")
		}
		bid, has := idOf(obj, idField)
		switch {
		case method == "POST":
			if has {
				return 0, nil, fail(400, "wrong "+c.kind+" id, do not need it")
			}
			id = genID(s.now())
		case id == "":
			if !has {
				return 0, nil, fail(400, "missing "+c.kind+" id")
			}
			if !validID(bid) {
				return 0, nil, fail(400, "invalid "+c.kind+" id ["+truncate(bid)+"]")
			}
			id = bid
			if t.sub != "" { // a consumer's credential or a secret type
				id = t.sub + "/" + bid
			}
		case has && bid != lastID(c, id):
			return 0, nil, fail(400, "wrong "+c.kind+" id")
		}
		t = &target{c: c, id: id}
		cur, err := s.cfg.Store.Get(ctx, s.key(t))
		switch {
		case err == nil:
			prev = &cur
		case !errors.Is(err, store.ErrNotFound):
			return 0, nil, err
		}
	}
	if _, has := obj[idField]; !has {
		obj[idField] = lastID(c, id)
	}
	now := s.now().Unix()
	obj["create_time"] = json.Number(strconv.FormatInt(now, 10))
	if prev != nil {
		var old struct {
			CreateTime json.Number `json:"create_time"`
		}
		if json.Unmarshal(prev.Value, &old) == nil && old.CreateTime != "" {
			obj["create_time"] = old.CreateTime
		}
	}
	obj["update_time"] = json.Number(strconv.FormatInt(now, 10))

	switch c.name {
	case gateway.PluginMetadata:
		err = s.schemas.validateMetadata(id, obj)
	case gateway.Secrets:
		typ, _, _ := strings.Cut(id, "/")
		err = s.schemas.validate("secrets/"+typ, obj)
	default:
		err = s.schemas.validate(c.schema, obj)
	}
	if err != nil {
		return 0, nil, fail(400, err.Error())
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return 0, nil, fail(400, "invalid configuration: "+err.Error())
	}
	s.cfg.Runner.View(func(st *gateway.State, snap *gateway.Snapshot) { err = s.check(c, id, obj, raw, st, snap) })
	if err != nil {
		return 0, nil, err
	}
	opts := store.PutOptions{TTL: ttl, PrevRev: store.MustNotExist}
	status := 201
	if prev != nil {
		opts.PrevRev = prev.ModRev
		status = 200
	}
	kv, err := s.cfg.Store.Put(ctx, s.key(t), raw, opts)
	if errors.Is(err, store.ErrConflict) {
		return 0, nil, fail(409, "the "+c.kind+" was changed by another writer meanwhile; retry")
	}
	if err != nil {
		return 0, nil, err
	}
	if !s.cfg.Runner.WaitRev(kv.ModRev, s.cfg.ApplyWait) {
		s.cfg.Log.Warn("admin write stored but not yet applied", "key", kv.Key, "revision", kv.ModRev)
	}
	return status, s.shown(c, kv), nil
}

// merge applies a PATCH body: objects merge recursively, null deletes a
// field, anything else (arrays included) replaces.
func merge(dst, patch map[string]any) {
	for k, v := range patch {
		if v == nil {
			delete(dst, k)
			continue
		}
		if pm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, pm)
				continue
			}
		}
		dst[k] = v
	}
}

// patchSub replaces the value at a slash-separated sub_path (e.g.
// upstream/nodes) with v; a null body removes it.
func patchSub(obj map[string]any, sub string, v any) error {
	parts := strings.Split(sub, "/")
	cur := any(obj)
	for i, p := range parts {
		last := i == len(parts)-1
		switch node := cur.(type) {
		case map[string]any:
			if last {
				if v == nil {
					delete(node, p)
				} else {
					node[p] = v
				}
				return nil
			}
			next, ok := node[p]
			if !ok {
				return fail(400, "invalid sub_path ["+sub+"]: "+strconv.Quote(p)+" does not exist")
			}
			cur = next
		case []any:
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > len(node) {
				return fail(400, "invalid sub_path ["+sub+"]: no item "+strconv.Quote(p))
			}
			if last {
				if v == nil {
					return fail(400, "invalid sub_path ["+sub+"]: an array item cannot be removed")
				}
				node[n-1] = v
				return nil
			}
			cur = node[n-1]
		default:
			return fail(400, "invalid sub_path ["+sub+"]: "+strconv.Quote(p)+" is not an object")
		}
	}
	return nil
}

// check runs the rules that need the other resources and the compile.
func (s *Server) check(c *collection, id string, obj map[string]any, raw []byte, st *gateway.State, snap *gateway.Snapshot) error {
	for _, r := range c.refs {
		rid, ok := idOf(obj, r.field)
		if !ok {
			continue
		}
		if st.Get(r.coll, rid) == nil {
			k := strings.ReplaceAll(r.kind, " ", "_")
			return fail(400, "failed to fetch "+r.kind+" info by "+k+" id ["+rid+"], response code: 404")
		}
	}
	plugins, _ := obj["plugins"].(map[string]any)
	if s.cfg.CheckPlugin != nil && len(plugins) > 0 {
		names := make([]string, 0, len(plugins))
		for name := range plugins {
			names = append(names, name)
		}
		sort.Strings(names)
		consumer := c.name == gateway.Consumers || c.name == gateway.Credentials
		for _, name := range names {
			b, err := json.Marshal(plugins[name])
			if err == nil {
				b, err = gateway.ResolveConf(b)
			}
			if err != nil {
				return fail(400, "invalid configuration: plugin "+name+": "+err.Error())
			}
			if err := s.cfg.CheckPlugin(name, b, consumer); err != nil {
				return fail(400, "failed to check the configuration of plugin "+name+" err: "+err.Error())
			}
		}
	}
	switch c.name {
	case gateway.Routes:
		if other := st.ConflictingRoute(id, raw); other != "" {
			return fail(400, "route conflicts with route ["+other+"]: same uri, methods, hosts and priority; give one of them another priority, method set, host or vars")
		}
	case gateway.Consumers, gateway.Credentials:
		user := id
		if c.name == gateway.Credentials {
			user, _, _ = strings.Cut(id, "/")
			if st.Get(gateway.Consumers, user) == nil {
				return fail(400, "failed to fetch consumer info by consumer id ["+user+"], response code: 404")
			}
		}
		for name, conf := range plugins {
			b, _ := json.Marshal(conf)
			if owner := st.AuthOwner(name, gateway.AuthKey(name, b), c.name, id); owner != "" && owner != user {
				return fail(400, "duplicate key found with consumer: "+owner)
			}
		}
	case gateway.GlobalRules:
		for name := range plugins {
			if other := st.GlobalRuleWith(name, id); other != "" {
				return fail(400, "plugin ["+name+"] is already configured in global rule ["+other+"]; one global rule per plugin")
			}
		}
	}
	if snap == nil {
		return nil
	}
	if err := snap.Check(c.name, id, raw); err != nil {
		if c.name == gateway.SSLs {
			return fail(400, err.Error())
		}
		return fail(400, "invalid configuration: "+err.Error())
	}
	if c.name == gateway.Routes {
		// vars is checked with the data plane's own compiler, so a route
		// stored here is one the router can match.
		var r struct {
			Vars json.RawMessage `json:"vars"`
		}
		if json.Unmarshal(raw, &r) == nil && len(r.Vars) > 0 && string(r.Vars) != "null" && string(r.Vars) != "[]" {
			if err := router.CheckVars(r.Vars); err != nil {
				return fail(400, "invalid configuration: vars: "+err.Error())
			}
		}
	}
	return nil
}

func (s *Server) remove(rctx *fasthttp.RequestCtx, t *target) (int, any, error) {
	ctx := context.Background()
	s.mu.Lock()
	defer s.mu.Unlock()
	key := s.key(t)
	if string(rctx.QueryArgs().Peek("force")) != "true" {
		var refs []gateway.Referrer
		s.cfg.Runner.View(func(st *gateway.State, _ *gateway.Snapshot) { refs = st.Referrers(t.c.name, t.id) })
		if len(refs) > 0 {
			kind := collections[refs[0].Coll].kind
			return 0, nil, fail(400, "can not delete this "+t.c.kind+", "+kind+" ["+refs[0].ID+"] is still using it now")
		}
	}
	if _, err := s.cfg.Store.Get(ctx, key); errors.Is(err, store.ErrNotFound) {
		return 0, nil, fail(404, "Key not found")
	} else if err != nil {
		return 0, nil, err
	}
	if t.c.name == gateway.Consumers {
		// A consumer's credentials go with it.
		creds, _, err := s.cfg.Store.List(ctx, key+"/credentials/")
		if err != nil {
			return 0, nil, err
		}
		for _, kv := range creds {
			if err := s.cfg.Store.Delete(ctx, kv.Key, 0); err != nil && !errors.Is(err, store.ErrNotFound) {
				return 0, nil, err
			}
		}
	}
	if err := s.cfg.Store.Delete(ctx, key, 0); errors.Is(err, store.ErrNotFound) {
		return 0, nil, fail(404, "Key not found")
	} else if err != nil {
		return 0, nil, err
	}
	if _, rev, err := s.cfg.Store.List(ctx, key); err == nil {
		s.cfg.Runner.WaitRev(rev, s.cfg.ApplyWait)
	}
	return 200, map[string]string{"deleted": "1", "key": s.cfg.KeyPrefix + key}, nil
}
