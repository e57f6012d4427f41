// Package remote is the call layer every remote guardrail kind uses
// (presidio, openai_moderation, lakera, and the cloud kinds): one pooled
// keep-alive client per backend host, the spec's per-call `timeout_ms`, a
// bound on concurrent calls per backend, rune-safe chunking for services
// with a character limit, allocation-free JSON helpers, and errors that
// never carry a credential or the judged text.
//
// # API
//
// A kind's constructor builds one Backend per service base URL and one
// Endpoint per path it calls, once per snapshot:
//
//	b, err := remote.New(remote.Config{Name: "presidio analyzer", BaseURL: o.AnalyzerURL,
//		Timeout: remote.Timeout(g.TimeoutMS)})
//	analyze := b.Endpoint("/analyze")
//
// and per check:
//
//	buf := remote.GetBuffer()           // pooled request/response scratch
//	defer remote.PutBuffer(buf)
//	buf.Req = append(buf.Req[:0], `{"text":`...)
//	buf.Req = remote.AppendString(buf.Req, text)
//	...
//	buf.Resp, err = analyze.Post(ctx, buf.Req, buf.Resp[:0])
//	if err != nil { return err }           // the engine applies fail_open
//	v, kind, err := remote.Get(buf.Resp, "results")   // malformed → *Error
//
// Headers with credentials go in Config.Headers (or per call through
// PostHeaders for signed requests); their values never reach an error.
//
// # Timeouts and concurrency
//
// `timeout_ms` is a limit per backend call (spec "guardrails"): Post
// takes the earlier of now+Config.Timeout and ctx's deadline. A context
// canceled without a deadline stops a call waiting for a slot; a call
// already on the wire runs to its deadline (fasthttp takes no context). A call first
// takes a slot of the backend's semaphore (Config.MaxConcurrent, shared by
// every Backend of the same base URL and limit, across snapshots); the
// wait for a slot counts against the same deadline, so a saturated backend
// fails the call with a timeout rather than queueing without bound. The
// engine does not wrap remote checkers in a whole-check deadline: they
// implement guard.CallDeadlines, so a kind that makes several calls per
// check (presidio, the chunked cloud kinds) gets timeout_ms per call.
//
// # Errors
//
// Every failure is an *Error: the backend's name, the path, a class
// (timeout, transport, status, malformed) and for status errors the HTTP
// status. Never the request or response body (they hold the judged text
// and may echo it), never a header value, never the library's raw error
// text (it may name internals); Error.Unwrap keeps the cause for errors.Is.
package remote

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters/upstream"
)

// Defaults.
const (
	DefaultTimeout          = 5000 * time.Millisecond // spec: guardrail timeout_ms default 5000
	DefaultMaxConcurrent    = 64
	DefaultMaxResponseBytes = 4 << 20
)

// Timeout converts a guardrail's timeout_ms (0: unset) to a per-call timeout.
func Timeout(ms int64) time.Duration {
	if ms <= 0 {
		return DefaultTimeout
	}
	return time.Duration(ms) * time.Millisecond
}

// Header is one request header. Value may be a credential: it is sent and
// never appears in an error.
type Header struct{ Key, Value string }

// Config describes one backend.
type Config struct {
	// Name says what the backend is in errors ("presidio analyzer").
	Name string
	// BaseURL is an absolute http(s) URL; Endpoint paths are appended to
	// it. User-info is rejected (credentials belong in Headers).
	BaseURL string
	// Timeout bounds one call, slot wait included. 0: DefaultTimeout.
	Timeout time.Duration
	// MaxConcurrent bounds the calls in flight to this base URL. 0:
	// DefaultMaxConcurrent.
	MaxConcurrent int
	// Headers are sent on every call (after Content-Type and Accept).
	Headers []Header
}

// Backend is one remote service. Safe for concurrent use; immutable.
type Backend struct {
	name    string
	base    string
	client  *upstream.Client
	sem     chan struct{}
	timeout time.Duration
	headers []Header
}

// pool holds the guard backends' clients for the process: a reload that
// keeps a backend keeps its warm connections.
var pool = upstream.NewPool(upstream.Options{MaxResponseBodySize: DefaultMaxResponseBytes, UserAgent: "gw-guard"})

// sems are the per-base-URL semaphores, shared across snapshots so a
// reload does not double a backend's concurrency.
var (
	semMu sync.Mutex
	sems  = map[string]chan struct{}{}
)

// New checks c and returns its Backend. Errors name the field at fault and
// never the URL's user-info.
func New(c Config) (*Backend, error) {
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("cannot use " + c.Name + " URL: must be an absolute http or https URL")
	}
	if u.User != nil {
		return nil, errors.New("cannot use " + c.Name + " URL: user-info is not accepted; credentials go in their own field")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("cannot use " + c.Name + " URL: a query or fragment is not accepted")
	}
	cl, err := pool.Client(upstream.Target{BaseURL: c.BaseURL, TLS: upstream.TLS{Verify: true}})
	if err != nil {
		return nil, errors.New("cannot use " + c.Name + " URL: " + err.Error())
	}
	b := &Backend{name: c.Name, client: cl, timeout: c.Timeout, headers: c.Headers}
	b.base = u.Scheme + "://" + u.Host + strings.TrimRight(u.EscapedPath(), "/")
	if b.timeout <= 0 {
		b.timeout = DefaultTimeout
	}
	n := c.MaxConcurrent
	if n <= 0 {
		n = DefaultMaxConcurrent
	}
	key := cl.Key() + "|" + strconv.Itoa(n)
	semMu.Lock()
	if b.sem = sems[key]; b.sem == nil {
		b.sem = make(chan struct{}, n)
		sems[key] = b.sem
	}
	semMu.Unlock()
	return b, nil
}

// Name is the backend's name as given in Config.
func (b *Backend) Name() string { return b.name }

// Timeout is the per-call timeout.
func (b *Backend) Timeout() time.Duration { return b.timeout }

// Endpoint is one path of a backend, its URL computed once.
type Endpoint struct {
	b    *Backend
	path string
	url  string
}

// Endpoint returns the endpoint at path ("/analyze"; appended to the base
// URL's path). Call it when the kind compiles, not per check.
func (b *Backend) Endpoint(path string) *Endpoint {
	return &Endpoint{b: b, path: path, url: b.base + path}
}

// URL is the endpoint's full URL (for request signing).
func (e *Endpoint) URL() string { return e.url }

var (
	strContentType = []byte("Content-Type")
	strAccept      = []byte("Accept")
	strJSON        = []byte("application/json")
)

// Post sends body as JSON to the endpoint and appends the answer's body to
// dst. A status other than 2xx is an *Error of class ClassStatus (the body
// is dropped: it may echo the judged text).
func (e *Endpoint) Post(ctx context.Context, body, dst []byte) ([]byte, error) {
	return e.PostHeaders(ctx, body, dst, nil)
}

// PostHeaders is Post with extra headers for this call (a signature).
func (e *Endpoint) PostHeaders(ctx context.Context, body, dst []byte, extra []Header) ([]byte, error) {
	b := e.b
	deadline := time.Now().Add(b.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := b.acquire(ctx, deadline); err != nil {
		if errors.Is(err, context.Canceled) {
			return dst, e.fail(ClassTransport, 0, err)
		}
		return dst, e.fail(ClassTimeout, 0, err)
	}
	defer func() { <-b.sem }()

	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(e.url)
	req.Header.SetMethodBytes(strPOST)
	req.Header.SetBytesKV(strContentType, strJSON)
	req.Header.SetBytesKV(strAccept, strJSON)
	for _, h := range b.headers {
		req.Header.Set(h.Key, h.Value)
	}
	for _, h := range extra {
		req.Header.Set(h.Key, h.Value)
	}
	req.SetBodyRaw(body)
	timeout := time.Until(deadline)
	if timeout <= 0 {
		return dst, e.fail(ClassTimeout, 0, context.DeadlineExceeded)
	}
	if err := b.client.Do(req, resp, timeout); err != nil {
		if upstream.IsTimeout(err) {
			return dst, e.fail(ClassTimeout, 0, err)
		}
		return dst, e.fail(ClassTransport, 0, err)
	}
	if sc := resp.StatusCode(); sc < 200 || sc > 299 {
		return dst, e.fail(ClassStatus, sc, nil)
	}
	return append(dst, resp.Body()...), nil
}

var strPOST = []byte("POST")

// acquire takes a slot, waiting at most until deadline or ctx's end.
func (b *Backend) acquire(ctx context.Context, deadline time.Time) error {
	// Fast path - a free slot.
	select {
	case b.sem <- struct{}{}:
		return nil
	default:
	}
	// Slow path - wait; the wait is part of the call's time.
	d := time.Until(deadline)
	if d <= 0 {
		return errSlotTimeout
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case b.sem <- struct{}{}:
		return nil
	case <-t.C:
		return errSlotTimeout
	case <-ctx.Done():
		return ctx.Err()
	}
}

var errSlotTimeout = errors.New("no free call slot before the deadline")

// Class is the kind of a failed call.
type Class uint8

// Classes.
const (
	ClassTimeout   Class = iota + 1 // deadline passed (slot wait, dial, write or answer)
	ClassTransport                  // the exchange failed without an answer
	ClassStatus                     // the backend answered with a non-2xx status
	ClassMalformed                  // the answer is not the documented shape
)

var classText = [...]string{"", "timeout", "transport", "status", "malformed answer"}

func (c Class) String() string {
	if int(c) < len(classText) {
		return classText[c]
	}
	return "unknown"
}

// Error is a failed call. Its text names the backend, path and class and
// nothing the caller sent.
type Error struct {
	Backend string
	Path    string
	Class   Class
	Status  int    // ClassStatus: the HTTP status
	Detail  string // a fixed phrase (ClassMalformed: what is wrong)
	cause   error
}

func (e *Error) Error() string {
	s := e.Backend + ": cannot call " + e.Path + ": " + e.Class.String()
	switch {
	case e.Class == ClassStatus:
		s += " " + strconv.Itoa(e.Status)
	case e.Detail != "":
		s += ": " + e.Detail
	}
	return s
}

func (e *Error) Unwrap() error { return e.cause }

// Timeout reports whether the call failed on its deadline.
func (e *Error) Timeout() bool { return e.Class == ClassTimeout }

func (e *Endpoint) fail(c Class, status int, cause error) *Error {
	err := &Error{Backend: e.b.name, Path: e.path, Class: c, Status: status, cause: cause}
	switch {
	case cause == nil || c == ClassStatus:
	case cause == errSlotTimeout:
		err.Detail = cause.Error()
	case errors.Is(cause, context.Canceled):
		err.Detail = "the request was canceled"
	default:
		err.Detail = upstream.Describe(cause)
	}
	return err
}

// Malformed returns the error of an answer that is not the documented
// shape; what is a fixed phrase ("results is not an array"), never a
// value from the answer.
func (e *Endpoint) Malformed(what string) error {
	return &Error{Backend: e.b.name, Path: e.path, Class: ClassMalformed, Detail: what}
}
