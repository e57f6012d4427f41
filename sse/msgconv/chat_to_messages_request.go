package msgconv

import (
	"bytes"
	"strconv"
	"sync"

	"gw/sse/rawjson"
)

// ChatRequestToMessages appends to dst the Anthropic messages request for
// the chat completions request body (protocols.md §4.1–4.6) and returns it.
// dst may be nil and must not overlap body. On error dst is returned
// unchanged and the error wraps ErrInvalidRequest, naming the field.
//
//   - system and developer messages, wherever they are, join the top-level
//     system: a string (texts joined with "\n\n"), or text blocks when a
//     cache_control needs them;
//   - user and assistant messages become turns; consecutive messages of one
//     role are merged into one turn; string content stays a string when the
//     turn holds nothing else. Parts: text → text, image_url (data URL →
//     base64 source, other URL → url source), file with file_data → base64
//     document; input_audio and file_id are rejected. A part's
//     cache_control (the LiteLLM extension) is kept;
//   - assistant tool_calls → tool_use blocks, the arguments string parsed as
//     the input object ("" → {}; anything but an object is an error);
//   - assistant thinking_blocks (what MessagesResponseToChat and
//     MessagesToChatStream give the caller: LiteLLM's field) → thinking
//     blocks with their signature and redacted_thinking blocks with their
//     data, first in the turn, so a tool loop with thinking continues; a
//     thinking block with an empty text, the one a streamed answer carries,
//     takes the message's reasoning_content when it is the message's only
//     thinking block; blocks without a signature or data are dropped (the
//     upstream refuses them);
//   - tool messages → tool_result blocks in a user turn, consecutive ones
//     merged, followed by any user content of the next message;
//   - tools → {name, description, input_schema (default {"type":"object",
//     "properties":{}}), strict, cache_control}; tool_choice auto / none /
//     required / {function} → auto / none / any / tool, and
//     parallel_tool_calls false → disable_parallel_tool_use true;
//   - stop → stop_sequences; max_completion_tokens or max_tokens →
//     max_tokens (default in the package comment); temperature (clamped to
//     1), top_p, stream; reasoning_effort → thinking (a thinking object in
//     the chat body is passed as it is instead); user (or
//     safety_identifier) → metadata.user_id; response_format json_schema →
//     output_config.format;
//   - model is opt.UpstreamModel; opt.AutoCache adds cache breakpoints.
func ChatRequestToMessages(dst, body []byte, opt RequestOptions) ([]byte, error) {
	if !rawjson.Valid(body) {
		return dst, reqErr("not valid JSON", "body")
	}
	c := acquireC2MReq()
	defer releaseC2MReq(c)
	out, err := c.convert(dst, body, &opt)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// c2mReq holds the scratch of one ChatRequestToMessages call.
type c2mReq struct {
	vals [17][]byte
	mv   [6][]byte
	pv   [6][]byte
	xv   [5][]byte

	sysText  [][]byte // system texts, aliasing the body
	sysCache [][]byte // their cache_control, or nil

	msgs  []byte
	tools []byte
	tmp   []byte
	turn  turn

	cache      []byte // the cache_control value of auto breakpoints
	autoSystem bool   // a breakpoint goes on the last system block
	autoUser   bool   // a breakpoint goes on the last user turn's last block
	lastUser   int    // index of the last user or tool message
	err        error
}

// turn is the Anthropic message being assembled.
type turn struct {
	role      byte // 0, 'u' or 'a'
	blocks    []byte
	n         int
	plain     []byte // the raw string when the turn is one string content
	lastCache bool   // the last block has a cache_control
	last      int    // index of the last chat message in the turn
}

var c2mReqPool = sync.Pool{New: func() any { return new(c2mReq) }}

func acquireC2MReq() *c2mReq { return c2mReqPool.Get().(*c2mReq) }

func releaseC2MReq(c *c2mReq) {
	clear(c.vals[:])
	clear(c.mv[:])
	clear(c.pv[:])
	clear(c.xv[:])
	clear(c.sysText)
	clear(c.sysCache)
	c.sysText, c.sysCache = c.sysText[:0], c.sysCache[:0]
	c.msgs, c.tools, c.tmp, c.cache = keep(c.msgs), keep(c.tools), keep(c.tmp), keep(c.cache)
	c.turn = turn{blocks: keep(c.turn.blocks)}
	c.autoSystem, c.autoUser, c.lastUser, c.err = false, false, 0, nil
	c2mReqPool.Put(c)
}

var chatReqKeys = []string{
	"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p",
	"stop", "stream", "tools", "tool_choice", "parallel_tool_calls", "reasoning_effort",
	"user", "n", "response_format", "thinking", "safety_identifier",
}

const (
	ckModel = iota
	ckMessages
	ckMaxTokens
	ckMaxCompletion
	ckTemperature
	ckTopP
	ckStop
	ckStream
	ckTools
	ckToolChoice
	ckParallel
	ckEffort
	ckUser
	ckN
	ckResponseFormat
	ckThinking
	ckSafetyID
)

func (c *c2mReq) convert(dst, body []byte, opt *RequestOptions) ([]byte, error) {
	v := c.vals[:]
	if rawjson.ScanTop(body, chatReqKeys, v) != nil {
		return dst, reqErr("not a JSON object", "body")
	}
	if n, ok := rawjson.ParseInt(v[ckN]); ok && n > 1 {
		return dst, reqErr("n > 1 is not supported by Anthropic", "n")
	}
	if rawjson.KindOf(v[ckMessages]) != rawjson.Array {
		return dst, reqErr("must be an array", "messages")
	}

	// Tools first: their cache_control count against the breakpoints.
	if err := c.convertTools(v[ckTools]); err != nil {
		return dst, err
	}
	c.planCache(body, v[ckMessages], opt.AutoCache)
	if err := c.convertMessages(v[ckMessages]); err != nil {
		return dst, err
	}

	// Fast path ends here: everything else is small scalars.
	dst = append(dst, `{"model":`...)
	switch {
	case opt.UpstreamModel != "":
		dst = rawjson.AppendQuote(dst, opt.UpstreamModel)
	case rawjson.KindOf(v[ckModel]) == rawjson.String:
		dst = append(dst, v[ckModel]...)
	default:
		return dst, reqErr("missing", "model")
	}

	maxTokens, explicit, err := chatMaxTokens(v[ckMaxCompletion], v[ckMaxTokens], opt.DefaultMaxTokens)
	if err != nil {
		return dst, err
	}
	var budget int64
	thinking := v[ckThinking]
	if rawjson.KindOf(thinking) != rawjson.Object {
		thinking = nil
		if e := v[ckEffort]; e != nil && rawjson.KindOf(e) != rawjson.Null {
			var ok bool
			if budget, ok = ThinkingBudget(word(e, &c.tmp)); !ok {
				return dst, reqErr("unknown value", "reasoning_effort")
			}
		}
		switch {
		case budget == 0:
		case !explicit:
			maxTokens += budget
		case budget >= maxTokens:
			budget = maxTokens - 1
			if budget < MinThinkingBudget {
				budget = 0
			}
		}
	}
	dst = append(dst, `,"max_tokens":`...)
	dst = strconv.AppendInt(dst, maxTokens, 10)

	dst = c.appendSystem(dst)
	dst = append(dst, `,"messages":[`...)
	dst = append(dst, c.msgs...)
	dst = append(dst, ']')

	if len(c.tools) > 0 {
		dst = append(dst, `,"tools":[`...)
		dst = append(dst, c.tools...)
		dst = append(dst, ']')
	}
	if dst, err = c.appendToolChoice(dst, v[ckToolChoice], v[ckParallel]); err != nil {
		return dst, err
	}
	if dst, err = appendStopSequences(dst, v[ckStop]); err != nil {
		return dst, err
	}
	if t := v[ckTemperature]; t != nil && rawjson.KindOf(t) != rawjson.Null {
		f, ok := rawjson.ParseFloat(t)
		if !ok {
			return dst, reqErr("must be a number", "temperature")
		}
		dst = append(dst, `,"temperature":`...)
		if f > 1 {
			dst = append(dst, '1') // Anthropic's range is 0–1
		} else {
			dst = append(dst, t...)
		}
	}
	if t := v[ckTopP]; rawjson.KindOf(t) == rawjson.Number {
		dst = append(dst, `,"top_p":`...)
		dst = append(dst, t...)
	}
	if s := v[ckStream]; rawjson.KindOf(s) == rawjson.True || rawjson.KindOf(s) == rawjson.False {
		dst = append(dst, `,"stream":`...)
		dst = append(dst, s...)
	}
	if thinking != nil {
		dst = append(dst, `,"thinking":`...)
		dst = append(dst, thinking...)
	} else if budget > 0 {
		dst = append(dst, `,"thinking":{"type":"enabled","budget_tokens":`...)
		dst = strconv.AppendInt(dst, budget, 10)
		dst = append(dst, '}')
	}
	user := v[ckUser]
	if rawjson.KindOf(user) != rawjson.String {
		user = v[ckSafetyID]
	}
	if rawjson.KindOf(user) == rawjson.String {
		dst = append(dst, `,"metadata":{"user_id":`...)
		dst = append(dst, user...)
		dst = append(dst, '}')
	}
	if typ, _, _ := rawjson.Get(v[ckResponseFormat], "type"); rawjson.StringEquals(typ, "json_schema") {
		if schema, kind, _ := rawjson.GetPath(v[ckResponseFormat], "json_schema", "schema"); kind == rawjson.Object {
			dst = append(dst, `,"output_config":{"format":{"type":"json_schema","schema":`...)
			dst = append(dst, schema...)
			dst = append(dst, "}}"...)
		}
	}
	return append(dst, '}'), nil
}

// chatMaxTokens picks max_completion_tokens, else max_tokens, else the
// default; explicit reports whether the caller set one.
func chatMaxTokens(completion, legacy []byte, def int) (n int64, explicit bool, err error) {
	raw, field := completion, "max_completion_tokens"
	if raw == nil || rawjson.KindOf(raw) == rawjson.Null {
		raw, field = legacy, "max_tokens"
	}
	if raw == nil || rawjson.KindOf(raw) == rawjson.Null {
		if def <= 0 {
			def = DefaultMaxTokens
		}
		return int64(def), false, nil
	}
	n, ok := rawjson.ParseInt(raw)
	if !ok || n <= 0 {
		return 0, false, reqErr("must be a positive integer", field)
	}
	return n, true, nil
}

// planCache decides the automatic breakpoints: at most 4 in all, the
// caller's counted (every "cache_control" key in the body, an upper bound),
// the system one first.
func (c *c2mReq) planCache(body, msgs []byte, mode AutoCache) {
	c.lastUser = -1
	c.autoSystem, c.autoUser = false, false
	c.cache = c.cache[:0]
	if mode == AutoCacheOff {
		return
	}
	hasSystem := false
	_ = rawjson.ForEachElem(msgs, func(i int, m []byte, _ rawjson.Kind) bool {
		role, _, _ := rawjson.Get(m, "role")
		switch {
		case rawjson.StringEquals(role, "user"), rawjson.StringEquals(role, "tool"):
			c.lastUser = i
		case rawjson.StringEquals(role, "system"), rawjson.StringEquals(role, "developer"):
			hasSystem = true
		}
		return true
	})
	budget := 4 - bytes.Count(body, strCacheControl)
	if hasSystem && budget > 0 {
		c.autoSystem = true
		budget--
	}
	c.autoUser = c.lastUser >= 0 && budget > 0
	c.cache = append(c.cache, `{"type":"ephemeral"`...)
	if mode == AutoCache1h {
		c.cache = append(c.cache, `,"ttl":"1h"`...)
	}
	c.cache = append(c.cache, '}')
}

var chatMsgKeys = []string{"role", "content", "tool_calls", "tool_call_id", "thinking_blocks", "reasoning_content"}

func (c *c2mReq) convertMessages(msgs []byte) error {
	c.turn.role, c.turn.n = 0, 0
	c.err = nil
	err := rawjson.ForEachElem(msgs, func(i int, m []byte, kind rawjson.Kind) bool {
		c.err = c.message(i, m, kind)
		return c.err == nil
	})
	if c.err != nil {
		return c.err
	}
	if err != nil {
		return reqErr("malformed", "messages")
	}
	c.closeTurn()
	return nil
}

func (c *c2mReq) message(i int, m []byte, kind rawjson.Kind) error {
	if kind != rawjson.Object || rawjson.ScanTop(m, chatMsgKeys, c.mv[:]) != nil {
		return reqErr("must be an object", "messages[#]", i)
	}
	content := c.mv[1]
	switch string(word(c.mv[0], &c.tmp)) {
	case "system", "developer":
		return c.system(i, content)
	case "user":
		switch rawjson.KindOf(content) {
		case rawjson.String:
			c.addText('u', i, content, nil)
			return nil
		case rawjson.Array:
			return c.parts('u', i, content)
		}
		return reqErr("must be a string or an array", "messages[#].content", i)
	case "assistant":
		if err := c.thinkingBlocks(i, c.mv[4], c.mv[5]); err != nil {
			return err
		}
		return c.assistant(i, content, c.mv[2])
	case "tool":
		return c.toolResult(i, c.mv[3], content)
	}
	return reqErr("unsupported role", "messages[#].role", i)
}

var textPartKeys = []string{"type", "text", "cache_control"}

// system collects a system or developer message's text.
func (c *c2mReq) system(i int, content []byte) error {
	switch rawjson.KindOf(content) {
	case rawjson.String:
		if !isEmptyStr(content) {
			c.sysText = append(c.sysText, content)
			c.sysCache = append(c.sysCache, nil)
		}
		return nil
	case rawjson.Array:
		var err error
		_ = rawjson.ForEachElem(content, func(j int, p []byte, _ rawjson.Kind) bool {
			var v [3][]byte
			if rawjson.ScanTop(p, textPartKeys, v[:]) != nil || !rawjson.StringEquals(v[0], "text") ||
				rawjson.KindOf(v[1]) != rawjson.String {
				err = reqErr("only text parts are allowed", "messages[#].content[#]", i, j)
				return false
			}
			if !isEmptyStr(v[1]) {
				cc := v[2]
				if rawjson.KindOf(cc) != rawjson.Object {
					cc = nil
				}
				c.sysText = append(c.sysText, v[1])
				c.sysCache = append(c.sysCache, cc)
			}
			return true
		})
		return err
	case rawjson.Null:
		return nil
	}
	return reqErr("must be a string or an array", "messages[#].content", i)
}

// appendSystem appends `,"system":…` when there is system text.
func (c *c2mReq) appendSystem(dst []byte) []byte {
	n := len(c.sysText)
	if n == 0 {
		return dst
	}
	auto := c.autoSystem && c.sysCache[n-1] == nil
	blocks := auto
	for _, cc := range c.sysCache {
		if cc != nil {
			blocks = true
		}
	}
	dst = append(dst, `,"system":`...)
	if !blocks {
		if n == 1 {
			return append(dst, c.sysText[0]...)
		}
		t := c.tmp[:0]
		for k, s := range c.sysText {
			if k > 0 {
				t = append(t, "\n\n"...)
			}
			t, _ = rawjson.AppendUnquote(t, s) // valid: the body was checked
		}
		c.tmp = t
		return rawjson.AppendQuoteBytes(dst, t)
	}
	dst = append(dst, '[')
	for k, s := range c.sysText {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"text","text":`...)
		dst = append(dst, s...)
		switch {
		case c.sysCache[k] != nil:
			dst = append(dst, `,"cache_control":`...)
			dst = append(dst, c.sysCache[k]...)
		case auto && k == n-1:
			dst = append(dst, `,"cache_control":`...)
			dst = append(dst, c.cache...)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// startBlock prepares the turn of role for one more block.
func (c *c2mReq) startBlock(role byte, i int) {
	if c.turn.role != role {
		c.closeTurn()
		c.turn.role = role
	}
	if c.turn.n > 0 {
		c.turn.blocks = append(c.turn.blocks, ',')
	}
	c.turn.last = i
}

// endBlock records the block just written; plain is the raw string when the
// block came from a string content.
func (c *c2mReq) endBlock(plain []byte, hasCache bool) {
	c.turn.n++
	c.turn.plain = nil
	if c.turn.n == 1 {
		c.turn.plain = plain
	}
	c.turn.lastCache = hasCache
}

// closeTurn writes the turn being built to msgs.
func (c *c2mReq) closeTurn() {
	t := &c.turn
	if t.role == 0 || t.n == 0 {
		t.role, t.n, t.plain, t.blocks = 0, 0, nil, t.blocks[:0]
		return
	}
	if t.role == 'u' && c.autoUser && t.last == c.lastUser && !t.lastCache {
		// The last user turn: the breakpoint goes on its last block, which
		// always ends with the '}' this code wrote.
		t.blocks = append(t.blocks[:len(t.blocks)-1], `,"cache_control":`...)
		t.blocks = append(t.blocks, c.cache...)
		t.blocks = append(t.blocks, '}')
		t.plain = nil
	}
	if len(c.msgs) > 0 {
		c.msgs = append(c.msgs, ',')
	}
	if t.role == 'u' {
		c.msgs = append(c.msgs, `{"role":"user","content":`...)
	} else {
		c.msgs = append(c.msgs, `{"role":"assistant","content":`...)
	}
	if t.n == 1 && t.plain != nil {
		c.msgs = append(c.msgs, t.plain...)
	} else {
		c.msgs = append(c.msgs, '[')
		c.msgs = append(c.msgs, t.blocks...)
		c.msgs = append(c.msgs, ']')
	}
	c.msgs = append(c.msgs, '}')
	t.role, t.n, t.plain, t.blocks = 0, 0, nil, t.blocks[:0]
}

// addText adds a text block from a string content (plain) or a text part.
func (c *c2mReq) addText(role byte, i int, text, cacheControl []byte) {
	c.startBlock(role, i)
	b := append(c.turn.blocks, `{"type":"text","text":`...)
	b = append(b, text...)
	if cacheControl != nil {
		b = append(b, `,"cache_control":`...)
		b = append(b, cacheControl...)
	}
	c.turn.blocks = append(b, '}')
	if cacheControl != nil {
		c.endBlock(nil, true)
	} else {
		c.endBlock(text, false)
	}
}

// parts adds the content parts of a user message.
func (c *c2mReq) parts(role byte, i int, content []byte) error {
	var err error
	_ = rawjson.ForEachElem(content, func(j int, p []byte, _ rawjson.Kind) bool {
		c.startBlock(role, i)
		var hasCache bool
		c.turn.blocks, hasCache, err = c.part(c.turn.blocks, p, i, j)
		if err != nil {
			return false
		}
		c.endBlock(nil, hasCache)
		return true
	})
	return err
}

var partKeys = []string{"type", "text", "image_url", "file", "cache_control", "refusal"}

// part appends the Anthropic block for chat content part j of message i.
func (c *c2mReq) part(dst, p []byte, i, j int) ([]byte, bool, error) {
	v := c.pv[:]
	if rawjson.ScanTop(p, partKeys, v) != nil {
		return dst, false, reqErr("must be an object", "messages[#].content[#]", i, j)
	}
	switch string(word(v[0], &c.tmp)) {
	case "text":
		if rawjson.KindOf(v[1]) != rawjson.String {
			return dst, false, reqErr("must be a string", "messages[#].content[#].text", i, j)
		}
		dst = append(dst, `{"type":"text","text":`...)
		dst = append(dst, v[1]...)
	case "refusal":
		if rawjson.KindOf(v[5]) != rawjson.String {
			return dst, false, reqErr("must be a string", "messages[#].content[#].refusal", i, j)
		}
		dst = append(dst, `{"type":"text","text":`...)
		dst = append(dst, v[5]...)
	case "image_url":
		url := v[2]
		if rawjson.KindOf(url) == rawjson.Object {
			url, _, _ = rawjson.Get(url, "url")
		}
		if rawjson.KindOf(url) != rawjson.String {
			return dst, false, reqErr("must be a string", "messages[#].content[#].image_url.url", i, j)
		}
		var ok bool
		if dst, ok = c.appendDataSource(dst, `{"type":"image","source":`, url, ""); !ok {
			return dst, false, reqErr("a data URL must be base64 with a media type", "messages[#].content[#].image_url.url", i, j)
		}
	case "file":
		data, kind, _ := rawjson.Get(v[3], "file_data")
		if kind != rawjson.String {
			return dst, false, reqErr("only file_data has an Anthropic equivalent", "messages[#].content[#].file", i, j)
		}
		var ok bool
		if dst, ok = c.appendDataSource(dst, `{"type":"document","source":`, data, "application/pdf"); !ok {
			return dst, false, reqErr("a data URL must be base64 with a media type", "messages[#].content[#].file.file_data", i, j)
		}
	case "input_audio":
		return dst, false, reqErr("audio has no Anthropic equivalent", "messages[#].content[#]", i, j)
	default:
		return dst, false, reqErr("unsupported part type", "messages[#].content[#].type", i, j)
	}
	hasCache := rawjson.KindOf(v[4]) == rawjson.Object
	if hasCache {
		dst = append(dst, `,"cache_control":`...)
		dst = append(dst, v[4]...)
	}
	return append(dst, '}'), hasCache, nil
}

// appendDataSource appends head and the source object for url, a string
// literal: a data URL becomes a base64 source, anything else a url source
// (or, when bare is set, base64 data of media type bare). The caller closes
// the block.
func (c *c2mReq) appendDataSource(dst []byte, head string, url []byte, bare string) ([]byte, bool) {
	s, ok := inner(url)
	if !ok {
		t, err := rawjson.AppendUnquote(c.tmp[:0], url)
		if err != nil {
			return dst, false
		}
		c.tmp, s = t, t
	}
	dst = append(dst, head...)
	if !bytes.HasPrefix(s, strDataURL) {
		if bare != "" {
			dst = append(dst, `{"type":"base64","media_type":"`...)
			dst = append(dst, bare...)
			dst = append(dst, `","data":`...)
			dst = rawjson.AppendQuoteBytes(dst, s)
			return append(dst, '}'), true
		}
		dst = append(dst, `{"type":"url","url":`...)
		dst = append(dst, url...)
		return append(dst, '}'), true
	}
	k := bytes.Index(s, strBase64Marker)
	if k <= len(strDataURL) {
		return dst, false
	}
	dst = append(dst, `{"type":"base64","media_type":`...)
	dst = rawjson.AppendQuoteBytes(dst, s[len(strDataURL):k])
	dst = append(dst, `,"data":`...)
	dst = rawjson.AppendQuoteBytes(dst, s[k+len(strBase64Marker):])
	return append(dst, '}'), true
}

var thinkingBlockKeys = []string{"type", "thinking", "signature", "data"}

// thinkingBlocks adds the thinking_blocks of assistant message i (blocks,
// when an array) to its turn; reasoning is the message's
// reasoning_content.
func (c *c2mReq) thinkingBlocks(i int, blocks, reasoning []byte) error {
	switch rawjson.KindOf(blocks) {
	case rawjson.Array:
	case rawjson.Null, rawjson.Invalid:
		return nil
	default:
		return reqErr("must be an array", "messages[#].thinking_blocks", i)
	}
	thinking := 0
	_ = rawjson.ForEachElem(blocks, func(_ int, b []byte, _ rawjson.Kind) bool {
		if t, _, _ := rawjson.Get(b, "type"); rawjson.StringEquals(t, "thinking") {
			thinking++
		}
		return true
	})
	var err error
	_ = rawjson.ForEachElem(blocks, func(j int, b []byte, kind rawjson.Kind) bool {
		v := c.xv[:4]
		if kind != rawjson.Object || rawjson.ScanTop(b, thinkingBlockKeys, v) != nil {
			err = reqErr("must be an object", "messages[#].thinking_blocks[#]", i, j)
			return false
		}
		switch {
		case rawjson.StringEquals(v[0], "thinking"):
			text, sig := v[1], v[2]
			if !isNonEmptyStr(sig) {
				return true
			}
			if (text == nil || isEmptyStr(text)) && thinking == 1 && rawjson.KindOf(reasoning) == rawjson.String {
				text = reasoning
			}
			if rawjson.KindOf(text) != rawjson.String {
				text = strEmptyString
			}
			c.startBlock('a', i)
			blk := append(c.turn.blocks, `{"type":"thinking","thinking":`...)
			blk = append(blk, text...)
			blk = append(blk, `,"signature":`...)
			blk = append(blk, sig...)
			c.turn.blocks = append(blk, '}')
			c.endBlock(nil, false)
		case rawjson.StringEquals(v[0], "redacted_thinking"):
			if !isNonEmptyStr(v[3]) {
				return true
			}
			c.startBlock('a', i)
			blk := append(c.turn.blocks, `{"type":"redacted_thinking","data":`...)
			blk = append(blk, v[3]...)
			c.turn.blocks = append(blk, '}')
			c.endBlock(nil, false)
		}
		return true
	})
	return err
}

var toolCallKeys = []string{"id", "function"}
var funcKeys = []string{"name", "arguments"}

// assistant adds an assistant message: text, then tool_use blocks.
func (c *c2mReq) assistant(i int, content, calls []byte) error {
	switch rawjson.KindOf(content) {
	case rawjson.String:
		if !isEmptyStr(content) {
			c.addText('a', i, content, nil)
		}
	case rawjson.Array:
		var err error
		_ = rawjson.ForEachElem(content, func(j int, p []byte, _ rawjson.Kind) bool {
			var v [6][]byte
			if rawjson.ScanTop(p, partKeys, v[:]) != nil {
				err = reqErr("must be an object", "messages[#].content[#]", i, j)
				return false
			}
			text := v[1]
			if rawjson.StringEquals(v[0], "refusal") {
				text = v[5]
			} else if !rawjson.StringEquals(v[0], "text") {
				err = reqErr("only text and refusal parts are allowed", "messages[#].content[#]", i, j)
				return false
			}
			if rawjson.KindOf(text) != rawjson.String {
				err = reqErr("must be a string", "messages[#].content[#]", i, j)
				return false
			}
			if !isEmptyStr(text) {
				cc := v[4]
				if rawjson.KindOf(cc) != rawjson.Object {
					cc = nil
				}
				c.addText('a', i, text, cc)
			}
			return true
		})
		if err != nil {
			return err
		}
	case rawjson.Null, rawjson.Invalid:
	default:
		return reqErr("must be a string or an array", "messages[#].content", i)
	}
	switch rawjson.KindOf(calls) {
	case rawjson.Array:
	case rawjson.Null, rawjson.Invalid:
		return nil
	default:
		return reqErr("must be an array", "messages[#].tool_calls", i)
	}
	var err error
	_ = rawjson.ForEachElem(calls, func(j int, tc []byte, _ rawjson.Kind) bool {
		err = c.toolUse(i, j, tc)
		return err == nil
	})
	return err
}

// toolUse adds the tool_use block for tool call j of message i.
func (c *c2mReq) toolUse(i, j int, tc []byte) error {
	v := c.xv[:2]
	if rawjson.ScanTop(tc, toolCallKeys, v) != nil || rawjson.KindOf(v[0]) != rawjson.String {
		return reqErr("must have a string id", "messages[#].tool_calls[#]", i, j)
	}
	id := v[0]
	f := c.xv[2:4]
	if rawjson.ScanTop(v[1], funcKeys, f) != nil || rawjson.KindOf(f[0]) != rawjson.String {
		return reqErr("must have a string name", "messages[#].tool_calls[#].function", i, j)
	}
	input, ok := c.argsObject(f[1])
	if !ok {
		return reqErr("not a JSON object", "messages[#].tool_calls[#].function.arguments", i, j)
	}
	c.startBlock('a', i)
	b := append(c.turn.blocks, `{"type":"tool_use","id":`...)
	b = append(b, id...)
	b = append(b, `,"name":`...)
	b = append(b, f[0]...)
	b = append(b, `,"input":`...)
	b = append(b, input...)
	c.turn.blocks = append(b, '}')
	c.endBlock(nil, false)
	return nil
}

// argsObject returns the JSON object a tool call's arguments hold: the
// string's content ("" is {}), or an object given directly.
func (c *c2mReq) argsObject(args []byte) ([]byte, bool) {
	switch rawjson.KindOf(args) {
	case rawjson.Object:
		return args, true
	case rawjson.Null, rawjson.Invalid:
		return strEmptyObject, true
	case rawjson.String:
	default:
		return nil, false
	}
	t, err := rawjson.AppendUnquote(c.tmp[:0], args)
	if err != nil {
		return nil, false
	}
	c.tmp = t
	t = trimWS(t)
	if len(t) == 0 {
		return strEmptyObject, true
	}
	if t[0] != '{' || !rawjson.Valid(t) {
		return nil, false
	}
	return t, true
}

// toolResult adds a tool message as a tool_result block of a user turn.
func (c *c2mReq) toolResult(i int, id, content []byte) error {
	if rawjson.KindOf(id) != rawjson.String {
		return reqErr("must be a string", "messages[#].tool_call_id", i)
	}
	c.startBlock('u', i)
	b := append(c.turn.blocks, `{"type":"tool_result","tool_use_id":`...)
	b = append(b, id...)
	switch rawjson.KindOf(content) {
	case rawjson.String:
		b = append(b, `,"content":`...)
		b = append(b, content...)
	case rawjson.Array:
		b = append(b, `,"content":[`...)
		var err error
		_ = rawjson.ForEachElem(content, func(j int, p []byte, _ rawjson.Kind) bool {
			if j > 0 {
				b = append(b, ',')
			}
			b, _, err = c.part(b, p, i, j)
			return err == nil
		})
		if err != nil {
			c.turn.blocks = b
			return err
		}
		b = append(b, ']')
	case rawjson.Null, rawjson.Invalid:
	default:
		c.turn.blocks = b
		return reqErr("must be a string or an array", "messages[#].content", i)
	}
	c.turn.blocks = append(b, '}')
	c.endBlock(nil, false)
	return nil
}

var toolKeys = []string{"type", "function", "cache_control"}
var funcDefKeys = []string{"name", "description", "parameters", "strict"}

// convertTools converts the chat tools into c.tools.
func (c *c2mReq) convertTools(tools []byte) error {
	switch rawjson.KindOf(tools) {
	case rawjson.Array:
	case rawjson.Null, rawjson.Invalid:
		return nil
	default:
		return reqErr("must be an array", "tools")
	}
	var err error
	_ = rawjson.ForEachElem(tools, func(i int, t []byte, _ rawjson.Kind) bool {
		v := c.xv[:3]
		if rawjson.ScanTop(t, toolKeys, v) != nil {
			err = reqErr("must be an object", "tools[#]", i)
			return false
		}
		if v[0] != nil && !rawjson.StringEquals(v[0], "function") {
			err = reqErr("only function tools have an Anthropic equivalent", "tools[#].type", i)
			return false
		}
		cc := v[2]
		var f [4][]byte
		if rawjson.ScanTop(v[1], funcDefKeys, f[:]) != nil || rawjson.KindOf(f[0]) != rawjson.String {
			err = reqErr("must have a string name", "tools[#].function", i)
			return false
		}
		if len(c.tools) > 0 {
			c.tools = append(c.tools, ',')
		}
		b := append(c.tools, `{"name":`...)
		b = append(b, f[0]...)
		if rawjson.KindOf(f[1]) == rawjson.String {
			b = append(b, `,"description":`...)
			b = append(b, f[1]...)
		}
		b = append(b, `,"input_schema":`...)
		switch rawjson.KindOf(f[2]) {
		case rawjson.Object:
			b = append(b, f[2]...)
		case rawjson.Null, rawjson.Invalid:
			b = append(b, `{"type":"object","properties":{}}`...)
		default:
			c.tools = b
			err = reqErr("must be an object", "tools[#].function.parameters", i)
			return false
		}
		if k := rawjson.KindOf(f[3]); k == rawjson.True || k == rawjson.False {
			b = append(b, `,"strict":`...)
			b = append(b, f[3]...)
		}
		if rawjson.KindOf(cc) == rawjson.Object {
			b = append(b, `,"cache_control":`...)
			b = append(b, cc...)
		}
		c.tools = append(b, '}')
		return true
	})
	return err
}

// appendToolChoice appends `,"tool_choice":…` for the chat tool_choice and
// parallel_tool_calls.
func (c *c2mReq) appendToolChoice(dst, choice, parallel []byte) ([]byte, error) {
	noParallel := rawjson.KindOf(parallel) == rawjson.False
	switch rawjson.KindOf(choice) {
	case rawjson.Null, rawjson.Invalid:
		if !noParallel || len(c.tools) == 0 {
			return dst, nil
		}
		return append(dst, `,"tool_choice":{"type":"auto","disable_parallel_tool_use":true}`...), nil
	case rawjson.String:
		dst = append(dst, `,"tool_choice":{"type":`...)
		switch string(word(choice, &c.tmp)) {
		case "auto":
			dst = append(dst, `"auto"`...)
		case "none":
			return append(dst, `"none"}`...), nil
		case "required":
			dst = append(dst, `"any"`...)
		default:
			return dst, reqErr("unknown value", "tool_choice")
		}
	case rawjson.Object:
		typ, _, _ := rawjson.Get(choice, "type")
		name, kind, _ := rawjson.GetPath(choice, "function", "name")
		if !rawjson.StringEquals(typ, "function") || kind != rawjson.String {
			return dst, reqErr("only {type: function, function: {name}} has an Anthropic equivalent", "tool_choice")
		}
		dst = append(dst, `,"tool_choice":{"type":"tool","name":`...)
		dst = append(dst, name...)
	default:
		return dst, reqErr("must be a string or an object", "tool_choice")
	}
	if noParallel {
		dst = append(dst, `,"disable_parallel_tool_use":true`...)
	}
	return append(dst, '}'), nil
}

// appendStopSequences appends `,"stop_sequences":[…]` for the chat stop.
func appendStopSequences(dst, stop []byte) ([]byte, error) {
	switch rawjson.KindOf(stop) {
	case rawjson.Null, rawjson.Invalid:
		return dst, nil
	case rawjson.String:
		if isEmptyStr(stop) {
			return dst, nil
		}
		dst = append(dst, `,"stop_sequences":[`...)
		dst = append(dst, stop...)
		return append(dst, ']'), nil
	case rawjson.Array:
		n, bad := 0, false
		_ = rawjson.ForEachElem(stop, func(_ int, _ []byte, k rawjson.Kind) bool {
			n++
			bad = k != rawjson.String
			return !bad
		})
		if bad {
			return dst, reqErr("must hold strings only", "stop")
		}
		if n == 0 {
			return dst, nil
		}
		dst = append(dst, `,"stop_sequences":`...)
		return append(dst, stop...), nil
	}
	return dst, reqErr("must be a string or an array", "stop")
}
