package aiproxymulti

import (
	"bytes"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/openai"
	"gw/adapters/upstream"
	"gw/edge/usage"
)

// The classification of every ai-proxy-multi record: the plugin serves
// OpenAI chat-completions bodies only.
const (
	protocolChat  = "chat_completions"
	operationChat = "chat.completions"
)

// record writes the usage records of one ai-proxy-multi request as the AI
// path does (edge/finish.go): a zero-token failed_attempt record for each
// instance that was skipped, then the final record with the answering
// instance's status, tokens, latencies and sizes. The routing fields name
// the instance: provider (APISIX's provider name), provider key and target
// model (the instance name), upstream model (the model sent). Every method
// is a no-op on a nil record (no usage pipeline).
type record struct {
	p     *multi
	start time.Time
	ev    usage.Record
	n     int // attempts so far
}

// attempt notes that instance in is tried with model.
func (r *record) attempt(in *instance, model string) {
	if r == nil {
		return
	}
	r.n++
	r.ev.Provider, r.ev.ProviderKey, r.ev.TargetModel, r.ev.UpstreamModel = in.provider, in.name, in.name, model
}

// failedAttempt writes the record of an attempt that fell back to the next
// instance: its status, or the connection error.
func (r *record) failedAttempt(resp *fasthttp.Response, err error) {
	if r == nil {
		return
	}
	e := r.ev
	e.OccurredAt, e.Attempt, e.AttemptKind = time.Now(), r.n, usage.AttemptFailed
	e.RequestBodyBytes = 0 // counted once, on the final record
	switch {
	case err != nil && upstream.IsTimeout(err):
		e.StatusCode, e.ErrorClass, e.ErrorMessage = 504, "upstream_timeout", "upstream timeout"
	case err != nil:
		e.StatusCode, e.ErrorClass, e.ErrorMessage = 502, "upstream_failed", upstream.Describe(err)
	default:
		e.StatusCode, e.ErrorClass = resp.StatusCode(), "upstream_status"
	}
	r.p.usage.Emit(&e)
}

// answered writes the final record of an answer read whole.
func (r *record) answered(resp *fasthttp.Response, body []byte, up time.Duration) {
	if r == nil {
		return
	}
	u, ok := openai.ExtractUsage(body)
	class := ""
	if resp.StatusCode() >= 400 {
		class = "upstream_status"
	}
	r.final(resp.StatusCode(), class, u, ok && resp.StatusCode() < 400, int64(len(body)), up, up)
}

// streamed writes the final record of a relayed stream once it ended: up
// is the whole upstream time, upHead its time to status and headers, first
// when the caller got the first bytes (zero: none).
func (r *record) streamed(status int, class string, u adapters.Usage, ok bool, n int64, up, upHead time.Duration, first time.Time) {
	if r == nil {
		return
	}
	if !first.IsZero() {
		r.ev.TTFT = first.Sub(r.start)
	}
	r.final(status, class, u, ok, n, up, upHead)
}

// gaveUp writes the final record of a request no instance answered (the
// gateway's own 502 or 504).
func (r *record) gaveUp(status int, class, msg string) {
	if r == nil {
		return
	}
	r.ev.ErrorMessage = msg
	r.final(status, class, adapters.Usage{}, false, 0, 0, 0)
}

func (r *record) final(status int, class string, u adapters.Usage, ok bool, respBytes int64, up, upTTFT time.Duration) {
	e := &r.ev
	now := time.Now()
	e.OccurredAt, e.Attempt, e.AttemptKind = now, max(r.n, 1), usage.AttemptFinal
	e.StatusCode, e.ErrorClass = status, class
	e.Latency, e.UpstreamLatency, e.UpstreamTTFT = now.Sub(r.start), up, upTTFT
	e.ResponseBodyBytes = respBytes
	if ok {
		e.PromptTokens, e.CompletionTokens, e.ReasoningTokens, e.CachedPromptTokens, e.TotalTokens = u.Prompt, u.Completion, u.Reasoning, u.Cached, u.Total
	}
	r.p.usage.Emit(e)
}

// maxUsageLine bounds the SSE line the scanner keeps: a usage chunk is a
// few hundred bytes; content lines longer than this are skipped whole.
const maxUsageLine = 16 << 10

// usageScanner follows a chat-completions SSE stream split across reads
// and keeps the usage of the last `data:` event that carries one (the
// chunk stream_options.include_usage asks for). The plugin relays streams
// byte for byte, so it does not force include_usage as the AI path does
// (which then strips the chunk the caller did not ask for): a stream whose
// caller did not ask, and whose upstream does not send usage anyway, is
// recorded without tokens.
type usageScanner struct {
	line []byte
	skip bool // the current line outgrew maxUsageLine
	u    adapters.Usage
	ok   bool
}

func (s *usageScanner) feed(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			s.add(b)
			return
		}
		s.add(b[:i])
		s.endLine()
		b = b[i+1:]
	}
}

func (s *usageScanner) add(b []byte) {
	if s.skip {
		return
	}
	if len(s.line)+len(b) > maxUsageLine {
		s.skip, s.line = true, s.line[:0]
		return
	}
	s.line = append(s.line, b...)
}

func (s *usageScanner) endLine() {
	line := bytes.TrimRight(s.line, "\r")
	if !s.skip && bytes.HasPrefix(line, dataPrefix) && bytes.Contains(line, usageKey) {
		if u, ok := openai.ExtractUsage(bytes.TrimSpace(line[len(dataPrefix):])); ok {
			s.u, s.ok = u, true
		}
	}
	s.line, s.skip = s.line[:0], false
}

var dataPrefix, usageKey = []byte("data:"), []byte(`"usage"`)

// StreamUsage runs the relay's usage scanner over a stream arriving in
// pieces (the fuzz target's entry point).
func StreamUsage(pieces ...[]byte) (adapters.Usage, bool) {
	var s usageScanner
	for _, p := range pieces {
		s.feed(p)
	}
	return s.u, s.ok
}
