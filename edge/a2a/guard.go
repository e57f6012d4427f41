package a2a

import (
	"bytes"
	"context"
	"slices"

	"gw/edge/guard"
	"gw/sse/rawjson"
)

// Guardrails on A2A traffic (docs/AGENTS.md "A2A guardrails"): the chains
// attached to the caller key and its team judge the text of the message a
// caller sends (message/send, message/stream) and the text of every
// answer (a Message, a Task, a status or artifact update). A2A agents have
// no guardrail scope of their own.

// maxDepth bounds the nesting of a data part walked for its strings;
// deeper content cannot be judged (the fail-open rules decide).
const maxDepth = 64

// maxGuardedAnswer bounds a whole answer held for its output guardrails;
// a longer one cannot be judged (the fail-open rules decide).
const maxGuardedAnswer = 16 << 20

// JSON-RPC error codes of gw's own refusals, in the range JSON-RPC 2.0
// leaves to the server (-32000 to -32099); error.data.code names them as
// gw's envelope does.
const (
	CodeContentFilter        = -32050
	CodeGuardrailUnavailable = -32051
	CodeRateLimited          = -32029 // as edge/mcp answers a refused tools/call
)

// Caller-facing texts of guardrail refusals (never matched values).
const (
	msgBlockedInput  = "The request was blocked by guardrail policy"
	msgBlockedOutput = "The response was blocked by guardrail policy"
	msgUnavailable   = "A guardrail could not evaluate the content and fails closed"
)

// span is one judged JSON string value: its quoted bytes doc[off:end]
// and its decoded text buf[bs:be].
type span struct{ off, end, bs, be int }

// texts collects the judged strings of one JSON document.
type texts struct {
	spans []span
	buf   []byte
	bad   bool // content that cannot be read: nesting beyond maxDepth, a string not in doc
}

func (t *texts) reset() { t.spans, t.buf, t.bad = t.spans[:0], t.buf[:0], false }

// Texts finds the strings guardrails judge in an A2A JSON-RPC document
// and writes the document back with some of them replaced (a mask). The
// zero value is ready; reuse keeps its buffers.
type Texts struct{ t texts }

// Collect reads doc, a request (output false: params.message's parts) or
// a response or stream event (output true: its result's agent text). ok
// is false when doc is not JSON or holds content that cannot be read
// (nesting deeper than 64 levels).
func (x *Texts) Collect(doc []byte, output bool) bool {
	x.t.reset()
	if !rawjson.Valid(doc) {
		return false
	}
	if output {
		x.t.output(doc)
	} else {
		x.t.input(doc)
		slices.SortFunc(x.t.spans, func(a, b span) int { return a.off - b.off })
	}
	return !x.t.bad
}

// Len is the number of strings found, in document order.
func (x *Texts) Len() int { return len(x.t.spans) }

// At is string i, decoded; it stays valid until the next Collect.
func (x *Texts) At(i int) []byte { s := x.t.spans[i]; return x.t.buf[s.bs:s.be] }

// Rewrite appends to dst the document Collect read with string i replaced
// by repl(i) where it reports true (JSON-quoted in place).
func (x *Texts) Rewrite(dst, doc []byte, repl func(i int) ([]byte, bool)) []byte {
	prev := 0
	for i, s := range x.t.spans {
		v, ok := repl(i)
		if !ok {
			continue
		}
		dst = append(dst, doc[prev:s.off]...)
		dst = rawjson.AppendQuoteBytes(dst, v)
		prev = s.end
	}
	return append(dst, doc[prev:]...)
}

// str records string value v, a subslice of doc.
func (t *texts) str(doc, v []byte) {
	off := rawjson.Offset(doc, v)
	if len(v) < 2 || off < 0 {
		t.bad = true
		return
	}
	bs := len(t.buf)
	b, err := rawjson.AppendUnquote(t.buf, v)
	if err != nil {
		t.bad = true
		return
	}
	t.buf = b
	t.spans = append(t.spans, span{off, off + len(v), bs, len(b)})
}

// parts records the judged strings of an A2A Part array: a text part's
// text, every string of a data part's data. File parts carry bytes or a
// URI and are not judged.
func (t *texts) parts(doc, parts []byte) {
	_ = rawjson.ForEachElem(parts, func(_ int, p []byte, k rawjson.Kind) bool {
		if k != rawjson.Object {
			return true
		}
		kind, _, _ := rawjson.Get(p, "kind")
		switch {
		case rawjson.StringEquals(kind, "text"):
			if v, vk, ok := rawjson.Get(p, "text"); ok && vk == rawjson.String {
				t.str(doc, v)
			}
		case rawjson.StringEquals(kind, "data"):
			if v, vk, ok := rawjson.Get(p, "data"); ok {
				t.any(doc, v, vk, 0)
			}
		}
		return !t.bad
	})
}

func (t *texts) any(doc, v []byte, k rawjson.Kind, depth int) {
	if depth > maxDepth {
		t.bad = true
		return
	}
	switch k {
	case rawjson.String:
		t.str(doc, v)
	case rawjson.Object:
		_ = rawjson.ForEachKey(v, func(_, val []byte, kind rawjson.Kind) bool {
			t.any(doc, val, kind, depth+1)
			return !t.bad
		})
	case rawjson.Array:
		_ = rawjson.ForEachElem(v, func(_ int, val []byte, kind rawjson.Kind) bool {
			t.any(doc, val, kind, depth+1)
			return !t.bad
		})
	}
}

// input records the text of a message/send or message/stream request:
// params.message.parts.
func (t *texts) input(doc []byte) {
	if p, k, ok := rawjson.GetPath(doc, "params", "message", "parts"); ok && k == rawjson.Array {
		t.parts(doc, p)
	}
}

// output records the agent's text in a JSON-RPC response or stream event:
// its result is a Message (parts), a Task (status.message.parts and each
// artifact's parts; the history repeats the conversation and is not
// judged again), a status update (status.message.parts) or an artifact
// update (artifact.parts). An error response carries no agent text.
func (t *texts) output(doc []byte) {
	res, k, ok := rawjson.Get(doc, "result")
	if !ok || k != rawjson.Object {
		return
	}
	if p, k, ok := rawjson.Get(res, "parts"); ok && k == rawjson.Array {
		t.parts(doc, p)
	}
	if p, k, ok := rawjson.GetPath(res, "status", "message", "parts"); ok && k == rawjson.Array {
		t.parts(doc, p)
	}
	if p, k, ok := rawjson.GetPath(res, "artifact", "parts"); ok && k == rawjson.Array {
		t.parts(doc, p)
	}
	if arts, k, ok := rawjson.Get(res, "artifacts"); ok && k == rawjson.Array {
		_ = rawjson.ForEachElem(arts, func(_ int, a []byte, k rawjson.Kind) bool {
			if k == rawjson.Object {
				if p, k, ok := rawjson.Get(a, "parts"); ok && k == rawjson.Array {
					t.parts(doc, p)
				}
			}
			return !t.bad
		})
	}
	// Edits go back to front in document order.
	slices.SortFunc(t.spans, func(a, b span) int { return a.off - b.off })
}

// guardCtx is the guardrails' context: an agent's own deadline applies to
// the upstream call, which starts after them.
var guardCtx = context.Background()

// judge runs stages over the texts of doc (input: the request's message;
// output: the answer's result). With Masked, the rewritten document is in
// c.edit. A document that is not JSON, or text that cannot be read,
// is judged by the stages' fail-open rules.
func (h *Handler) judge(c *call, p guard.Phase, stages []*guard.Stage, doc []byte) guard.Decision {
	x := &c.tx
	c.g.ClearTexts()
	if len(bytes.TrimSpace(doc)) == 0 {
		return guard.Pass
	}
	if !x.Collect(doc, p == guard.Output) {
		return c.g.Unreadable(p, stages)
	}
	role := guard.RoleUser
	if p == guard.Output {
		role = guard.RoleAssistant
	}
	for i := range x.Len() {
		c.g.AddText(guard.Text{Role: role, Part: guard.PartContent, Data: x.At(i)}, false, true)
	}
	d := c.g.Judge(guardCtx, p, c.agent.Name, stages)
	if c.g.Err != nil {
		h.logger().Warn("a2a guardrail check failed", "agent", c.agent.Name, "guardrail", c.g.ErrGuardrail, "err", c.g.Err.Error())
	}
	if d == guard.Masked {
		txs := c.g.Texts()
		c.edit = x.Rewrite(c.edit[:0], doc, func(i int) ([]byte, bool) { return txs[i].Data, c.g.Changed(i) })
	}
	return d
}

// refusal appends the JSON-RPC error answering request id for a guardrail
// decision d (Blocked or Unavailable) and returns the usage error class.
func (c *call) refusal(dst, id []byte, p guard.Phase, d guard.Decision) ([]byte, string) {
	if d == guard.Unavailable {
		return AppendErrorData(dst, id, CodeGuardrailUnavailable, msgUnavailable, "guardrail_unavailable"), "guardrail_unavailable"
	}
	msg := msgBlockedInput
	if p == guard.Output {
		msg = msgBlockedOutput
	}
	if c.g.Message != "" {
		msg = c.g.Message
	}
	return AppendErrorData(dst, id, CodeContentFilter, msg, "content_filter"), "guardrail_blocked"
}
