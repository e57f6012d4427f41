package load

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"gw/sse/rawjson"
)

// Defaults applied by Run to zero Config fields.
const (
	DefaultDuration          = 10 * time.Second
	DefaultTimeout           = 60 * time.Second
	DefaultClosedConnections = 64
	DefaultOpenConnections   = 10_000
	DefaultLateThreshold     = time.Millisecond
	// DefaultModel is the model of the built-in chat and Responses bodies.
	DefaultModel = "gpt-4o"
	// DefaultMessagesModel is the model of the built-in Anthropic Messages body.
	DefaultMessagesModel = "claude-sonnet-4-5"
	// AnthropicVersion is the anthropic-version header of FormatMessages requests.
	AnthropicVersion = "2023-06-01"
)

// Format is the wire format of a run: the endpoint requests go to, how the API key is
// sent, the built-in body, and which stream events carry content and end the stream.
type Format string

// Formats of a run, as Config.Format and Result.Config.Format name them.
const (
	// FormatChat is OpenAI Chat Completions: POST <Target>/chat/completions with
	// "Authorization: Bearer <APIKey>". Stream content: a chat.completion.chunk with a
	// non-empty choices[].delta.content; end: data: [DONE].
	FormatChat Format = "chat"
	// FormatMessages is Anthropic Messages: POST <Target>/messages with
	// "x-api-key: <APIKey>" and "anthropic-version: 2023-06-01". Stream content: a
	// content_block_delta event with a non-empty delta.text; end: message_stop.
	FormatMessages Format = "messages"
	// FormatResponses is OpenAI Responses: POST <Target>/responses with
	// "Authorization: Bearer <APIKey>". Stream content: a response.output_text.delta
	// event with a non-empty delta; end: response.completed.
	FormatResponses Format = "responses"
)

// Formats lists the formats Config.Format accepts.
var Formats = []Format{FormatChat, FormatMessages, FormatResponses}

// formatSpec is what a run needs to know about its Format.
type formatSpec struct {
	path       string // appended to a base URL
	body       []byte // built-in body
	model      string // model of the built-in body
	terminator string // the stream's end event, as the markdown names it
	classify   func(data []byte) eventKind
}

var formatSpecs = map[Format]*formatSpec{
	FormatChat:      {path: "/chat/completions", body: DefaultBody, model: DefaultModel, terminator: "[DONE]", classify: classifyChat},
	FormatMessages:  {path: "/messages", body: DefaultMessagesBody, model: DefaultMessagesModel, terminator: "message_stop", classify: classifyMessages},
	FormatResponses: {path: "/responses", body: DefaultResponsesBody, model: DefaultModel, terminator: "response.completed", classify: classifyResponses},
}

// spec returns the spec of f; the empty Format is FormatChat. Nil for an unknown format.
func (f Format) spec() *formatSpec {
	if f == "" {
		f = FormatChat
	}
	return formatSpecs[f]
}

// MaxLatency is the largest value the histograms hold (1 µs to 60 s at 3 significant
// digits); longer values are recorded as MaxLatency.
const MaxLatency = 60 * time.Second

// Config describes one load run. The zero value of every field but Target has a default.
type Config struct {
	// Target is a base URL such as http://127.0.0.1:8080/v1; requests go to Target +
	// "/chat/completions", "/messages" or "/responses" by Format. A Target that already
	// ends in that path is used as is.
	Target string
	// Format is the wire format: FormatChat (the default when empty), FormatMessages or
	// FormatResponses.
	Format Format
	// APIKey, when set, is sent as "Authorization: Bearer <APIKey>", or for FormatMessages
	// as "x-api-key: <APIKey>".
	APIKey string
	// Model replaces the body's "model". Empty keeps the body's model (the built-in bodies:
	// DefaultModel, or DefaultMessagesModel for FormatMessages).
	Model string
	// Body is the JSON object sent as the request body. Nil means the format's built-in
	// ~1 KB request (DefaultBody, DefaultMessagesBody, DefaultResponsesBody). Its "stream"
	// member is set to match Stream.
	Body []byte
	// Headers are extra request headers, e.g. {"x-mock-chunks", "200"}, sent in order.
	Headers []Header

	// Rate > 0 selects open loop at Rate requests per second; 0 selects closed loop.
	Rate float64
	// Connections is the number of concurrent requests (and HTTP connections): in closed
	// loop the number of workers, DefaultClosedConnections when 0; in open loop the cap of
	// the on-demand worker pool, DefaultOpenConnections when 0.
	Connections int
	// Duration is the measured part of the run; DefaultDuration when 0.
	Duration time.Duration
	// Warmup runs the same load before Duration without recording it.
	Warmup time.Duration
	// Timeout bounds one request, stream included; DefaultTimeout when 0. At most MaxLatency.
	Timeout time.Duration
	// Stream sends "stream":true and reads the answer as SSE.
	Stream bool
	// LateThreshold is how far past its due time an open-loop request may go out before it
	// counts as a late send; DefaultLateThreshold when 0.
	LateThreshold time.Duration
	// Insecure skips TLS certificate verification for https targets.
	Insecure bool
}

// Header is one extra request header.
type Header struct {
	Name, Value string
}

// Mode names the scheduling discipline of a run.
type Mode string

// Modes of a run, as they appear in Result.Mode.
const (
	OpenLoop   Mode = "open-loop"
	ClosedLoop Mode = "closed-loop"
)

// Mode reports the mode cfg selects.
func (cfg *Config) Mode() Mode {
	if cfg.Rate > 0 {
		return OpenLoop
	}
	return ClosedLoop
}

// withDefaults returns cfg with its zero fields defaulted, or the first invalid field.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Rate < 0 {
		return cfg, fmt.Errorf("`rate`: must be >= 0, got %g", cfg.Rate)
	}
	if cfg.Connections < 0 {
		return cfg, fmt.Errorf("`connections`: must be >= 0, got %d", cfg.Connections)
	}
	if cfg.Format == "" {
		cfg.Format = FormatChat
	}
	if cfg.Format.spec() == nil {
		return cfg, fmt.Errorf("`format`: must be chat, messages or responses, got %q", cfg.Format)
	}
	if cfg.Duration < 0 || cfg.Warmup < 0 || cfg.Timeout < 0 || cfg.LateThreshold < 0 {
		return cfg, errors.New("`duration`, `warmup`, `timeout` and `late_threshold` must be >= 0")
	}
	if cfg.Duration == 0 {
		cfg.Duration = DefaultDuration
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Timeout > MaxLatency {
		return cfg, fmt.Errorf("`timeout`: must be <= %s, got %s", MaxLatency, cfg.Timeout)
	}
	if cfg.LateThreshold == 0 {
		cfg.LateThreshold = DefaultLateThreshold
	}
	if cfg.Connections == 0 {
		cfg.Connections = DefaultClosedConnections
		if cfg.Mode() == OpenLoop {
			cfg.Connections = DefaultOpenConnections
		}
	}
	for i, h := range cfg.Headers {
		if h.Name == "" || strings.ContainsAny(h.Name, ": \t\r\n") || strings.ContainsAny(h.Value, "\r\n") {
			return cfg, fmt.Errorf("`headers` #%d %q: invalid header", i, h.Name)
		}
	}
	return cfg, nil
}

// target is a parsed Config.Target.
type target struct {
	addr  string // host:port for HostClient.Addr
	host  string // Host header
	isTLS bool
	uri   string // full request URI
}

// parseTarget parses a Target whose requests go to path (appended to a base URL).
func parseTarget(s, path string) (target, error) {
	if s == "" {
		return target{}, errors.New("`target`: missing")
	}
	u, err := url.Parse(s)
	if err != nil {
		return target{}, fmt.Errorf("`target` %q: %w", s, err)
	}
	var t target
	switch u.Scheme {
	case "http":
	case "https":
		t.isTLS = true
	default:
		return target{}, fmt.Errorf("`target` %q: scheme must be http or https", s)
	}
	if u.Host == "" {
		return target{}, fmt.Errorf("`target` %q: missing host", s)
	}
	t.host = u.Host
	t.addr = u.Host
	if u.Port() == "" {
		port := "80"
		if t.isTLS {
			port = "443"
		}
		t.addr = net.JoinHostPort(u.Hostname(), port)
	}
	if !strings.HasSuffix(u.Path, path) {
		u.Path = strings.TrimRight(u.Path, "/") + path
		u.RawPath = ""
	}
	t.uri = u.String()
	return t, nil
}

// newClient returns the HostClient for t. One connection per concurrent request: HTTP/1.1
// has no multiplexing, so MaxConns is the worker cap.
func newClient(cfg *Config, t target, dial fasthttp.DialFunc) *fasthttp.HostClient {
	hc := &fasthttp.HostClient{
		Addr:               t.addr,
		Name:               "gwload",
		IsTLS:              t.isTLS,
		Dial:               eofDial(dial),
		MaxConns:           cfg.Connections,
		MaxConnWaitTimeout: cfg.Timeout,
		// LIFO: FIFO shifts the whole idle slice on every acquire, which is O(conns).
		ConnPoolStrategy:       fasthttp.LIFO,
		StreamResponseBody:     cfg.Stream,
		DisablePathNormalizing: true,
		// A load generator never retries: a retried request would hide an error and
		// count twice in the latency.
		RetryIfErr: func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
	}
	if t.isTLS && cfg.Insecure {
		hc.TLSConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // asked for with --insecure
	}
	return hc
}

// newRequestTemplate builds the request every worker copies once.
func newRequestTemplate(cfg *Config, t target) (*fasthttp.Request, error) {
	spec := cfg.Format.spec()
	body, err := prepareBody(cfg.Body, spec, cfg.Model, cfg.Stream)
	if err != nil {
		return nil, err
	}
	req := &fasthttp.Request{}
	req.SetRequestURI(t.uri)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetHost(t.host)
	req.Header.SetContentType("application/json")
	if cfg.Stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if cfg.Format == FormatMessages {
		// Headers named in cfg.Headers replace these two.
		if cfg.APIKey != "" && !hasHeader(cfg.Headers, "x-api-key") {
			req.Header.Set("x-api-key", cfg.APIKey)
		}
		if !hasHeader(cfg.Headers, "anthropic-version") {
			req.Header.Set("anthropic-version", AnthropicVersion)
		}
	} else if cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	for _, h := range cfg.Headers {
		req.Header.Add(h.Name, h.Value)
	}
	req.SetBody(body)
	return req, nil
}

func hasHeader(hs []Header, name string) bool {
	for _, h := range hs {
		if strings.EqualFold(h.Name, name) {
			return true
		}
	}
	return false
}

// prepareBody returns body (or the built-in body of spec) with its model and stream
// members set: model to model when not empty, stream to true for streams. A buffered run
// turns an existing "stream":true off and drops stream_options, which OpenAI rejects
// without stream.
func prepareBody(body []byte, spec *formatSpec, model string, stream bool) ([]byte, error) {
	if body == nil {
		body = spec.body
		if model == "" {
			model = spec.model
		}
	}
	if !rawjson.Valid(body) || rawjson.KindOf(trimSpace(body)) != rawjson.Object {
		return nil, errors.New("`body`: must be a valid JSON object")
	}
	var err error
	out := append([]byte(nil), body...)
	if model != "" {
		if out, err = rawjson.SetString(nil, out, "model", model); err != nil {
			return nil, fmt.Errorf("cannot set `model` in the body: %w", err)
		}
	}
	if stream {
		out, err = rawjson.Set(nil, out, "stream", strTrue)
	} else if _, _, ok := rawjson.Get(out, "stream"); ok {
		if out, err = rawjson.Set(nil, out, "stream", strFalse); err == nil {
			out, err = rawjson.Delete(nil, out, "stream_options")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot set `stream` in the body: %w", err)
	}
	return out, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}
