package soak

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// The checker rebuilds, byte for byte, the chat-completions answer that gw relays from
// the mock (perf/mock/openai_chat.go, perf/mock/README.md) and compares it with what the
// caller received. Only the answer's id and created vary between answers; both are read
// from the start of the body, so a chunk that strays in from another answer (another id)
// is a difference like any other.

// fillerText is the mock's content filler (perf/mock/answer.go). Duplicated on purpose:
// the checker must not trust the code it checks; TestSoakTemplateMatchesMock compares the
// whole template with a real mock answer, so a change of the filler fails there.
const fillerText = "Hello from the gw mock provider. This reply is deterministic filler made of plain " +
	"ASCII words, so tests can check every byte that streams through the gateway. "

// idPrefix starts every mock chat answer id; the rest are decimal digits.
const idPrefix = "chatcmpl-mock-"

// Expect describes one kind of answer.
type Expect struct {
	Model        string // the model the caller sees (gw rewrites it to the alias)
	Stream       bool
	IncludeUsage bool // stream_options.include_usage was asked (streams only)
	Chunks       int  // x-mock-chunks
	ChunkSize    int  // x-mock-chunk-size
	PromptTokens int  // the mock's estimate: max(1, len(upstream body)/4)
}

// Checker compares answers of one Expect with the bytes they must have. Safe for
// concurrent use.
type Checker struct {
	e      Expect
	segs   []segment // the template: literal text and the two per-answer holes
	labels []string  // stream event i's name, for the descriptions
	pool   sync.Pool // *[]byte scratch for the rendered answer
}

// segment is a literal, or (lit == nil) a hole for the id or created.
type segment struct {
	lit  []byte
	hole int
}

const (
	holeID = iota
	holeCreated
)

// NewChecker renders the template of e's answers.
func NewChecker(e Expect) *Checker {
	c := &Checker{e: e}
	t := &templ{}
	if e.Stream {
		c.labels = t.stream(e)
	} else {
		t.buffered(e)
	}
	c.segs = t.done()
	c.pool.New = func() any { b := make([]byte, 0, 4096); return &b }
	return c
}

// templ accumulates segments.
type templ struct {
	segs []segment
	lit  []byte
}

func (t *templ) str(s string) { t.lit = append(t.lit, s...) }

func (t *templ) hole(h int) {
	t.flush()
	t.segs = append(t.segs, segment{hole: h})
}

func (t *templ) flush() {
	if len(t.lit) > 0 {
		t.segs = append(t.segs, segment{lit: t.lit})
		t.lit = nil
	}
}

func (t *templ) done() []segment {
	t.flush()
	return t.segs
}

// quote renders s as a JSON string, as the mock and gw do for plain names.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func filler(off, n int) string {
	out := make([]byte, 0, n)
	for n > 0 {
		o := off % len(fillerText)
		m := min(n, len(fillerText)-o)
		out = append(out, fillerText[o:o+m]...)
		off += m
		n -= m
	}
	return string(out)
}

func usage(prompt, completion int) string {
	return `{"prompt_tokens":` + strconv.Itoa(prompt) + `,"completion_tokens":` + strconv.Itoa(completion) +
		`,"total_tokens":` + strconv.Itoa(prompt+completion) +
		`,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},` +
		`"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`
}

// buffered is the chat.completion object.
func (t *templ) buffered(e Expect) {
	t.str(`{"id":"`)
	t.hole(holeID)
	t.str(`","object":"chat.completion","created":`)
	t.hole(holeCreated)
	t.str(`,"model":` + quote(e.Model) + `,"choices":[{"index":0,"message":{"role":"assistant","content":"`)
	t.str(filler(0, e.Chunks*e.ChunkSize))
	t.str(`","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":`)
	t.str(usage(e.PromptTokens, e.Chunks))
	t.str(`,"service_tier":"default","system_fingerprint":"fp_mock"}`)
}

// stream is the SSE stream: role chunk, content chunks, finish chunk, usage chunk (with
// include_usage), [DONE]. It returns the events' names.
func (t *templ) stream(e Expect) []string {
	tail := "}\n\n"
	if e.IncludeUsage {
		tail = `,"usage":null}` + "\n\n" // every chunk but the usage one carries usage:null
	}
	head := func() {
		t.str(`data: {"id":"`)
		t.hole(holeID)
		t.str(`","object":"chat.completion.chunk","created":`)
		t.hole(holeCreated)
		t.str(`,"model":` + quote(e.Model) + `,"service_tier":"default","system_fingerprint":"fp_mock",`)
	}
	labels := []string{"role chunk"}
	head()
	t.str(`"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]` + tail)
	for i := 0; i < e.Chunks; i++ {
		labels = append(labels, "content chunk "+strconv.Itoa(i))
		head()
		t.str(`"choices":[{"index":0,"delta":{"content":"` + filler(i*e.ChunkSize, e.ChunkSize) + `"},"logprobs":null,"finish_reason":null}]` + tail)
	}
	labels = append(labels, "finish chunk")
	head()
	t.str(`"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]` + tail)
	if e.IncludeUsage {
		labels = append(labels, "usage chunk")
		head()
		t.str(`"choices":[],"usage":` + usage(e.PromptTokens, e.Chunks) + "}\n\n")
	}
	labels = append(labels, "[DONE]")
	t.str("data: [DONE]\n\n")
	return labels
}

// Check reports nil when body is exactly the expected answer, else the first difference.
func (c *Checker) Check(body []byte) error {
	id, created, err := c.identity(body)
	if err != nil {
		return err
	}
	bp := c.pool.Get().(*[]byte)
	defer c.pool.Put(bp)
	want := c.render((*bp)[:0], id, created)
	*bp = want
	if bytes.Equal(body, want) {
		return nil
	}
	return errors.New(c.describe(want, body))
}

func (c *Checker) render(dst, id, created []byte) []byte {
	for _, s := range c.segs {
		switch {
		case s.lit != nil:
			dst = append(dst, s.lit...)
		case s.hole == holeID:
			dst = append(dst, id...)
		default:
			dst = append(dst, created...)
		}
	}
	return dst
}

// identity reads the id and created of the answer's first event: the template's first
// literal, the id (idPrefix and digits), the second literal, created (digits).
func (c *Checker) identity(body []byte) (id, created []byte, err error) {
	open, mid := c.segs[0].lit, c.segs[2].lit
	if !bytes.HasPrefix(body, open) {
		return nil, nil, fmt.Errorf("answer does not start with %q: got %s", open, snippet(body, 0, len(open)+16))
	}
	rest := body[len(open):]
	n := digitsAfter(rest, idPrefix)
	if n == 0 {
		return nil, nil, fmt.Errorf("answer id is not %s<n>: got %s", idPrefix, snippet(rest, 0, 40))
	}
	id, rest = rest[:len(idPrefix)+n], rest[len(idPrefix)+n:]
	if !bytes.HasPrefix(rest, mid) {
		return nil, nil, fmt.Errorf("after the id, want %q: got %s", mid, snippet(rest, 0, len(mid)+8))
	}
	rest = rest[len(mid):]
	n = digitsAfter(rest, "")
	if n == 0 {
		return nil, nil, fmt.Errorf("answer created is not a number: got %s", snippet(rest, 0, 24))
	}
	return id, rest[:n], nil
}

// digitsAfter returns the number of ASCII digits that follow prefix at the start of b,
// or 0 when b does not start with prefix.
func digitsAfter(b []byte, prefix string) int {
	if !bytes.HasPrefix(b, []byte(prefix)) {
		return 0
	}
	n := 0
	for _, ch := range b[len(prefix):] {
		if ch < '0' || ch > '9' {
			break
		}
		n++
	}
	return n
}

// describe names the first difference between want and got: where (byte offset, and for
// streams the event), and a short excerpt of each side.
func (c *Checker) describe(want, got []byte) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	where := "byte " + strconv.Itoa(i)
	if c.e.Stream {
		where = c.eventAt(want, i) + ", " + where
	}
	switch {
	case i == len(got):
		return fmt.Sprintf("body ends early: %d of %d bytes, in %s; missing %s", len(got), len(want), where, snippet(want, i, 48))
	case i == len(want):
		return fmt.Sprintf("%d bytes after the end of the answer: %s", len(got)-len(want), snippet(got, i, 48))
	}
	return fmt.Sprintf("differs in %s: want %s, got %s", where, snippet(want, i, 40), snippet(got, i, 40))
}

// eventAt names the stream event of want that holds offset i.
func (c *Checker) eventAt(want []byte, i int) string {
	n := bytes.Count(want[:i], []byte("\n\n"))
	if n < len(c.labels) {
		return "event " + strconv.Itoa(n) + " (" + c.labels[n] + ")"
	}
	return "event " + strconv.Itoa(n)
}

// snippet quotes up to n bytes of b from off, with a few bytes before it for context.
func snippet(b []byte, off, n int) string {
	from := max(0, off-8)
	to := min(len(b), off+n)
	if from >= to {
		return `""`
	}
	s := strconv.Quote(string(b[from:to]))
	if from > 0 {
		s = "…" + s
	}
	if to < len(b) {
		s += "…"
	}
	return s
}
