package mock

import (
	"bytes"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// Knobs shape one answer. Config.Knobs holds the server defaults; a request overrides them
// with x-mock-<name> headers or a /knobs/<name>=<value>,... path segment. See the package
// documentation for the knob names and their meaning.
type Knobs struct {
	// Chunks is the number of content chunks (streaming) or chunk-sized pieces of the
	// content (buffered). Zero in Config means 5.
	Chunks int
	// ChunkSize is the number of content bytes per chunk. Zero in Config means 8.
	ChunkSize int
	// ChunkDelay is the pause between two content events of a stream.
	ChunkDelay time.Duration
	// FirstTokenDelay is the pause between the stream's response headers and its first event.
	FirstTokenDelay time.Duration
	// Latency is the pause before the response headers, for every kind of answer.
	Latency time.Duration

	// Status, when >= 300, makes the answer an error with this HTTP status.
	Status int
	// ErrorBody replaces the error envelope; "empty" sends an empty body. Without Status
	// it implies status 500.
	ErrorBody string
	// RetryAfter is sent as the Retry-After header of an error answer.
	RetryAfter string

	// Fail cuts the connection after FailAfter content events: the client sees a chunked
	// body without its terminating chunk. On a buffered request the connection is closed
	// before any response byte.
	Fail      bool
	FailAfter int
	// Stall pauses the stream for StallFor after StallAfter content events.
	// Zero StallFor in Config means 30s.
	Stall      bool
	StallAfter int
	StallFor   time.Duration

	// StreamError ends the stream after StreamErrorAfter content events with the wire
	// format's mid-stream error: Chat Completions data: {"error":...}, Anthropic
	// event: error (overloaded_error), Responses error then response.failed. The HTTP
	// status stays 200 and the body ends properly.
	StreamError      bool
	StreamErrorAfter int

	// EmptyStream makes a stream send only its terminator (Chat Completions:
	// data: [DONE]); Anthropic and Responses streams, which have no separate
	// terminator, send no event at all.
	EmptyStream bool
	// NoDone omits the stream's terminator: Chat Completions data: [DONE], Anthropic
	// message_stop, Responses response.completed.
	NoDone bool
	// ModelSuffix is appended to the requested model in answers ("-2024-08-06").
	ModelSuffix string
	// ToolCalls makes the answer that many parallel tool calls. A server default applies
	// only to requests that declare tools; a per-request knob always applies.
	ToolCalls int

	forceToolCalls bool
}

// Defaults for zero Config knobs.
const (
	DefaultChunks    = 5
	DefaultChunkSize = 8
	DefaultStallFor  = 30 * time.Second
)

// Limits that keep a knob typo from exhausting memory.
const (
	maxChunks      = 1 << 20
	maxChunkSize   = 1 << 20
	maxContentSize = 64 << 20
	maxToolCalls   = 128
)

func (k *Knobs) applyDefaults() {
	if k.Chunks == 0 {
		k.Chunks = DefaultChunks
	}
	if k.ChunkSize == 0 {
		k.ChunkSize = DefaultChunkSize
	}
	if k.StallFor == 0 {
		k.StallFor = DefaultStallFor
	}
	k.forceToolCalls = false
}

// errorStatus returns the status of an injected error answer, or 0 for a normal answer.
func (k *Knobs) errorStatus() int {
	if k.Status >= 300 {
		return k.Status
	}
	if k.ErrorBody != "" {
		return fasthttp.StatusInternalServerError
	}
	return 0
}

// knobSpec describes one knob: its snake_case name, the help shown by Main, and how a
// textual value is applied. Headers, path segments and flags all go through set.
type knobSpec struct {
	name   string
	help   string
	isBool bool
	set    func(k *Knobs, v string) error
}

var knobSpecs = []knobSpec{
	{name: "chunks", help: "number of content chunks; buffered content is chunks*chunk_size bytes (default 5)",
		set: func(k *Knobs, v string) error { return setCount(&k.Chunks, v, 0, maxChunks) }},
	{name: "chunk_size", help: "content bytes per chunk (default 8)",
		set: func(k *Knobs, v string) error { return setCount(&k.ChunkSize, v, 1, maxChunkSize) }},
	{name: "chunk_delay", help: "pause between content events of a stream, e.g. 10ms",
		set: func(k *Knobs, v string) error { return setDuration(&k.ChunkDelay, v) }},
	{name: "first_token_delay", help: "pause between a stream's response headers and its first event",
		set: func(k *Knobs, v string) error { return setDuration(&k.FirstTokenDelay, v) }},
	{name: "latency", help: "pause before the response headers of any answer",
		set: func(k *Knobs, v string) error { return setDuration(&k.Latency, v) }},
	{name: "status", help: "answer with this HTTP status (>= 300) and the provider's error envelope",
		set: func(k *Knobs, v string) error { return setCount(&k.Status, v, 0, 599) }},
	{name: "error_body", help: "raw body of the error answer; 'empty' sends no body (implies status 500 without -status)",
		set: func(k *Knobs, v string) error { k.ErrorBody = v; return nil }},
	{name: "retry_after", help: "Retry-After header value sent with the error answer",
		set: func(k *Knobs, v string) error { k.RetryAfter = v; return nil }},
	{name: "fail_after", help: "cut the connection after K content events (no terminating chunk, no [DONE]); buffered: close before answering; -1 disables",
		set: func(k *Knobs, v string) error { return setFault(&k.Fail, &k.FailAfter, v) }},
	{name: "stall_after", help: "pause the stream for stall_for after K content events; -1 disables",
		set: func(k *Knobs, v string) error { return setFault(&k.Stall, &k.StallAfter, v) }},
	{name: "stall_for", help: "length of the stall_after pause (default 30s)",
		set: func(k *Knobs, v string) error { return setDuration(&k.StallFor, v) }},
	{name: "stream_error_after", help: "end the stream after K content events with the format's error event (chat data: {\"error\"}, Anthropic event: error, Responses error + response.failed); -1 disables",
		set: func(k *Knobs, v string) error { return setFault(&k.StreamError, &k.StreamErrorAfter, v) }},
	{name: "empty_stream", help: "stream only the terminator (data: [DONE]); Anthropic and Responses streams send no event", isBool: true,
		set: func(k *Knobs, v string) error { return setBool(&k.EmptyStream, v) }},
	{name: "no_done", help: "omit the stream's terminator (data: [DONE], Anthropic message_stop, Responses response.completed)", isBool: true,
		set: func(k *Knobs, v string) error { return setBool(&k.NoDone, v) }},
	{name: "model_suffix", help: "appended to the requested model in answers, e.g. -2024-08-06",
		set: func(k *Knobs, v string) error { k.ModelSuffix = v; return nil }},
	{name: "tool_calls", help: "answer with N parallel tool calls (server default: only when the request declares tools)",
		set: func(k *Knobs, v string) error {
			k.forceToolCalls = true
			return setCount(&k.ToolCalls, v, 0, maxToolCalls)
		}},
}

var knobIndex = func() map[string]*knobSpec {
	m := make(map[string]*knobSpec, len(knobSpecs))
	for i := range knobSpecs {
		m[knobSpecs[i].name] = &knobSpecs[i]
	}
	return m
}()

// set applies the knob name (snake_case or kebab-case, any letter case) to k.
func (k *Knobs) set(name, value string) error {
	var buf [32]byte
	spec := lookupKnob(normalizeKnobName(buf[:0], name))
	if spec == nil {
		return fmt.Errorf("unknown knob %q", name)
	}
	if err := spec.set(k, value); err != nil {
		return fmt.Errorf("knob `%s`: %w", spec.name, err)
	}
	return nil
}

func lookupKnob(name []byte) *knobSpec {
	return knobIndex[string(name)]
}

// normalizeKnobName lowercases name and turns '-' into '_': X-Mock-Chunk-Size and
// chunk_size name the same knob.
func normalizeKnobName[T ~string | ~[]byte](dst []byte, name T) []byte {
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c == '-':
			c = '_'
		}
		dst = append(dst, c)
	}
	return dst
}

func setCount(dst *int, v string, lo, hi int) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("cannot parse %q as an integer", v)
	}
	if n < lo || n > hi {
		return fmt.Errorf("%d is out of range [%d, %d]", n, lo, hi)
	}
	*dst = n
	return nil
}

func setDuration(dst *time.Duration, v string) error {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("cannot parse %q as a duration (e.g. 10ms)", v)
	}
	if d < 0 {
		return fmt.Errorf("negative duration %q", v)
	}
	*dst = d
	return nil
}

func setBool(dst *bool, v string) error {
	v = strings.TrimSpace(v)
	if v == "" {
		*dst = true
		return nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("cannot parse %q as a bool", v)
	}
	*dst = b
	return nil
}

// setFault parses a fault position: a count K enables the fault, -1 / off / none / false
// disables it.
func setFault(enabled *bool, after *int, v string) error {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "-1", "off", "none", "false":
		*enabled = false
		*after = 0
		return nil
	}
	if err := setCount(after, v, 0, maxChunks); err != nil {
		return err
	}
	*enabled = true
	return nil
}

var (
	strMockHeaderPrefix = []byte("x-mock-")
	strKnobsSegment     = []byte("/knobs/")
)

// requestKnobs resolves the knobs of one request: server defaults, then the
// /knobs/<list>/ path segment, then x-mock-* headers.
func (s *Server) requestKnobs(ctx *fasthttp.RequestCtx, k *Knobs) error {
	*k = s.defaults
	if err := applyPathKnobs(k, ctx.URI().PathOriginal()); err != nil {
		return err
	}
	var buf [64]byte
	for key, val := range ctx.Request.Header.All() {
		if len(key) <= len(strMockHeaderPrefix) || !bytes.EqualFold(key[:len(strMockHeaderPrefix)], strMockHeaderPrefix) {
			continue
		}
		name := normalizeKnobName(buf[:0], key[len(strMockHeaderPrefix):])
		spec := lookupKnob(name)
		if spec == nil {
			return fmt.Errorf("unknown knob header %q", key)
		}
		if err := spec.set(k, string(val)); err != nil {
			return fmt.Errorf("header %q: %w", key, err)
		}
	}
	return nil
}

// applyPathKnobs applies a /knobs/name=value,name=value/ segment of the raw request path.
// Values are percent-decoded, so %2C puts a comma into a value.
func applyPathKnobs(k *Knobs, rawPath []byte) error {
	// Fast path - no knob segment.
	i := bytes.Index(rawPath, strKnobsSegment)
	if i < 0 {
		return nil
	}
	seg := rawPath[i+len(strKnobsSegment):]
	if j := bytes.IndexByte(seg, '/'); j >= 0 {
		seg = seg[:j]
	}
	for len(seg) > 0 {
		item := seg
		if j := bytes.IndexByte(seg, ','); j >= 0 {
			item, seg = seg[:j], seg[j+1:]
		} else {
			seg = nil
		}
		if len(item) == 0 {
			continue
		}
		name, value, _ := strings.Cut(string(item), "=")
		v, err := url.PathUnescape(value)
		if err != nil {
			return fmt.Errorf("path knob %q: %w", item, err)
		}
		if err := k.set(name, v); err != nil {
			return fmt.Errorf("path knob: %w", err)
		}
	}
	return nil
}
