package edge

import (
	"bytes"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/upstream"
	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/guard"
	"gw/edge/usage"
	"gw/sse/rawjson"
)

// /v1/videos: task-style video generation.
//
//   - POST /v1/videos creates a task through the model pipeline (an
//     endpoint surface: auth, limits, guardrails on the prompt, retries on
//     the model's one target). Routing groups are refused with 400: a task
//     lives on the provider that created it.
//   - The task's id as the caller sees it is the upstream's id, a dot, and
//     the derived ID of the direct model that created it ("video_abc.<id>"):
//     GET /v1/videos/{id} (poll), GET /v1/videos/{id}/content (download,
//     streamed through the binary relay) and DELETE /v1/videos/{id} reach
//     that model's provider key, after the caller's key is checked against
//     the model like any request (404 alike for unknown and not granted).
//     Nothing is kept in gw's memory per task, so any replica answers.
//   - GET /v1/videos?model=<alias> lists that model's provider key's tasks
//     (the upstream's list; `after`, `limit`, `order` pass through).
//   - Polls, downloads, lists and deletes write no usage record of their
//     own; the first poll that sees a task `completed` writes the task's
//     record (operation videos.completed) with cost_usd = seconds ×
//     cost.output_per_1k / 1000 (output_per_1k is USD per 1,000 seconds of
//     video on video models).

var pathVideos = "/v1/videos"

var specVideos = endpointSpec{
	keys: []string{"model", "stream", "stream_options", "prompt"},
}

var (
	surfVideos = &surface{
		read:    func(ctx *fasthttp.RequestCtx, c *call) bool { return readEndpoint(ctx, c, &specVideos) },
		guardIn: guard.ImagesRequest, guardNative: guard.TextlessAnswer,
		path: pathVideos, protocol: "videos", operation: "videos.create",
		endpoint: adapters.EndpointVideos, dispatch: (*Proxy).videoCreate,
	}
	// surfVideoTask names the task calls in metrics and the access log.
	surfVideoTask = &surface{path: pathVideos, protocol: "videos", operation: "videos.task", endpoint: adapters.EndpointVideos}
)

// checkVideos: prompt is a non-empty string.
func checkVideos(v [][]byte) (string, string) {
	if rawjson.KindOf(v[0]) != rawjson.String || len(v[0]) < 3 {
		return "invalid_type", "prompt: must be a non-empty string"
	}
	return "", ""
}

// videoCreate runs the creation like any buffered call, then gives the
// task the id that binds it to the model that created it.
func (p *Proxy) videoCreate(ctx *fasthttp.RequestCtx, c *call) {
	p.buffered(ctx, c)
	if ctx.Response.StatusCode() >= 300 || c.target == nil {
		return
	}
	body := ctx.Response.Body() // the model is the alias already (writeBuffered)
	if out, ok := bindVideoID(nil, body, c.target.ID); ok {
		ctx.Response.SetBody(out)
		c.respBytes = len(out)
	}
}

// bindVideoID returns obj with its "id" made "<id>.<modelID>".
func bindVideoID(dst, obj []byte, modelID string) ([]byte, bool) {
	raw, kind, ok := rawjson.Get(obj, "id")
	if !ok || kind != rawjson.String {
		return dst, false
	}
	id, err := rawjson.AppendUnquote(nil, raw)
	if err != nil {
		return dst, false
	}
	out, err := rawjson.SetString(dst, obj, "id", string(id)+"."+modelID)
	return out, err == nil
}

// serveVideoTask serves GET /v1/videos (list), GET and DELETE
// /v1/videos/{id} and GET /v1/videos/{id}/content.
func (p *Proxy) serveVideoTask(ctx *fasthttp.RequestCtx) {
	c := acquireCall()
	c.surf, c.start, c.snap, c.noUsage = surfVideoTask, time.Now(), p.Holder.Load(), true
	p.videoTask(ctx, c)
	if c.committed {
		return // the download belongs to the binary relay now
	}
	p.finish(ctx, c, ctx.Response.StatusCode())
}

func (p *Proxy) videoTask(ctx *fasthttp.RequestCtx, c *call) {
	if !p.authenticate(ctx, c) {
		return
	}
	method, rest := "GET", string(ctx.Path()[len(pathVideos):])
	if ctx.IsDelete() {
		method = "DELETE"
	}
	var id, sub string
	var plan *snapshot.Plan
	var query []byte
	if rest == "" { // the list: the model names the provider key
		alias := ctx.QueryArgs().Peek("model")
		if len(alias) == 0 {
			c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "missing_required_parameter",
				"model: gw lists the video tasks of one model's provider: add ?model=<alias>")
			return
		}
		if plan = c.snap.Plans[string(alias)]; plan == nil || !c.caller.Allowed(plan) {
			modelNotFound(ctx, c.surf.writeError, string(alias))
			return
		}
		ctx.QueryArgs().VisitAll(func(k, v []byte) {
			if string(k) == "model" {
				return
			}
			if len(query) > 0 {
				query = append(query, '&')
			}
			query = append(query, k...)
			query = append(append(query, '='), v...)
		})
	} else {
		seg := rest[1:]
		if i := bytes.IndexByte([]byte(seg), '/'); i >= 0 {
			seg, sub = seg[:i], seg[i:]
		}
		j := bytes.LastIndexByte([]byte(seg), '.')
		if j > 0 {
			id = seg[:j]
			plan = planByID(c.snap, seg[j+1:])
		}
		if plan == nil || !c.caller.Allowed(plan) || (sub != "" && sub != "/content") {
			c.surf.writeError(ctx, fasthttp.StatusNotFound, "invalid_request_error", "video_not_found",
				"No video task with this id exists, or your key may not use it.")
			return
		}
		query = ctx.URI().QueryString()
	}
	if (rest == "" || sub != "") && method != "GET" {
		methodNotAllowed(ctx, "GET")
		return
	}
	c.plan, c.target, c.attempts = plan, plan, 1
	c.ip, c.ipOK = p.RealIP.ClientIP(ctx)
	if !cidrAllowed(plan.AllowedCIDRs, c.ip, c.ipOK) {
		c.surf.writeError(ctx, fasthttp.StatusForbidden, "permission_error", "ip_not_allowed",
			"Requests from this client address are not allowed for model `"+plan.Alias+"`.")
		return
	}
	if plan.Kind == resources.KindRouting || !plan.Endpoints.Has(adapters.EndpointVideos) || plan.Upstream == nil {
		if !p.servesEndpoint(ctx, c) {
			return
		}
	}
	up := plan.Upstream
	c.in.ClientHeaders = &ctx.Request.Header // CallerCredential: authenticate
	c.in.UpstreamModel = plan.UpstreamModel
	fillVars(&c.in.Vars, c.caller.Key, plan.Alias)
	req := fasthttp.AcquireRequest()
	if err := up.Adapter.(adapters.VideosBuilder).BuildVideoTask(req, &c.in, method, id, sub, query); err != nil {
		fasthttp.ReleaseRequest(req)
		c.surf.writeError(ctx, fasthttp.StatusNotImplemented, "invalid_request_error", "not_implemented", "the provider of this model does not serve video tasks")
		return
	}
	resp := fasthttp.AcquireResponse()
	sent := time.Now()
	var err error
	if sub != "" {
		err = up.Client.DoStream(req, resp, plan.StreamTimeout)
	} else {
		err = up.Client.Do(req, resp, plan.Timeout)
	}
	fasthttp.ReleaseRequest(req)
	c.upstreamDur += time.Since(sent)
	if err != nil {
		f := p.transportFailure(c, &snapshot.Target{Plan: plan}, err)
		fasthttp.ReleaseResponse(resp)
		c.errClass = "upstream_failed"
		writeFailure(ctx, c.surf, &f)
		return
	}
	status := resp.StatusCode()
	if status >= 300 {
		var body []byte
		if sub != "" {
			body, _ = readLimited(resp)
			upstream.CloseStream(resp)
		} else {
			body = resp.Body()
		}
		relayError(ctx, c.surf, status, body, resp.Header.ContentType(), appendBackoff(nil, &resp.Header))
		fasthttp.ReleaseResponse(resp)
		c.errClass = "upstream_status"
		return
	}
	c.upTTFT = time.Since(sent)
	if sub != "" {
		p.commitBinary(ctx, c, resp, plan.StreamTimeout) // download: streamed through
		return
	}
	defer fasthttp.ReleaseResponse(resp)
	body := resp.Body()
	var out []byte
	if rest == "" {
		out = bindVideoList(body, plan)
	} else if b, ok := bindVideo(body, plan); ok {
		out = b
		if method == "GET" && rawjson.StringEquals(valueOf(body, "status"), "completed") {
			p.videoCompleted(c, plan, id, body)
		}
	} else {
		out = append(out, body...)
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(out)
	c.ttfb = time.Since(c.start)
}

// bindVideo returns a task object with its id bound (bindVideoID) and the
// alias as its model.
func bindVideo(obj []byte, plan *snapshot.Plan) ([]byte, bool) {
	out, ok := bindVideoID(nil, obj, plan.ID)
	if !ok {
		return nil, false
	}
	if _, _, has := rawjson.Get(out, "model"); has {
		if m, err := rawjson.Set(nil, out, "model", plan.AliasJSON); err == nil {
			out = m
		}
	}
	return out, true
}

// bindVideoList binds every task of a list answer's data.
func bindVideoList(body []byte, plan *snapshot.Plan) []byte {
	data, kind, ok := rawjson.Get(body, "data")
	if !ok || kind != rawjson.Array {
		return append([]byte(nil), body...)
	}
	arr := []byte{'['}
	_ = rawjson.ForEachElem(data, func(i int, v []byte, k rawjson.Kind) bool {
		if i > 0 {
			arr = append(arr, ',')
		}
		if b, ok := bindVideo(v, plan); ok && k == rawjson.Object {
			v = b
		}
		arr = append(arr, v...)
		return true
	})
	arr = append(arr, ']')
	out, err := rawjson.Set(nil, body, "data", arr)
	if err != nil {
		return append([]byte(nil), body...)
	}
	return out
}

func valueOf(body []byte, key string) []byte {
	v, _, _ := rawjson.Get(body, key)
	return v
}

func readLimited(resp *fasthttp.Response) ([]byte, error) {
	b := make([]byte, 0, 512)
	buf := make([]byte, 4096)
	for int64(len(b)) < maxErrorBody {
		n, err := resp.BodyStream().Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			return b, nil
		}
	}
	return b, nil
}

// planByID finds the direct model whose derived ID is id (task ids carry
// it). Task calls are rare: a scan is cheaper than keeping an index.
func planByID(s *snapshot.Snapshot, id string) *snapshot.Plan {
	for _, p := range s.PlanList {
		if p.ID == id && p.Kind == resources.KindDirect {
			return p
		}
	}
	return nil
}

// videosDone remembers the tasks whose completion was recorded, so that
// each completed task writes one record however often it is polled. It is
// bounded (the oldest entries are forgotten first) and per process: a task
// polled through two replicas may be recorded by each.
var videosDone = newDoneSet(4096)

type doneSet struct {
	mu   sync.Mutex
	n    int
	seen map[string]struct{}
	ring []string
	next int
}

// newDoneSet remembers up to n keys. The set is allocated by the first add:
// most gateways never poll a video task, and a map sized for 4096 keys is
// ~280 KB written at init (idle RSS).
func newDoneSet(n int) *doneSet { return &doneSet{n: n} }

// add reports whether key is new, remembering it.
func (d *doneSet) add(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ring == nil {
		d.seen, d.ring = make(map[string]struct{}, d.n), make([]string, d.n)
	}
	if _, ok := d.seen[key]; ok {
		return false
	}
	if old := d.ring[d.next]; old != "" {
		delete(d.seen, old)
	}
	d.ring[d.next], d.seen[key] = key, struct{}{}
	d.next = (d.next + 1) % len(d.ring)
	return true
}

// videoCompleted writes the usage record of a task seen completed for the
// first time: the model, the provider, and the cost of its seconds.
func (p *Proxy) videoCompleted(c *call, plan *snapshot.Plan, id string, body []byte) {
	if p.Usage == nil || !videosDone.add(plan.ID+"/"+id) {
		return
	}
	var seconds float64
	if v := valueOf(body, "seconds"); v != nil {
		if rawjson.KindOf(v) == rawjson.String {
			seconds, _ = strconv.ParseFloat(string(v[1:len(v)-1]), 64)
		} else {
			seconds, _ = rawjson.ParseFloat(v)
		}
	}
	k := c.caller.Key
	e := UsageEvent{
		RequestID: usage.NewRequestID(), OccurredAt: time.Now(),
		APIKeyID: k.ID, APIKeyName: k.DisplayName, TeamID: k.TeamID, UserID: k.UserID, UserName: k.UserName,
		Model: plan.Alias, InboundProtocol: "videos", Operation: "videos.completed",
		CacheStatus: usage.CacheNone, AttemptKind: AttemptFinal, Attempt: 1, StatusCode: fasthttp.StatusOK,
	}
	setTarget(&e, plan)
	if cost := plan.Model.Cost; cost != nil {
		e.CostUSD = seconds * cost.OutputPer1K / 1000
	}
	p.Usage.Emit(&e)
}
