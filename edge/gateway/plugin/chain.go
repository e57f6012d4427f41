package plugin

import (
	"encoding/json"
	"fmt"
	"sort"

	admingw "gw/admin/gateway"
	"gw/edge/gateway/router"
)

// Instance is one compiled plugin in a chain.
type Instance struct {
	Name     string
	Priority int
	Def      *Def
	P        Plugin
}

// Chain is the compiled plugins of one scope (a global rule, a route with
// its service and plugin config merged in, a consumer), sorted by priority,
// with one slice per phase so a request walks only the plugins that take
// part in it.
type Chain struct {
	List                []Instance
	rw, ac, hf, bf, log []Plugin
	// Auth reports whether an auth plugin is in the chain.
	Auth bool
	// Answers reports whether a plugin that answers requests itself is in
	// the chain.
	Answers bool
}

// Compile builds the chain of a plugins object. Disabled plugins
// (`_meta.disable`) are left out; a plugin that is not built, a
// configuration that does not compile or a `_meta` option the data plane
// does not run is an error, so the owner is refused service rather than
// served without it. consumer compiles a consumer's plugins: auth plugin
// entries there are credentials and are skipped.
func Compile(ps admingw.Plugins, env *Env, owner string, consumer bool) (*Chain, error) {
	c := &Chain{}
	names := make([]string, 0, len(ps))
	for n := range ps {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		raw := ps[name]
		var m struct {
			Meta *meta `json:"_meta"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("plugin %s: cannot decode configuration: %w", name, err)
		}
		mt := m.Meta
		if mt != nil && mt.Disable {
			continue
		}
		d := Lookup(name)
		if d == nil {
			return nil, fmt.Errorf("plugin %s is %w in the data plane", name, ErrNotBuilt)
		}
		if consumer && d.Auth {
			continue
		}
		if err := checkMeta(mt); err != nil {
			return nil, fmt.Errorf("plugin %s: %w", name, err)
		}
		p, err := d.New(raw, env, owner)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", name, err)
		}
		if mt != nil && len(mt.Filter) > 0 && string(mt.Filter) != "null" {
			e, err := router.CompileExpr(mt.Filter)
			if err != nil {
				return nil, fmt.Errorf("plugin %s: _meta.filter: %w", name, err)
			}
			p = &filtered{Plugin: p, expr: e}
		}
		in := Instance{Name: name, Priority: d.Priority, Def: d, P: p}
		if mt != nil && mt.Priority != nil {
			in.Priority = *mt.Priority
		}
		c.List = append(c.List, in)
	}
	c.index()
	return c, nil
}

func checkMeta(mt *meta) error {
	if mt == nil {
		return nil
	}
	if len(mt.ErrorResponse) > 0 && string(mt.ErrorResponse) != "null" {
		return fmt.Errorf("_meta.error_response is %w in this build", ErrNotBuilt)
	}
	if mt.PreFunction != "" {
		return fmt.Errorf("_meta.pre_function (Lua) is %w in this build", ErrNotBuilt)
	}
	if len(mt.Filter) > 0 && string(mt.Filter) != "null" {
		if _, err := router.CompileExpr(mt.Filter); err != nil {
			return fmt.Errorf("_meta.filter: %w", err)
		}
	}
	return nil
}

// CheckConfig validates one plugin configuration as written to the admin
// API, before it is stored: the plugin must be built, its `_meta` must be
// one the data plane runs and the plugin's own Check must pass. consumer
// is true for a consumer's or credential's plugins, where an auth plugin's
// entry is a credential (checked by the consumer schema, not here). Errors
// do not carry the plugin name; the caller adds it.
func CheckConfig(name string, raw json.RawMessage, consumer bool) error {
	d := Lookup(name)
	if d == nil {
		return fmt.Errorf("plugin %s is %w in this build", name, ErrNotBuilt)
	}
	if consumer && d.Auth {
		return nil
	}
	var m struct {
		Meta *meta `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("cannot decode configuration: %w", err)
	}
	if m.Meta != nil && m.Meta.Disable {
		// Not run, so nothing of it is ignored (Compile leaves it out).
		return nil
	}
	if err := checkMeta(m.Meta); err != nil {
		return err
	}
	if d.Check != nil {
		return d.Check(raw)
	}
	return nil
}

// Merge returns the chain of a route's plugins with a consumer's: the
// consumer's configuration of a plugin replaces the route's (APISIX's
// merge_consumer_route).
func Merge(route, consumer *Chain) *Chain {
	c := &Chain{List: make([]Instance, 0, len(route.List)+len(consumer.List))}
	c.List = append(c.List, consumer.List...)
	for _, in := range route.List {
		dup := false
		for _, cin := range consumer.List {
			if cin.Name == in.Name {
				dup = true
				break
			}
		}
		if !dup {
			c.List = append(c.List, in)
		}
	}
	c.index()
	return c
}

func (c *Chain) index() {
	sort.SliceStable(c.List, func(i, j int) bool {
		if c.List[i].Priority != c.List[j].Priority {
			return c.List[i].Priority > c.List[j].Priority
		}
		return c.List[i].Name < c.List[j].Name
	})
	c.rw, c.ac, c.hf, c.bf, c.log = nil, nil, nil, nil, nil
	c.Auth, c.Answers = false, false
	for _, in := range c.List {
		ph := in.P.Phases()
		if ph&Rewrite != 0 {
			c.rw = append(c.rw, in.P)
		}
		if ph&Access != 0 {
			c.ac = append(c.ac, in.P)
		}
		if ph&HeaderFilter != 0 {
			c.hf = append(c.hf, in.P)
		}
		if ph&BodyFilter != 0 {
			c.bf = append(c.bf, in.P)
		}
		if ph&Log != 0 {
			c.log = append(c.log, in.P)
		}
		if in.Def.Auth {
			c.Auth = true
		}
		if in.Def.Answers {
			c.Answers = true
		}
	}
}

// Empty reports whether the chain runs nothing.
func (c *Chain) Empty() bool { return c == nil || len(c.List) == 0 }

// RunRewrite runs the rewrite phase; false when a plugin answered.
func (c *Chain) RunRewrite(x *Ctx) bool {
	if c == nil {
		return true
	}
	for _, p := range c.rw {
		if !p.Rewrite(x) {
			return false
		}
	}
	return true
}

// RunAccess runs the access phase; false when a plugin answered.
func (c *Chain) RunAccess(x *Ctx) bool {
	if c == nil {
		return true
	}
	for _, p := range c.ac {
		if !p.Access(x) {
			return false
		}
	}
	return true
}

// RunResponse runs header_filter, body_filter and log.
func (c *Chain) RunHeaderFilter(x *Ctx) {
	if c == nil {
		return
	}
	for _, p := range c.hf {
		p.HeaderFilter(x)
	}
}

// RunBodyFilter runs the body_filter phase over the buffered response.
func (c *Chain) RunBodyFilter(x *Ctx) {
	if c == nil {
		return
	}
	for _, p := range c.bf {
		p.BodyFilter(x)
	}
}

// RunLog runs the log phase.
func (c *Chain) RunLog(x *Ctx) {
	if c == nil {
		return
	}
	for _, p := range c.log {
		p.Log(x)
	}
}

// filtered runs its plugin only on requests matching `_meta.filter`.
type filtered struct {
	Plugin
	expr *router.Expr
}

func (f *filtered) match(x *Ctx) bool {
	ok, buf := f.expr.Eval(x.R, &x.Vars, x.Buf[:0])
	x.Buf = buf[:0]
	return ok
}

func (f *filtered) Rewrite(x *Ctx) bool { return !f.match(x) || f.Plugin.Rewrite(x) }
func (f *filtered) Access(x *Ctx) bool  { return !f.match(x) || f.Plugin.Access(x) }
func (f *filtered) HeaderFilter(x *Ctx) {
	if f.match(x) {
		f.Plugin.HeaderFilter(x)
	}
}
func (f *filtered) BodyFilter(x *Ctx) {
	if f.match(x) {
		f.Plugin.BodyFilter(x)
	}
}
func (f *filtered) Log(x *Ctx) {
	if f.match(x) {
		f.Plugin.Log(x)
	}
}
