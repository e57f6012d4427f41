// Package aiproxymulti is the ai-proxy-multi plugin: a route's chat
// requests (OpenAI chat-completions bodies, buffered or streamed) go to one
// of its `instances`, picked by the AI gateway's balancer (smooth weighted
// round robin within the highest `priority` tier that has an instance left)
// and built by the AI gateway's openai adapter. Every provider APISIX names
// is reached on its OpenAI-compatible chat endpoint (Anthropic's and
// Gemini's compatibility endpoints included), so one adapter serves them
// all; `override.endpoint` replaces the provider's URL.
//
// An instance that fails to connect, or answers one of
// `fallback_http_statuses` (plus 429 or 5xx under `fallback_strategy`
// http_429 / http_5xx), is skipped and the next one is tried; the last
// instance's answer is relayed whatever its status. Options the plugin
// does not run (health checks, chash or semantic balancing, keepalive
// tuning, logging) are refused when the configuration compiles, so the
// admin API answers 400 rather than store a configuration served without
// them.
package aiproxymulti

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/headers"
	"gw/adapters/openai"
	"gw/adapters/upstream"
	"gw/balancer"
	"gw/edge/gateway/plugin"
	"gw/edge/usage"
	"gw/sse/rawjson"
)

// Name and Priority are APISIX's.
const (
	Name     = "ai-proxy-multi"
	Priority = 1041
)

func init() {
	plugin.Register(&plugin.Def{Name: Name, Priority: Priority, Answers: true, New: New, Check: Check})
}

// providers maps each APISIX provider to its OpenAI-compatible base URL
// ("" requires override.endpoint) and the path prefix an endpoint without a
// path gets.
var providers = map[string]struct{ base, prefix string }{
	"openai":            {"https://api.openai.com/v1", "/v1"},
	"deepseek":          {"https://api.deepseek.com", ""},
	"aimlapi":           {"https://api.aimlapi.com/v1", "/v1"},
	"anthropic":         {"https://api.anthropic.com/v1", "/v1"},
	"openrouter":        {"https://openrouter.ai/api/v1", "/api/v1"},
	"gemini":            {"https://generativelanguage.googleapis.com/v1beta/openai", "/v1beta/openai"},
	"vertex-ai":         {"", "/v1"},
	"azure-openai":      {"", "/v1"},
	"openai-compatible": {"", "/v1"},
}

type instanceConf struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	Weight   int64  `json:"weight"`
	Priority int64  `json:"priority"`
	Auth     struct {
		Header map[string]string `json:"header"`
		Query  map[string]string `json:"query"`
	} `json:"auth"`
	Options  map[string]json.RawMessage `json:"options"`
	Override struct {
		Endpoint string `json:"endpoint"`
	} `json:"override"`
	Checks json.RawMessage `json:"checks"`
}

type conf struct {
	Instances []instanceConf `json:"instances"`
	Balancer  *struct {
		Algorithm string `json:"algorithm"`
		HashOn    string `json:"hash_on"`
		Key       string `json:"key"`
	} `json:"balancer"`
	SemanticOpts         json.RawMessage `json:"semantic_opts"`
	FallbackStrategy     string          `json:"fallback_strategy"`
	FallbackHTTPStatuses []int           `json:"fallback_http_statuses"`
	Timeout              *int64          `json:"timeout"` // milliseconds
	Keepalive            *bool           `json:"keepalive"`
	KeepaliveTimeout     *int64          `json:"keepalive_timeout"`
	KeepalivePool        *int64          `json:"keepalive_pool"`
	SSLVerify            *bool           `json:"ssl_verify"`
	Logging              *struct {
		Summaries bool `json:"summaries"`
		Payloads  bool `json:"payloads"`
	} `json:"logging"`
	Meta json.RawMessage `json:"_meta"`
}

// instance is one compiled instance.
type instance struct {
	name     string
	provider string // APISIX's provider name, for usage records
	adapter  adapters.Adapter
	client   *upstream.Client
	model    string // options.model; "" keeps the caller's
	// options are the other options, set over the caller's body.
	options []override
	ok      *metrics.Counter
	failed  *metrics.Counter
}

type multi struct {
	plugin.Base
	owner     string
	instances []instance
	group     *balancer.Group
	fallback  balancer.StatusSet
	timeout   time.Duration
	log       interface {
		Warn(msg string, args ...any)
	}
	// usage receives one record per attempt (nil: none), as the AI path
	// writes them.
	usage *usage.Pipeline
}

var (
	bodyNotJSON     = plugin.ErrorBody("request body must be a JSON object")
	bodyFoldedNames = plugin.ErrorBody("request body names one member twice, differing only in case")
	bodyNoModel     = plugin.ErrorBody("request body has no model and the instance sets no options.model")
	body502         = []byte(`{"error_msg":"502 Bad Gateway"}`)
	body504         = []byte(`{"error_msg":"504 Gateway Timeout"}`)
)

func notBuilt(field, what string) error {
	return fmt.Errorf("%s: %s is %w in this build", field, what, plugin.ErrNotBuilt)
}

// Decode checks a configuration as the plugin reads it: unknown fields,
// duplicate instance names and options the plugin does not run are errors
// naming the field.
func Decode(raw json.RawMessage) (*conf, error) {
	var c conf
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("cannot decode: %w", err)
	}
	if len(c.Instances) == 0 {
		return nil, errors.New("instances: at least one instance is required")
	}
	seen := map[string]bool{}
	var dups []string
	for i, in := range c.Instances {
		f := fmt.Sprintf("instances[%d]", i)
		if in.Name == "" {
			return nil, errors.New(f + ".name: required")
		}
		if seen[in.Name] {
			dups = append(dups, in.Name)
		}
		seen[in.Name] = true
		pv, ok := providers[in.Provider]
		if !ok {
			return nil, fmt.Errorf("%s.provider: unknown provider %q", f, in.Provider)
		}
		if pv.base == "" && in.Override.Endpoint == "" {
			return nil, fmt.Errorf("%s.override.endpoint: required for provider %s", f, in.Provider)
		}
		if in.Weight < 0 {
			return nil, fmt.Errorf("%s.weight: must be >= 0", f)
		}
		if len(in.Checks) > 0 && string(in.Checks) != "null" {
			return nil, notBuilt(f+".checks", "active health checking of AI instances")
		}
		for k := range in.Options {
			if k == "stream" {
				return nil, notBuilt(f+".options.stream", "forcing stream mode")
			}
		}
	}
	if len(dups) > 0 {
		return nil, fmt.Errorf("instances: duplicate instance name %s", strings.Join(dups, ", "))
	}
	if b := c.Balancer; b != nil {
		switch b.Algorithm {
		case "", "roundrobin":
		case "chash":
			return nil, notBuilt("balancer.algorithm", "chash")
		case "semantic":
			return nil, notBuilt("balancer.algorithm", "semantic balancing")
		default:
			return nil, fmt.Errorf("balancer.algorithm: unknown algorithm %q", b.Algorithm)
		}
		if b.HashOn != "" || b.Key != "" {
			return nil, errors.New("balancer.hash_on, balancer.key: only used by chash")
		}
	}
	if len(c.SemanticOpts) > 0 && string(c.SemanticOpts) != "null" {
		return nil, notBuilt("semantic_opts", "semantic balancing")
	}
	switch c.FallbackStrategy {
	case "", "http_429", "http_5xx":
	case "instance_health_and_rate_limiting":
		return nil, notBuilt("fallback_strategy", "instance_health_and_rate_limiting (no instance health checks or ai-rate-limiting)")
	default:
		return nil, fmt.Errorf("fallback_strategy: unknown strategy %q", c.FallbackStrategy)
	}
	for _, s := range c.FallbackHTTPStatuses {
		if s < 400 || s > 599 {
			return nil, fmt.Errorf("fallback_http_statuses: %d is not a 4xx or 5xx status", s)
		}
	}
	if c.Timeout != nil && *c.Timeout < 1 {
		return nil, errors.New("timeout: must be at least 1 ms")
	}
	if c.Keepalive != nil && !*c.Keepalive {
		return nil, notBuilt("keepalive", "false (connections are always kept alive)")
	}
	if c.KeepaliveTimeout != nil && *c.KeepaliveTimeout != 60000 {
		return nil, notBuilt("keepalive_timeout", "a value other than 60000")
	}
	if c.KeepalivePool != nil && *c.KeepalivePool != 30 {
		return nil, notBuilt("keepalive_pool", "a value other than 30")
	}
	if l := c.Logging; l != nil && (l.Summaries || l.Payloads) {
		return nil, notBuilt("logging", "summaries and payloads logging")
	}
	return &c, nil
}

// Check validates a configuration without connecting anything (the admin
// API's write-time check).
func Check(raw json.RawMessage) error {
	_, err := build(raw, nil, "", true)
	return err
}

// New compiles an ai-proxy-multi configuration.
func New(raw json.RawMessage, env *plugin.Env, owner string) (plugin.Plugin, error) {
	return build(raw, env, owner, false)
}

func build(raw json.RawMessage, env *plugin.Env, owner string, check bool) (*multi, error) {
	c, err := Decode(raw)
	if err != nil {
		return nil, err
	}
	p := &multi{owner: owner, timeout: 30 * time.Second}
	if c.Timeout != nil {
		p.timeout = time.Duration(*c.Timeout) * time.Millisecond
	}
	for _, s := range c.FallbackHTTPStatuses {
		p.fallback.Add(s)
	}
	switch c.FallbackStrategy {
	case "http_429":
		p.fallback.Add(429)
	case "http_5xx":
		for s := 500; s < 600; s++ {
			p.fallback.Add(s)
		}
	}
	verify := c.SSLVerify == nil || *c.SSLVerify
	var pool *upstream.Pool
	if env != nil && env.Shared != nil {
		v, err := env.Shared.GetOrCreate(Name+"/pool", func() (any, error) { return upstream.NewPool(upstream.Options{}), nil })
		if err != nil {
			return nil, err
		}
		pool = v.(*upstream.Pool)
	} else if !check {
		pool = upstream.NewPool(upstream.Options{})
	}
	if env != nil && env.Log != nil {
		p.log = env.Log
	}
	if env != nil && !check {
		p.usage = env.Usage
	}
	targets := make([]balancer.Target, len(c.Instances))
	p.instances = make([]instance, len(c.Instances))
	for i := range c.Instances {
		ic := &c.Instances[i]
		f := fmt.Sprintf("instances[%d]", i)
		base, err := baseURL(ic)
		if err != nil {
			return nil, fmt.Errorf("%s.override.endpoint: %w", f, err)
		}
		k := adapters.KeyConfig{Name: ic.Name, BaseURL: base}
		names := make([]string, 0, len(ic.Auth.Header))
		for n := range ic.Auth.Header {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			ln := strings.ToLower(n)
			if headers.AlwaysDropped(ln) || ln == "content-type" || ln == "content-length" || ln == "accept-encoding" {
				return nil, fmt.Errorf("%s.auth.header: %s cannot be set", f, n)
			}
			if ln == "authorization" {
				// The adapter owns Authorization and sends its credential as
				// a Bearer token.
				v := ic.Auth.Header[n]
				if len(v) < 8 || !strings.EqualFold(v[:7], "bearer ") {
					return nil, notBuilt(f+".auth.header."+n, "a scheme other than Bearer")
				}
				k.Credential = adapters.NewSecret(strings.TrimSpace(v[7:]))
				continue
			}
			k.Headers.DefaultHeaders = append(k.Headers.DefaultHeaders, headers.Template{Name: ln, Parts: []headers.Part{{Literal: ic.Auth.Header[n]}}})
		}
		a, err := openai.New(&k, &openai.Config{Provider: "openai"}, adapters.Options{})
		if err != nil {
			return nil, fmt.Errorf("%s: cannot build the adapter: %w", f, err)
		}
		in := instance{name: ic.Name, provider: ic.Provider, adapter: a}
		if !check {
			if in.client, err = pool.Client(upstream.Target{BaseURL: base, TLS: upstream.TLS{Verify: verify}}); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
		}
		okeys := make([]string, 0, len(ic.Options))
		for k := range ic.Options {
			okeys = append(okeys, k)
		}
		sort.Strings(okeys)
		for _, key := range okeys {
			v := ic.Options[key]
			if key == "model" {
				var m string
				if err := json.Unmarshal(v, &m); err != nil || m == "" {
					return nil, fmt.Errorf("%s.options.model: must be a non-empty string", f)
				}
				in.model = m
				continue
			}
			in.options = append(in.options, override{key: key, value: []byte(v)})
		}
		if check {
			continue
		}
		lbl := `{route="` + owner + `",instance="` + metricSafe(ic.Name) + `"`
		in.ok = metrics.GetOrCreateCounter(`gw_gateway_ai_instance_requests_total` + lbl + `,outcome="answered"}`)
		in.failed = metrics.GetOrCreateCounter(`gw_gateway_ai_instance_requests_total` + lbl + `,outcome="fallback"}`)
		p.instances[i] = in
		targets[i] = balancer.Target{ID: owner + "/" + ic.Name, Weight: ic.Weight, Priority: ic.Priority}
	}
	g, err := balancer.NewGroup(targets, balancer.Options{Strategy: balancer.StrategyRoundRobin})
	if err != nil {
		return nil, err
	}
	p.group = g
	return p, nil
}

// metricSafe drops the bytes a Prometheus label value would need escaped.
func metricSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r == '\n' {
			return '_'
		}
		return r
	}, s)
}

// baseURL is the instance's base URL for the adapter (which appends
// /chat/completions), with auth.query in its query.
func baseURL(ic *instanceConf) (string, error) {
	pv := providers[ic.Provider]
	base := pv.base
	if ep := ic.Override.Endpoint; ep != "" {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", errors.New("must be an absolute http or https URL")
		}
		path := strings.TrimRight(u.Path, "/")
		switch {
		case path == "":
			path = pv.prefix
		case strings.HasSuffix(path, "/chat/completions"):
			path = strings.TrimSuffix(path, "/chat/completions")
		default:
			return "", errors.New("the path must be empty or end with /chat/completions")
		}
		u.Path, u.RawPath = path, ""
		base = u.String()
	}
	if len(ic.Auth.Query) > 0 {
		u, err := url.Parse(base)
		if err != nil {
			return "", err
		}
		q := u.Query()
		for k, v := range ic.Auth.Query {
			q.Set(k, v)
		}
		u.RawQuery = q.Encode()
		base = u.String()
	}
	return base, nil
}

func (p *multi) Phases() plugin.Phase { return plugin.Access }

// Access answers the request from an instance.
func (p *multi) Access(c *plugin.Ctx) bool {
	body := c.R.Request.Body()
	valid, folded := rawjson.ValidNames(body)
	if rawjson.KindOf(body) != rawjson.Object || !valid {
		c.Reply(400, bodyNotJSON)
		return false
	}
	if folded != nil {
		// Two spellings of one name: the instance may read either (the AI
		// surfaces refuse these too, docs/PROXY.md).
		c.Reply(400, bodyFoldedNames)
		return false
	}
	callerModel := ""
	if v, k, ok := rawjson.Get(body, "model"); ok && k == rawjson.String {
		callerModel = string(v[1 : len(v)-1])
	}
	stream := false
	if v, _, ok := rawjson.Get(body, "stream"); ok && string(v) == "true" {
		stream = true
	}
	var rec *record
	if p.usage != nil {
		rec = &record{p: p, start: c.Start, ev: usage.Record{RequestID: usage.NewRequestID(), Model: callerModel,
			InboundProtocol: protocolChat, Operation: operationChat, CacheStatus: usage.CacheNone, Stream: stream,
			RequestBodyBytes: int64(len(body))}}
		if c.Consumer != nil {
			rec.ev.UserName = c.Consumer.Username
		}
	}
	var breq balancer.Request
	var lastErr error
	n := len(p.instances)
	for attempt := 0; attempt < n; attempt++ {
		i := p.group.Pick(&breq)
		if i < 0 {
			break
		}
		breq.Skip = breq.Skip.Add(i)
		in := &p.instances[i]
		last := attempt == n-1
		model := in.model
		if model == "" {
			model = callerModel
		}
		if model == "" {
			c.Reply(400, bodyNoModel)
			return false
		}
		b := body
		if len(in.options) > 0 {
			var err error
			if b, err = applyOptions(body, in.options); err != nil {
				c.Reply(400, bodyNotJSON)
				return false
			}
		}
		req := fasthttp.AcquireRequest()
		resp := fasthttp.AcquireResponse()
		err := in.adapter.BuildChat(req, &adapters.ChatInput{Body: b, UpstreamModel: model, Stream: stream})
		if err != nil {
			fasthttp.ReleaseRequest(req)
			fasthttp.ReleaseResponse(resp)
			c.Reply(400, bodyNotJSON)
			return false
		}
		rec.attempt(in, model)
		upStart := time.Now()
		if !stream {
			err = in.client.Do(req, resp, p.timeout)
			fasthttp.ReleaseRequest(req)
			if err == nil && (last || !p.fallback.Has(resp.StatusCode())) {
				in.ok.Inc()
				copyHead(c.R, resp)
				c.R.Response.SetBody(resp.Body())
				rec.answered(resp, resp.Body(), time.Since(upStart))
				fasthttp.ReleaseResponse(resp)
				c.Upstream = in.name
				return false
			}
			p.failed(in, resp, err)
			rec.failedAttempt(resp, err)
			fasthttp.ReleaseResponse(resp)
			lastErr = err
			continue
		}
		err = in.client.DoStream(req, resp, p.timeout)
		fasthttp.ReleaseRequest(req)
		if err == nil && (last || !p.fallback.Has(resp.StatusCode())) {
			in.ok.Inc()
			copyHead(c.R, resp)
			c.Upstream = in.name
			timeout := p.timeout
			up := time.Since(upStart)
			if resp.BodyStream() == nil || resp.StatusCode() >= 400 {
				// An error answer (or a body read whole) has no stream to
				// follow: recorded as it is.
				rec.answered(resp, resp.Body(), up)
				rec = nil
			}
			c.R.SetBodyStreamWriter(func(w *bufio.Writer) { relay(w, resp, timeout, rec, upStart, up) })
			return false
		}
		p.failed(in, resp, err)
		rec.failedAttempt(resp, err)
		upstream.CloseStream(resp)
		fasthttp.ReleaseResponse(resp)
		lastErr = err
	}
	c.Generated = true
	if lastErr != nil && upstream.IsTimeout(lastErr) {
		fail(c, 504, body504)
		rec.gaveUp(504, "upstream_timeout", "upstream timeout")
		return false
	}
	fail(c, 502, body502)
	if lastErr != nil {
		rec.gaveUp(502, "upstream_failed", upstream.Describe(lastErr))
	} else {
		rec.gaveUp(502, "upstream_failed", "")
	}
	return false
}

// override is one instance option other than model, set over the
// caller's body (APISIX's options replace the caller's fields).
type override struct {
	key   string
	value []byte
}

// applyOptions returns body with each option set at the top level.
func applyOptions(body []byte, opts []override) ([]byte, error) {
	cur := body
	for _, o := range opts {
		next, err := rawjson.Set(make([]byte, 0, len(cur)+len(o.key)+len(o.value)+4), cur, o.key, o.value)
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}

func fail(c *plugin.Ctx, code int, body []byte) {
	c.R.Response.Reset()
	c.R.SetStatusCode(code)
	c.R.SetContentType("application/json")
	c.R.SetBody(body)
}

func (p *multi) failed(in *instance, resp *fasthttp.Response, err error) {
	in.failed.Inc()
	if p.log == nil {
		return
	}
	if err != nil {
		p.log.Warn("ai-proxy-multi instance failed; trying the next", "owner", p.owner, "instance", in.name, "error", upstream.Describe(err))
		return
	}
	p.log.Warn("ai-proxy-multi instance answered a fallback status; trying the next", "owner", p.owner, "instance", in.name, "status", resp.StatusCode())
}

// copyHead copies the upstream status and the headers a client reads
// (content type, request IDs, rate-limit headers); hop-by-hop and length
// headers are the server's own.
func copyHead(ctx *fasthttp.RequestCtx, resp *fasthttp.Response) {
	ctx.Response.Reset()
	ctx.SetStatusCode(resp.StatusCode())
	ctx.Response.Header.SetContentTypeBytes(resp.Header.ContentType())
	for k, v := range resp.Header.All() {
		if keepHeader(k) {
			ctx.Response.Header.AddBytesKV(k, v)
		}
	}
}

func keepHeader(k []byte) bool {
	switch {
	case len(k) > 6 && (k[0]|0x20) == 'x' && k[1] == '-':
		return true
	case string(k) == "Retry-After", string(k) == "Openai-Model", string(k) == "Openai-Processing-Ms":
		return true
	}
	return false
}

// relay copies a streamed upstream body to the caller, flushing after each
// read so SSE events reach the caller as they arrive. timeout bounds each
// wait for the upstream (the gap between reads), not the whole stream.
// rec (nil: no usage records) follows the events for the usage chunk and
// writes the final record when the stream ends.
// upStart is when the request went upstream and upHead how long its
// status and headers took.
func relay(w *bufio.Writer, resp *fasthttp.Response, timeout time.Duration, rec *record, upStart time.Time, upHead time.Duration) {
	status, class := resp.StatusCode(), ""
	var sc usageScanner
	var bytes int64
	var first time.Time
	defer func() {
		upstream.CloseStream(resp)
		fasthttp.ReleaseResponse(resp)
		rec.streamed(status, class, sc.u, sc.ok, bytes, time.Since(upStart), upHead, first)
	}()
	r := resp.BodyStream()
	if r == nil {
		_, _ = w.Write(resp.Body())
		_ = w.Flush()
		return
	}
	var buf [4096]byte
	for {
		upstream.SetReadDeadline(resp, time.Now().Add(timeout))
		n, err := r.Read(buf[:])
		if n > 0 {
			bytes += int64(n)
			if rec != nil {
				sc.feed(buf[:n])
			}
			if _, werr := w.Write(buf[:n]); werr != nil {
				status, class = 499, "client_gone"
				return
			}
			if werr := w.Flush(); werr != nil {
				status, class = 499, "client_gone"
				return
			}
			if first.IsZero() {
				first = time.Now()
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			status, class = 502, "upstream_stream_error"
			return
		}
	}
}
