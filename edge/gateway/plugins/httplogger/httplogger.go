// Package httplogger is the http-logger plugin: in the log phase each
// request becomes one JSON object shaped by `log_format` (the route's, else
// the plugin metadata's, else a default), and a batcher per configuration
// POSTs them to `uri` as a JSON array (or newline-separated) when
// batch_max_size entries are waiting, after inactive_timeout without a new
// entry, or once the oldest is buffer_duration old. At most
// max_pending_entries wait (in the batch and in flight); beyond that
// entries are dropped and counted in gw_gateway_http_logger_dropped_total.
package httplogger

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cespare/xxhash/v2"

	"gw/edge/gateway/plugin"
	"gw/edge/gateway/vars"
)

// Name and Priority are APISIX's.
const (
	Name     = "http-logger"
	Priority = 410
)

func init() {
	plugin.Register(&plugin.Def{Name: Name, Priority: Priority, New: New, Check: Check})
}

type conf struct {
	URI             string                     `json:"uri"`
	AuthHeader      string                     `json:"auth_header"`
	Timeout         int                        `json:"timeout"`
	LogFormat       map[string]json.RawMessage `json:"log_format"`
	IncludeReqBody  bool                       `json:"include_req_body"`
	IncludeRespBody bool                       `json:"include_resp_body"`
	ReqBodyExpr     json.RawMessage            `json:"include_req_body_expr"`
	RespBodyExpr    json.RawMessage            `json:"include_resp_body_expr"`
	ConcatMethod    string                     `json:"concat_method"`
	SSLVerify       bool                       `json:"ssl_verify"`
	Name            string                     `json:"name"`
	BatchMaxSize    int                        `json:"batch_max_size"`
	InactiveTimeout int                        `json:"inactive_timeout"`
	BufferDuration  int                        `json:"buffer_duration"`
	MaxRetryCount   int                        `json:"max_retry_count"`
	RetryDelay      int                        `json:"retry_delay"`
	MaxReqBody      int                        `json:"max_req_body_bytes"`
	MaxRespBody     int                        `json:"max_resp_body_bytes"`
	MaxPending      int                        `json:"max_pending_entries"`
}

// Value kinds beyond the variable templates: what only the log phase
// knows.
const (
	kindTemplate = iota
	kindStatus
	kindRequestTime
	kindUpstreamAddr
	kindRateInfo
	kindBodyBytes
	kindTimeISO
	kindMsec
	kindReqBody
	kindRespBody
)

var specials = map[string]int{
	"status": kindStatus, "request_time": kindRequestTime, "upstream_addr": kindUpstreamAddr,
	"rate_limiting_info": kindRateInfo, "body_bytes_sent": kindBodyBytes, "time_iso8601": kindTimeISO, "msec": kindMsec,
}

type field struct {
	key  []byte // `"name":`
	kind int
	tmpl vars.Template
}

type logger struct {
	plugin.Base
	fields              []field
	maxReqBody, maxResp int
	b                   *batcher
}

// defaultFormat is used when neither the route nor the metadata sets one.
var defaultFormat = map[string]string{
	"client_ip": "$remote_addr", "route_id": "$route_id", "service_id": "$service_id", "consumer": "$consumer_name",
	"method": "$request_method", "uri": "$request_uri", "host": "$host", "status": "$status",
	"latency": "$request_time", "upstream": "$upstream_addr", "start_time": "$msec",
}

func decode(raw json.RawMessage) (conf, error) {
	c := conf{Timeout: 3, ConcatMethod: "json", Name: "http logger", BatchMaxSize: 1000, InactiveTimeout: 5, BufferDuration: 60,
		RetryDelay: 1, MaxReqBody: 524288, MaxRespBody: 524288, MaxPending: 8192}
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("cannot decode: %w", err)
	}
	if len(c.ReqBodyExpr) > 0 || len(c.RespBodyExpr) > 0 {
		return c, fmt.Errorf("include_req_body_expr and include_resp_body_expr are %w in this build", plugin.ErrNotBuilt)
	}
	return c, nil
}

// Check validates a configuration and its own log_format (the admin API's
// write-time check; the metadata's format is checked when it is written).
func Check(raw json.RawMessage) error {
	c, err := decode(raw)
	if err != nil {
		return err
	}
	format := map[string]string{}
	for k, v := range c.LogFormat {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return fmt.Errorf("log_format %q: values must be strings", k)
		}
		format[k] = s
	}
	_, err = compileFormat(format)
	return err
}

// New compiles an http-logger configuration.
func New(raw json.RawMessage, env *plugin.Env, owner string) (plugin.Plugin, error) {
	c, err := decode(raw)
	if err != nil {
		return nil, err
	}
	var md struct {
		LogFormat  map[string]json.RawMessage `json:"log_format"`
		MaxPending int                        `json:"max_pending_entries"`
	}
	if m := env.Metadata(Name); len(m) > 0 {
		if err := json.Unmarshal(m, &md); err != nil {
			return nil, fmt.Errorf("cannot decode plugin metadata: %w", err)
		}
	}
	format := map[string]string{}
	src := c.LogFormat
	if src == nil {
		src = md.LogFormat
	}
	if src == nil {
		format = defaultFormat
	}
	for k, v := range src {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, fmt.Errorf("log_format %q: values must be strings", k)
		}
		format[k] = s
	}
	p := &logger{maxReqBody: c.MaxReqBody, maxResp: c.MaxRespBody}
	if p.fields, err = compileFormat(format); err != nil {
		return nil, err
	}
	if c.IncludeReqBody {
		p.fields = append(p.fields, field{key: []byte(`"request_body":`), kind: kindReqBody})
	}
	if c.IncludeRespBody {
		p.fields = append(p.fields, field{key: []byte(`"response_body":`), kind: kindRespBody})
	}
	maxPending := c.MaxPending
	if md.MaxPending > 0 && !strings.Contains(string(raw), `"max_pending_entries"`) {
		maxPending = md.MaxPending
	}
	key := "http-logger/" + strconv.FormatUint(xxhash.Sum64(raw), 16) + "/" + strconv.Itoa(maxPending)
	b, err := env.Shared.GetOrCreate(key, func() (any, error) { return newBatcher(c, maxPending, env.Log), nil })
	if err != nil {
		return nil, err
	}
	p.b = b.(*batcher)
	return p, nil
}

// CompileFormat compiles a log_format object (exported for the fuzz
// target): each value is a variable template, or one of the log-phase
// variables ($status, $request_time, ...).
func CompileFormat(format map[string]string) error {
	_, err := compileFormat(format)
	return err
}

func compileFormat(format map[string]string) ([]field, error) {
	keys := make([]string, 0, len(format))
	for k := range format {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]field, 0, len(keys))
	for _, k := range keys {
		v := format[k]
		f := field{key: append(plugin.AppendJSONString(nil, []byte(k)), ':')}
		name := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(v, "$"), "{"), "}")
		if kind, ok := specials[name]; ok && strings.HasPrefix(v, "$") && (v == "$"+name || v == "${"+name+"}") {
			f.kind = kind
		} else {
			t, err := vars.CompileTemplate(v)
			if err != nil {
				return nil, fmt.Errorf("log_format %q: %w", k, err)
			}
			f.tmpl = t
		}
		out = append(out, f)
	}
	return out, nil
}

func (p *logger) Phases() plugin.Phase { return plugin.Log }

func (p *logger) Log(c *plugin.Ctx) {
	e := append(c.Buf[:0], '{')
	for i := range p.fields {
		f := &p.fields[i]
		if i > 0 {
			e = append(e, ',')
		}
		e = append(e, f.key...)
		switch f.kind {
		case kindStatus:
			e = strconv.AppendInt(e, int64(c.R.Response.StatusCode()), 10)
		case kindRequestTime:
			e = strconv.AppendFloat(e, time.Since(c.Start).Seconds(), 'f', 3, 64)
		case kindBodyBytes:
			e = strconv.AppendInt(e, int64(len(c.R.Response.Body())), 10)
		case kindMsec:
			e = strconv.AppendInt(e, c.Start.UnixMilli(), 10)
		case kindTimeISO:
			e = append(e, '"')
			e = c.Start.UTC().AppendFormat(e, time.RFC3339)
			e = append(e, '"')
		case kindUpstreamAddr:
			e = plugin.AppendJSONString(e, []byte(c.Upstream))
		case kindRateInfo:
			e = plugin.AppendJSONString(e, c.RateInfo)
		case kindReqBody:
			e = plugin.AppendJSONString(e, head(c.R.Request.Body(), p.maxReqBody))
		case kindRespBody:
			e = plugin.AppendJSONString(e, head(c.R.Response.Body(), p.maxResp))
		default:
			c.Buf2 = f.tmpl.Append(c.Buf2[:0], c.R, &c.Vars)
			e = plugin.AppendJSONString(e, c.Buf2)
		}
	}
	e = append(e, '}')
	p.b.add(e)
	c.Buf = e[:0]
}

func head(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// batcher collects one configuration's entries and sends them.
type batcher struct {
	uri, auth   string
	newline     bool
	batchMax    int
	inactive    time.Duration
	maxAge      time.Duration
	retries     int
	retryDelay  time.Duration
	maxPending  int64
	client      *http.Client
	log         *slog.Logger
	dropped     *metrics.Counter
	pending     atomic.Int64
	mu          sync.Mutex
	buf         []byte
	n           int
	first, last time.Time
	queue       chan batch
	stop        chan struct{}
	done        sync.WaitGroup
	closeOnce   sync.Once
}

type batch struct {
	body []byte
	n    int
}

func newBatcher(c conf, maxPending int, log *slog.Logger) *batcher {
	if log == nil {
		log = slog.Default()
	}
	b := &batcher{uri: c.URI, auth: c.AuthHeader, newline: c.ConcatMethod == "new_line", batchMax: c.BatchMaxSize,
		inactive: time.Duration(c.InactiveTimeout) * time.Second, maxAge: time.Duration(c.BufferDuration) * time.Second,
		retries: c.MaxRetryCount, retryDelay: time.Duration(c.RetryDelay) * time.Second, maxPending: int64(maxPending),
		client: &http.Client{Timeout: time.Duration(c.Timeout) * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: !c.SSLVerify}, // APISIX's ssl_verify (default false)
		}},
		log:     log.With("plugin", Name, "name", c.Name),
		dropped: metrics.GetOrCreateCounter(`gw_gateway_http_logger_dropped_total{name="` + labelSafe(c.Name) + `"}`),
		queue:   make(chan batch, 64), stop: make(chan struct{})}
	b.done.Add(2)
	go b.send()
	go b.tick()
	return b
}

// labelSafe keeps a metric label value to plain characters.
func labelSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r < 0x20 {
			return '_'
		}
		return r
	}, s)
}

func (b *batcher) add(e []byte) {
	if b.pending.Load() >= b.maxPending {
		b.dropped.Inc()
		return
	}
	b.pending.Add(1)
	now := time.Now()
	b.mu.Lock()
	if b.n > 0 {
		if b.newline {
			b.buf = append(b.buf, '\n')
		} else {
			b.buf = append(b.buf, ',')
		}
	} else {
		b.first = now
	}
	b.buf = append(b.buf, e...)
	b.n++
	b.last = now
	if b.n >= b.batchMax {
		b.flushLocked()
	}
	b.mu.Unlock()
}

// flushLocked hands the current batch to the sender; b.mu is held. A full
// queue drops the batch (counted): the request path never waits.
func (b *batcher) flushLocked() {
	if b.n == 0 {
		return
	}
	bt := batch{body: b.buf, n: b.n}
	b.buf, b.n = make([]byte, 0, cap(b.buf)), 0
	select {
	case b.queue <- bt:
	default:
		b.pending.Add(int64(-bt.n))
		b.dropped.Add(bt.n)
	}
}

func (b *batcher) tick() {
	defer b.done.Done()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			b.mu.Lock()
			b.flushLocked()
			b.mu.Unlock()
			close(b.queue)
			return
		case now := <-t.C:
			b.mu.Lock()
			if b.n > 0 && (now.Sub(b.last) >= b.inactive || now.Sub(b.first) >= b.maxAge) {
				b.flushLocked()
			}
			b.mu.Unlock()
		}
	}
}

func (b *batcher) send() {
	defer b.done.Done()
	for bt := range b.queue {
		body := bt.body
		if !b.newline {
			body = make([]byte, 0, len(bt.body)+2)
			body = append(append(append(body, '['), bt.body...), ']')
		}
		var err error
		for a := 0; a <= b.retries; a++ {
			if a > 0 {
				time.Sleep(b.retryDelay)
			}
			if err = b.post(body); err == nil {
				break
			}
		}
		if err != nil {
			b.dropped.Add(bt.n)
			// The receiver's URI may carry a token: it is not logged.
			b.log.Warn("cannot send log batch; entries dropped", "entries", bt.n, "error", err.Error())
		}
		b.pending.Add(int64(-bt.n))
	}
}

func (b *batcher) post(body []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), b.client.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", b.uri, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("cannot build request: invalid uri")
	}
	if b.newline {
		req.Header.Set("Content-Type", "text/plain")
	} else {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.auth != "" {
		req.Header.Set("Authorization", b.auth)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return fmt.Errorf("cannot post: %s", redact(err.Error(), b.uri))
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		return fmt.Errorf("receiver answered %d", resp.StatusCode)
	}
	return nil
}

// redact removes the receiver URI's query string from an error text.
func redact(s, uri string) string {
	if i := strings.IndexByte(uri, '?'); i >= 0 {
		return strings.ReplaceAll(s, uri[i:], "?…")
	}
	return s
}

// Close flushes what is waiting and stops the batcher.
func (b *batcher) Close() {
	b.closeOnce.Do(func() {
		close(b.stop)
		b.done.Wait()
	})
}
