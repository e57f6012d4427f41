package openai

import (
	"bytes"
	"sync"

	"gw/adapters"
	"gw/adapters/bodyrules"
	"gw/sse/rawjson"
)

// scratch holds the reusable buffers of one BuildChat call.
type scratch struct {
	bufs [2][]byte // body versions, written alternately
	msgs []byte    // rebuilt messages array
	elem []byte    // one message with its role edited
	bare []byte    // one message without its thinking_blocks
	// strip: the body carries thinking_blocks (signed Anthropic reasoning
	// that gw hands to chat callers and takes back from them, and that a
	// Messages caller's history becomes): OpenAI-family upstreams do not
	// know the field, and OpenAI rejects unknown message members.
	strip bool
	flat  []byte // flattened content string
	text  []byte // unescaped texts being flattened
	temp  []byte // clamped temperature
	so    []byte // new stream_options
	url   []byte
	hdr   []byte
	auth  []byte // credential header value; cleared on release
	vals  [][]byte
}

// maxKeep bounds the buffers a pooled scratch keeps, so one huge body does
// not pin its memory in the pool.
const maxKeep = 1 << 20

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func acquireScratch() *scratch { return scratchPool.Get().(*scratch) }

func releaseScratch(s *scratch) {
	for _, b := range []*[]byte{&s.bufs[0], &s.bufs[1], &s.msgs, &s.elem, &s.bare, &s.flat, &s.text, &s.temp, &s.so, &s.url, &s.hdr} {
		if cap(*b) > maxKeep {
			*b = nil
		} else {
			*b = (*b)[:0]
		}
	}
	clear(s.auth[:cap(s.auth)]) // no credential bytes linger in the pool
	s.auth = s.auth[:0]
	clear(s.vals)
	s.strip = false
	scratchPool.Put(s)
}

// editor applies edits one after the other: each reads cur and writes into
// the buffer that does not hold cur.
type editor struct {
	s   *scratch
	cur []byte // in.Body until the first edit, then s.bufs[1-n]
	n   int    // index of the buffer the next edit writes
}

func (e *editor) dst() []byte { return e.s.bufs[e.n][:0] }

// commit makes out the current body; on error the body is unchanged.
func (e *editor) commit(out []byte, err error) error {
	if err != nil {
		return adapters.ErrBody
	}
	e.s.bufs[e.n] = out
	e.cur = out
	e.n ^= 1
	return nil
}

// giveAway replaces the buffer holding cur, now owned by the request, with
// old, the request's previous body buffer.
func (e *editor) giveAway(old []byte) {
	e.s.bufs[e.n^1] = old[:0]
	e.cur = nil
}

// editBody applies the body edits in order: model; developer role and
// content_list_to_string (one pass over messages); max_tokens; param_renames;
// temperature clamp; default_body_fields; stream_options.include_usage.
//
// Fast path - when no rule can apply, one rawjson.SetString of `model`.
// Otherwise one ScanTop of the caller body decides every edit and one
// rawjson.ForEachKey pass writes the result (emit). Only when a
// param_renames source is present do the edits run one pass each
// (editBodyPasses), since renames can chain and collide; so do bodies whose
// max_tokens rename feeds a param_renames source.
func (a *Adapter) editBody(e *editor, in *adapters.ChatInput) error {
	pol := a.policyFor(in.Provider)
	reasoning := pol.maxCompletion && IsReasoningModel(in.UpstreamModel)
	forceUsage := in.Stream && in.ForceUsage
	e.s.strip = !in.Shape.NoThinkingBlocks && bytes.Contains(in.Body, strThinkingBlocks)
	if !pol.devToSystem && !reasoning && !a.body.Has(bodyrules.All) && !forceUsage && !e.s.strip {
		if at := rawjson.Offset(in.Body, in.Shape.Model); at >= 0 {
			// The edge's scan found the one model member: replace its
			// value without walking the body again.
			out := append(e.dst(), in.Body[:at]...)
			out = rawjson.AppendQuote(out, in.UpstreamModel)
			return e.commit(append(out, in.Body[at+len(in.Shape.Model):]...), nil)
		}
		return e.commit(rawjson.SetString(e.dst(), in.Body, "model", in.UpstreamModel))
	}

	s := e.s
	keys := a.scanKeys
	if cap(s.vals) < len(keys) {
		s.vals = make([][]byte, len(keys))
	}
	vals := s.vals[:len(keys)]
	if err := rawjson.ScanTop(in.Body, keys, vals); err != nil {
		return adapters.ErrBody
	}
	renameMax := reasoning && vals[kMaxTokens] != nil && vals[kMaxCompletionTokens] == nil
	if renameMax && a.renamesMaxCompletion {
		return a.editBodyPasses(e, in, pol, vals)
	}
	for i := range a.body.RenameList() {
		if vals[a.renameIdx+i] != nil {
			return a.editBodyPasses(e, in, pol, vals)
		}
	}

	p := plan{model: in.UpstreamModel}
	if (pol.devToSystem || a.body.FlattensContent() || s.strip) && rawjson.KindOf(vals[kMessages]) == rawjson.Array {
		var changed bool
		s.msgs, changed = a.editMessages(s, vals[kMessages], pol.devToSystem)
		if changed {
			p.msgs = s.msgs
		}
	}
	p.renameMax = renameMax
	p.temp = a.clampTemperature(s, vals[kTemperature])
	if forceUsage {
		cur := vals[kStreamOptions]
		if cur == nil && a.soDefault != nil {
			cur = a.soDefault // the default adds it; build on it
		}
		p.so = a.streamOptions(s, cur)
	}
	out, err := a.emit(e.dst(), in.Body, &p, vals)
	return e.commit(out, err)
}

// plan holds the replacement values emit writes; nil keeps a member as is.
type plan struct {
	model     string
	msgs      []byte
	temp      []byte
	so        []byte
	renameMax bool // max_tokens becomes max_completion_tokens
}

// Top-level keys emit acts on.
const (
	idOther = iota
	idModel
	idMessages
	idMaxTokens
	idTemperature
	idStreamOptions
)

// keyID classifies the quoted raw key k; names match without case, as
// ScanTop read them (and as an upstream on Go's encoding/json does).
func keyID(k []byte) int {
	if rawjson.PlainName(k) {
		// Fast path - a lower-case ASCII key without escapes compares as
		// bytes.
		switch string(k[1 : len(k)-1]) {
		case "model":
			return idModel
		case "messages":
			return idMessages
		case "max_tokens":
			return idMaxTokens
		case "temperature":
			return idTemperature
		case "stream_options":
			return idStreamOptions
		}
		return idOther
	}
	// Slow path - "mod\u0065l" and "Model" are "model" too.
	switch {
	case rawjson.NameIs(k, "model"):
		return idModel
	case rawjson.NameIs(k, "messages"):
		return idMessages
	case rawjson.NameIs(k, "max_tokens"):
		return idMaxTokens
	case rawjson.NameIs(k, "temperature"):
		return idTemperature
	case rawjson.NameIs(k, "stream_options"):
		return idStreamOptions
	}
	return idOther
}

var (
	quotedModel               = []byte(`"model":`)
	quotedMaxCompletionTokens = []byte(`"max_completion_tokens"`)
	quotedStreamOptions       = []byte(`"stream_options":`)
)

// emit appends to dst the object body with p applied, members in their
// order, then the absent ones (model, default body fields, stream_options)
// in that order, which is what the pass-per-edit pipeline produces. Members
// are re-joined with bare commas: whitespace between top-level members is
// not kept; member bytes are.
func (a *Adapter) emit(dst, body []byte, p *plan, vals [][]byte) ([]byte, error) {
	orig := len(dst)
	dst = append(dst, '{')
	n := 0
	hasModel, hasSO := false, false
	err := rawjson.ForEachKey(body, func(k, v []byte, _ rawjson.Kind) bool {
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		switch keyID(k) {
		case idModel:
			hasModel = true
			dst = append(dst, quotedModel...)
			dst = rawjson.AppendQuote(dst, p.model)
			return true
		case idMessages:
			if p.msgs != nil {
				v = p.msgs
			}
		case idMaxTokens:
			if p.renameMax {
				k = quotedMaxCompletionTokens
			}
		case idTemperature:
			if p.temp != nil {
				v = p.temp
			}
		case idStreamOptions:
			hasSO = true
			if p.so != nil {
				v = p.so
			}
		}
		dst = append(dst, k...)
		dst = append(dst, ':')
		dst = append(dst, v...)
		return true
	})
	if err != nil {
		return dst[:orig], err
	}
	sep := func() {
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
	}
	if !hasModel {
		sep()
		dst = append(dst, quotedModel...)
		dst = rawjson.AppendQuote(dst, p.model)
	}
	for i, f := range a.body.DefaultList() {
		present := vals[a.defIdx+i] != nil
		switch f.Key {
		case "max_tokens":
			present = present && !p.renameMax
		case "max_completion_tokens":
			present = present || p.renameMax
		case "stream_options":
			hasSO = hasSO || (!present && p.so != nil)
		}
		if present {
			continue
		}
		sep()
		dst = rawjson.AppendQuote(dst, f.Key)
		dst = append(dst, ':')
		if f.Key == "stream_options" && p.so != nil {
			dst = append(dst, p.so...)
		} else {
			dst = append(dst, f.Value...)
		}
	}
	if !hasSO && p.so != nil {
		sep()
		dst = append(dst, quotedStreamOptions...)
		dst = append(dst, p.so...)
	}
	return append(dst, '}'), nil
}

// clampTemperature returns the clamped temperature, or nil when raw is not a
// number or already within bounds.
func (a *Adapter) clampTemperature(s *scratch, raw []byte) []byte {
	c := a.body.Clamp(s.temp[:0], raw)
	if c != nil {
		s.temp = c
	}
	return c
}

// editBodyPasses is editBody with one rawjson pass per edit, for bodies in
// which a param_renames source is present. vals holds the ScanTop of
// in.Body.
func (a *Adapter) editBodyPasses(e *editor, in *adapters.ChatInput, pol policy, vals [][]byte) error {
	s := e.s
	keys := a.scanKeys
	// Messages are edited from the caller's body, which stays unchanged.
	var msgs []byte
	if (pol.devToSystem || a.body.FlattensContent() || s.strip) && rawjson.KindOf(vals[kMessages]) == rawjson.Array {
		var changed bool
		s.msgs, changed = a.editMessages(s, vals[kMessages], pol.devToSystem)
		if changed {
			msgs = s.msgs
		}
	}
	renameMax := pol.maxCompletion && vals[kMaxTokens] != nil && vals[kMaxCompletionTokens] == nil &&
		IsReasoningModel(in.UpstreamModel)

	if err := e.commit(rawjson.SetString(e.dst(), e.cur, "model", in.UpstreamModel)); err != nil {
		return err
	}
	if msgs != nil {
		if err := e.commit(rawjson.Set(e.dst(), e.cur, "messages", msgs)); err != nil {
			return err
		}
	}
	moved := false // keys were renamed: the first scan is stale
	if renameMax {
		if err := e.commit(rawjson.Rename(e.dst(), e.cur, "max_tokens", "max_completion_tokens")); err != nil {
			return err
		}
		moved = true
	}
	for i, r := range a.body.RenameList() {
		// A source absent from the caller body is skipped while no earlier
		// rename could have created it.
		if !moved && vals[a.renameIdx+i] == nil {
			continue
		}
		if err := e.commit(rawjson.Rename(e.dst(), e.cur, r.From, r.To)); err != nil {
			return err
		}
		moved = true
	}
	if moved {
		// e.cur stays put until the next commit; everything read from vals
		// below is copied out before that.
		if err := rawjson.ScanTop(e.cur, keys, vals); err != nil {
			return adapters.ErrBody
		}
	}

	temp := a.clampTemperature(s, vals[kTemperature])
	var so []byte
	if in.Stream && in.ForceUsage {
		cur := vals[kStreamOptions]
		if cur == nil && a.soDefault != nil {
			cur = a.soDefault // the default below adds it; build on it
		}
		so = a.streamOptions(s, cur)
	}
	hasDefault := false
	for i := range a.body.DefaultList() {
		if vals[a.defIdx+i] == nil {
			hasDefault = true
			break
		}
	}

	if temp != nil {
		if err := e.commit(rawjson.Set(e.dst(), e.cur, "temperature", temp)); err != nil {
			return err
		}
	}
	if hasDefault {
		for i, f := range a.body.DefaultList() {
			if vals[a.defIdx+i] != nil {
				continue
			}
			if err := e.commit(rawjson.SetIfAbsent(e.dst(), e.cur, f.Key, f.Value)); err != nil {
				return err
			}
		}
	}
	if so != nil {
		if err := e.commit(rawjson.Set(e.dst(), e.cur, "stream_options", so)); err != nil {
			return err
		}
	}
	return nil
}

// streamOptions returns stream_options with include_usage true, built on
// cur (the present value, other fields kept), or nil when cur already has
// include_usage true.
func (a *Adapter) streamOptions(s *scratch, cur []byte) []byte {
	if rawjson.KindOf(cur) != rawjson.Object {
		return strIncludeUsage
	}
	if _, k, ok := rawjson.Get(cur, "include_usage"); ok && k == rawjson.True {
		return nil
	}
	out, err := rawjson.Set(s.so[:0], cur, "include_usage", strTrue)
	if err != nil {
		return strIncludeUsage
	}
	s.so = out
	return out
}

// editMessages rewrites the messages array arr into s.msgs: developer roles
// become system (dev) and text-only content lists become one string
// (a.flatten). Elements are re-joined with a bare comma, so whitespace
// between elements is not kept; element bytes are. changed is false when no
// element was edited (the caller then keeps the original bytes).
func (a *Adapter) editMessages(s *scratch, arr []byte, dev bool) (out []byte, changed bool) {
	out = append(s.msgs[:0], '[')
	err := rawjson.ForEachElem(arr, func(i int, elem []byte, kind rawjson.Kind) bool {
		if i > 0 {
			out = append(out, ',')
		}
		var c bool
		out, c = a.editMessage(s, out, elem, kind, dev)
		changed = changed || c
		return true
	})
	out = append(out, ']')
	return out, changed && err == nil
}

// editMessage appends message elem to dst, edited.
func (a *Adapter) editMessage(s *scratch, dst, elem []byte, kind rawjson.Kind, dev bool) ([]byte, bool) {
	if kind != rawjson.Object {
		return append(dst, elem...), false
	}
	var v [2][]byte // role, content
	if rawjson.ScanTop(elem, messageKeys, v[:]) != nil {
		return append(dst, elem...), false
	}
	cur, changed := elem, false
	if s.strip {
		if out, err := rawjson.Delete(s.bare[:0], elem, "thinking_blocks"); err == nil && len(out) != len(elem) {
			s.bare, cur, changed = out, out, true
		}
	}
	if dev && rawjson.KindOf(v[0]) == rawjson.String && rawjson.StringEquals(v[0], "developer") {
		if out, err := rawjson.SetString(s.elem[:0], cur, "role", "system"); err == nil {
			s.elem, cur, changed = out, out, true
		}
	}
	if a.body.FlattensContent() && rawjson.KindOf(v[1]) == rawjson.Array {
		var flat []byte
		var ok bool
		if flat, s.text, ok = bodyrules.AppendFlatText(s.flat[:0], s.text, v[1]); ok {
			s.flat = flat
			if out, err := rawjson.Set(dst, cur, "content", flat); err == nil {
				return out, true
			}
		}
	}
	return append(dst, cur...), changed
}
