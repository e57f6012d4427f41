package edge

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/embed"
	"gw/edge/guard"
	"gw/edge/vecindex"
	"gw/sse/rawjson"
)

// The semantic router (models[].semantic, docs/ROUTING.md). When a config
// applies, SemanticPreparer embeds every route's examples (cached across
// snapshots by model and text, so a reload embeds only new examples) into
// a vector index; a config whose examples cannot be embedded fails to load
// and the previous snapshot keeps serving. Per request, after the input
// policy (so masked text is what gets embedded), the latest user message
// is embedded and the route with the best example score reaching its
// threshold answers, else `default`; the dispatch then runs on that
// target as on a direct model, with the router's alias in the answer and
// the route's name in x-gw-route.

var headerRoute = []byte("x-gw-route")

// Route header values besides route names.
const (
	routeDefault = "default"              // no route reached its threshold; embedding failed with on_embedding_failure: default
	routeFailure = "on_embedding_failure" // embedding failed; on_embedding_failure: {target}
)

// semRouter is a semantic router compiled with its example vectors.
type semRouter struct {
	embed      *snapshot.Plan // the embedding model
	index      *vecindex.Index
	thresholds []float32
	names      [][]byte         // route names (x-gw-route)
	plans      []*snapshot.Plan // per route, then default, then the failure target: the router's plan dispatching to it
	failMode   string           // "default", "fail" or "target"
	timeout    time.Duration    // embedding_timeout_ms; 0: the embedding model's own timeout
	normalize  bool             // the embedding model does not send unit vectors
}

// SemanticPreparer returns the snapshot.Options.Prepare hook that computes
// the example vectors of every semantic router and semantic guardrail of a
// snapshot. cache keeps vectors across snapshots; nil caches nothing.
func SemanticPreparer(cache *embed.Cache) func(*snapshot.Snapshot) error {
	if cache == nil {
		cache = embed.NewCache()
	}
	return func(s *snapshot.Snapshot) error {
		sess := cache.Session()
		ctx := context.Background()
		for _, p := range s.PlanList {
			if p.Kind != resources.KindSemantic {
				continue
			}
			r, err := compileRouter(ctx, s, p, sess)
			if err != nil {
				return errors.New("models[" + strconv.Itoa(p.Model.Index) + "] (display_name=" + p.Alias + "): cannot embed the semantic route examples: " + err.Error())
			}
			p.Semantic, p.Servable = r, true
		}
		if err := prepareGuards(ctx, s, sess); err != nil {
			return err
		}
		cache.Commit(sess)
		return nil
	}
}

// prepareGuards computes the example vectors of every checker of the
// snapshot's guardrail chains that needs them (embed.Preparer), once each.
func prepareGuards(ctx context.Context, s *snapshot.Snapshot, sess *embed.Session) error {
	done := map[guard.Checker]bool{}
	visit := func(v any) error {
		ch := guard.Of(v)
		if ch == nil {
			return nil
		}
		for _, list := range [2][]*guard.Stage{ch.Input, ch.Output} {
			for _, st := range list {
				pr, ok := st.Checker.(embed.Preparer)
				if !ok || done[st.Checker] {
					continue
				}
				done[st.Checker] = true
				if err := pr.Prepare(ctx, s, sess); err != nil {
					return errors.New("guardrails[" + strconv.Itoa(st.G.Index) + "] (name=" + st.G.Name + "): " + err.Error())
				}
			}
		}
		return nil
	}
	for _, p := range s.PlanList {
		if err := visit(p.Guard); err != nil {
			return err
		}
	}
	for _, c := range s.CallersByName {
		if err := visit(c.Guard); err != nil {
			return err
		}
		if err := visit(c.TeamGuard); err != nil {
			return err
		}
	}
	return nil
}

func compileRouter(ctx context.Context, s *snapshot.Snapshot, p *snapshot.Plan, sess *embed.Session) (*semRouter, error) {
	sem := p.Model.Semantic
	ep := s.Plans[sem.EmbeddingModel.DisplayName]
	if ep == nil {
		return nil, errors.New("BUG: the embedding model has no plan")
	}
	var texts []string
	var groups []int
	for i, rt := range sem.Routes {
		for _, ex := range rt.Examples {
			texts = append(texts, ex)
			groups = append(groups, i)
		}
	}
	// embedding_timeout_ms bounds the request path; a load waits for the
	// embedding model's own timeout.
	vecs, err := sess.Vectors(ctx, ep, texts, 0)
	if err != nil {
		return nil, err
	}
	b := vecindex.NewBuilder(int(ep.Model.Embedding.Dimensions), len(sem.Routes))
	for i, v := range vecs {
		if err := b.Add(groups[i], v); err != nil {
			return nil, errors.New("route " + sem.Routes[groups[i]].Name + ": " + err.Error())
		}
	}
	r := &semRouter{embed: ep, index: b.Build(), failMode: sem.OnEmbeddingFailure,
		timeout: time.Duration(sem.EmbeddingTimeoutMS) * time.Millisecond, normalize: !ep.Model.Embedding.Normalize}
	for _, rt := range sem.Routes {
		r.thresholds = append(r.thresholds, float32(rt.Threshold))
		r.names = append(r.names, []byte(rt.Name))
	}
	for i := range p.Routes {
		d := *p // the router's alias, limits and guardrails; one target
		d.Attempts = p.Routes[i : i+1 : i+1]
		d.MaxFallbacks = 0
		d.Endpoints = p.Routes[i].Plan.Endpoints
		r.plans = append(r.plans, &d)
	}
	return r, nil
}

// semanticRoute is the semantic router's step before dispatch: it picks
// the route and makes c.plan the router's plan dispatching to it. It
// answers (503) and returns false only with on_embedding_failure: fail.
func (p *Proxy) semanticRoute(ctx *fasthttp.RequestCtx, c *call) bool {
	r, _ := c.plan.Semantic.(*semRouter)
	if r == nil {
		c.surf.writeError(ctx, fasthttp.StatusNotImplemented, "invalid_request_error", "not_implemented",
			"semantic models are not served by this build")
		return false
	}
	i, name, ok := p.pickRoute(c, r)
	if !ok {
		c.errClass = "embedding_failed"
		c.surf.writeError(ctx, fasthttp.StatusServiceUnavailable, "server_error", "embedding_failed",
			"The semantic router of model `"+c.plan.Alias+"` could not embed the request, and its on_embedding_failure is fail.")
		return false
	}
	c.plan = r.plans[i]
	ctx.Response.Header.SetBytesKV(headerRoute, name)
	return true
}

var (
	nameDefault = []byte(routeDefault)
	nameFailure = []byte(routeFailure)
)

// pickRoute returns the index into r.plans and the x-gw-route value; false
// when the embedding failed and the router fails the request.
func (p *Proxy) pickRoute(c *call, r *semRouter) (int, []byte, bool) {
	def := len(r.names)
	text := LatestUserText(c.semText[:0], c.body)
	c.semText = text
	if len(text) == 0 {
		return def, nameDefault, true // nothing to compare: no route can match
	}
	res := embed.AcquireResult()
	defer embed.ReleaseResult(res)
	ectx := context.Background()
	if r.timeout > 0 {
		var cancel context.CancelFunc
		ectx, cancel = context.WithTimeout(ectx, r.timeout)
		defer cancel()
	}
	c.semBatch[0] = text
	err := embed.Embed(ectx, r.embed, c.semBatch[:], r.timeout, res)
	c.semBatch[0] = nil
	if err == nil && r.normalize && !vecindex.Normalize(res.Vec(0)) {
		err = errors.New("embed: a zero vector")
	}
	if err != nil {
		if p.Logger != nil {
			p.Logger.Warn("semantic router cannot embed the request", "model", c.plan.Alias,
				"embedding_model", r.embed.Alias, "on_embedding_failure", r.failMode, "error", err.Error())
		}
		switch r.failMode {
		case "fail":
			return 0, nil, false
		case "target":
			return def + 1, nameFailure, true
		}
		return def, nameDefault, true
	}
	g, _ := r.index.Pick(res.Vec(0), r.thresholds)
	if g < 0 {
		return def, nameDefault, true
	}
	return g, r.names[g], true
}

// LatestUserText appends the text of the last user message of a chat body
// to dst: a string content, or its text parts joined by newlines.
func LatestUserText(dst, body []byte) []byte {
	msgs, kind, ok := rawjson.Get(body, "messages")
	if !ok || kind != rawjson.Array {
		return dst
	}
	var last []byte
	_ = rawjson.ForEachElem(msgs, func(_ int, m []byte, k rawjson.Kind) bool {
		if k == rawjson.Object {
			if role, _, ok := rawjson.Get(m, "role"); ok && rawjson.StringEquals(role, "user") {
				last = m
			}
		}
		return true
	})
	if last == nil {
		return dst
	}
	content, ck, ok := rawjson.Get(last, "content")
	if !ok {
		return dst
	}
	switch ck {
	case rawjson.String:
		out, err := rawjson.AppendUnquote(dst, content)
		if err != nil {
			return dst
		}
		return out
	case rawjson.Array:
		n := len(dst)
		_ = rawjson.ForEachElem(content, func(_ int, part []byte, k rawjson.Kind) bool {
			if k != rawjson.Object {
				return true
			}
			if t, _, ok := rawjson.Get(part, "type"); !ok || !rawjson.StringEquals(t, "text") {
				return true
			}
			if txt, tk, ok := rawjson.Get(part, "text"); ok && tk == rawjson.String {
				if len(dst) > n {
					dst = append(dst, '\n')
				}
				if out, err := rawjson.AppendUnquote(dst, txt); err == nil {
					dst = out
				}
			}
			return true
		})
	}
	return dst
}
