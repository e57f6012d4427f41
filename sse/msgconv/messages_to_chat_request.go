package msgconv

import (
	"sync"

	"gw/sse/rawjson"
)

// MessagesRequestToChat appends to dst the chat completions request for the
// Anthropic messages request body (protocols.md §4, inverse direction) and
// returns it. dst may be nil and must not overlap body. On error dst is
// returned unchanged and the error wraps ErrInvalidRequest.
//
//   - system (string or text blocks, joined with "\n\n") → a first system
//     message;
//   - user turns: each tool_result block → its own tool message, in block
//     order (text content joined with "\n"; is_error prefixes "Error: "),
//     then the remaining blocks (and images from tool results) → one user
//     message: text → text part, image base64 / url → image_url (data URL
//     / URL), document base64 → file {filename, file_data data URL},
//     document text source → text part. String content stays a string;
//   - assistant turns: text blocks joined → content (null when none),
//     tool_use → tool_calls {id, type: function, function: {name, arguments:
//     the input as a JSON string}}; signed thinking and redacted_thinking
//     blocks → thinking_blocks (restored by ChatRequestToMessages and
//     sse/converse, ignored by other upstreams' conversions), unsigned
//     ones dropped;
//   - tools → {type: function, function: {name, description, parameters,
//     strict}}; server tools are rejected; tool_choice auto / any / none /
//     tool → auto / required / none / {function}; disable_parallel_tool_use
//     → parallel_tool_calls false;
//   - stop_sequences → stop; max_tokens, temperature, top_p copied; stream →
//     stream and stream_options.include_usage true; thinking budget →
//     reasoning_effort (EffortForBudget), output_config.effort wins;
//     metadata.user_id → user; output_config.format json_schema →
//     response_format json_schema (name "response");
//   - model is opt.UpstreamModel.
func MessagesRequestToChat(dst, body []byte, opt RequestOptions) ([]byte, error) {
	if valid, folded := rawjson.ValidNames(body); !valid {
		return dst, reqErr("not valid JSON", "body")
	} else if folded != nil {
		return dst, rawjson.Folded(folded)
	}
	c := m2cReqPool.Get().(*m2cReq)
	defer releaseM2CReq(c)
	out, err := c.convert(dst, body, &opt)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// m2cReq holds the scratch of one MessagesRequestToChat call.
type m2cReq struct {
	vals  [13][]byte
	msgs  []byte // the messages array content
	parts []byte // the pending user parts
	calls []byte // the assistant's tool_calls
	think []byte // the assistant's thinking_blocks elements
	text  []byte // joined text
	tmp   []byte
	np    int
	err   error
}

var m2cReqPool = sync.Pool{New: func() any { return new(m2cReq) }}

func releaseM2CReq(c *m2cReq) {
	clear(c.vals[:])
	c.msgs, c.parts, c.calls, c.text, c.tmp, c.think = keep(c.msgs), keep(c.parts), keep(c.calls), keep(c.text), keep(c.tmp), keep(c.think)
	c.np, c.err = 0, nil
	m2cReqPool.Put(c)
}

var msgReqKeys = []string{
	"model", "system", "messages", "max_tokens", "temperature", "top_p", "stop_sequences",
	"stream", "tools", "tool_choice", "thinking", "metadata", "output_config",
}

const (
	mrModel = iota
	mrSystem
	mrMessages
	mrMaxTokens
	mrTemperature
	mrTopP
	mrStop
	mrStream
	mrTools
	mrToolChoice
	mrThinking
	mrMetadata
	mrOutputConfig
)

func (c *m2cReq) convert(dst, body []byte, opt *RequestOptions) ([]byte, error) {
	v := c.vals[:]
	if rawjson.ScanTop(body, msgReqKeys, v) != nil {
		return dst, reqErr("not a JSON object", "body")
	}
	if rawjson.KindOf(v[mrMessages]) != rawjson.Array {
		return dst, reqErr("must be an array", "messages")
	}
	if err := c.system(v[mrSystem]); err != nil {
		return dst, err
	}
	if err := c.messages(v[mrMessages]); err != nil {
		return dst, err
	}

	dst = append(dst, `{"model":`...)
	switch {
	case opt.UpstreamModel != "":
		dst = rawjson.AppendQuote(dst, opt.UpstreamModel)
	case rawjson.KindOf(v[mrModel]) == rawjson.String:
		dst = append(dst, v[mrModel]...)
	default:
		return dst, reqErr("missing", "model")
	}
	dst = append(dst, `,"messages":[`...)
	dst = append(dst, c.msgs...)
	dst = append(dst, ']')

	if m := v[mrMaxTokens]; m != nil && rawjson.KindOf(m) != rawjson.Null {
		if n, ok := rawjson.ParseInt(m); !ok || n <= 0 {
			return dst, reqErr("must be a positive integer", "max_tokens")
		}
		dst = append(dst, `,"max_tokens":`...)
		dst = append(dst, m...)
	}
	if t := v[mrTemperature]; rawjson.KindOf(t) == rawjson.Number {
		dst = append(dst, `,"temperature":`...)
		dst = append(dst, t...)
	}
	if t := v[mrTopP]; rawjson.KindOf(t) == rawjson.Number {
		dst = append(dst, `,"top_p":`...)
		dst = append(dst, t...)
	}
	if s := v[mrStop]; rawjson.KindOf(s) == rawjson.Array {
		n, bad := 0, false
		_ = rawjson.ForEachElem(s, func(_ int, _ []byte, k rawjson.Kind) bool {
			n++
			bad = k != rawjson.String
			return !bad
		})
		if bad {
			return dst, reqErr("must hold strings only", "stop_sequences")
		}
		if n > 0 {
			dst = append(dst, `,"stop":`...)
			dst = append(dst, s...)
		}
	}
	switch rawjson.KindOf(v[mrStream]) {
	case rawjson.True:
		dst = append(dst, `,"stream":true,"stream_options":{"include_usage":true}`...)
	case rawjson.False:
		dst = append(dst, `,"stream":false`...)
	}
	nTools := 0
	if tools := v[mrTools]; rawjson.KindOf(tools) == rawjson.Array {
		var err error
		if dst, nTools, err = c.appendTools(dst, tools); err != nil {
			return dst, err
		}
	}
	var err error
	if dst, err = c.appendToolChoice(dst, v[mrToolChoice], nTools > 0); err != nil {
		return dst, err
	}
	if effort, kind, _ := rawjson.Get(v[mrOutputConfig], "effort"); kind == rawjson.String {
		if _, ok := ThinkingBudget(word(effort, &c.tmp)); !ok {
			return dst, reqErr("unknown value", "output_config.effort")
		}
		dst = append(dst, `,"reasoning_effort":`...)
		dst = append(dst, effort...)
	} else if typ, _, _ := rawjson.Get(v[mrThinking], "type"); rawjson.StringEquals(typ, "enabled") {
		b, _, _ := rawjson.Get(v[mrThinking], "budget_tokens")
		if n, ok := rawjson.ParseInt(b); ok {
			dst = append(dst, `,"reasoning_effort":"`...)
			dst = append(dst, EffortForBudget(n)...)
			dst = append(dst, '"')
		}
	}
	if u, kind, _ := rawjson.Get(v[mrMetadata], "user_id"); kind == rawjson.String {
		dst = append(dst, `,"user":`...)
		dst = append(dst, u...)
	}
	if f, kind, _ := rawjson.Get(v[mrOutputConfig], "format"); kind == rawjson.Object {
		typ, _, _ := rawjson.Get(f, "type")
		schema, sk, _ := rawjson.Get(f, "schema")
		if rawjson.StringEquals(typ, "json_schema") && sk == rawjson.Object {
			dst = append(dst, `,"response_format":{"type":"json_schema","json_schema":{"name":"response","schema":`...)
			dst = append(dst, schema...)
			dst = append(dst, "}}"...)
		}
	}
	return append(dst, '}'), nil
}

// system writes the system message.
func (c *m2cReq) system(sys []byte) error {
	switch rawjson.KindOf(sys) {
	case rawjson.String:
		if isEmptyStr(sys) {
			return nil
		}
		c.msgs = append(c.msgs, `{"role":"system","content":`...)
		c.msgs = append(c.msgs, sys...)
		c.msgs = append(c.msgs, '}')
		return nil
	case rawjson.Array:
		c.text = c.text[:0]
		var err error
		_ = rawjson.ForEachElem(sys, func(i int, b []byte, _ rawjson.Kind) bool {
			typ, _, _ := rawjson.Get(b, "type")
			text, kind, _ := rawjson.Get(b, "text")
			if !rawjson.StringEquals(typ, "text") || kind != rawjson.String {
				err = reqErr("only text blocks are allowed", "system[#]", i)
				return false
			}
			if len(c.text) > 0 {
				c.text = append(c.text, "\n\n"...)
			}
			c.text, _ = rawjson.AppendUnquote(c.text, text)
			return true
		})
		if err != nil || len(c.text) == 0 {
			return err
		}
		c.msgs = append(c.msgs, `{"role":"system","content":`...)
		c.msgs = rawjson.AppendQuoteBytes(c.msgs, c.text)
		c.msgs = append(c.msgs, '}')
		return nil
	case rawjson.Null, rawjson.Invalid:
		return nil
	}
	return reqErr("must be a string or an array", "system")
}

func (c *m2cReq) messages(msgs []byte) error {
	c.err = nil
	err := rawjson.ForEachElem(msgs, func(i int, m []byte, _ rawjson.Kind) bool {
		c.err = c.message(i, m)
		return c.err == nil
	})
	if c.err != nil {
		return c.err
	}
	if err != nil {
		return reqErr("malformed", "messages")
	}
	return nil
}

// sep appends the comma between messages.
func (c *m2cReq) sep() {
	if len(c.msgs) > 0 {
		c.msgs = append(c.msgs, ',')
	}
}

func (c *m2cReq) message(i int, m []byte) error {
	role, _, _ := rawjson.Get(m, "role")
	content, kind, _ := rawjson.Get(m, "content")
	user := rawjson.StringEquals(role, "user")
	if !user && !rawjson.StringEquals(role, "assistant") {
		return reqErr("must be user or assistant", "messages[#].role", i)
	}
	switch kind {
	case rawjson.String:
		c.sep()
		if user {
			c.msgs = append(c.msgs, `{"role":"user","content":`...)
		} else {
			c.msgs = append(c.msgs, `{"role":"assistant","content":`...)
		}
		c.msgs = append(c.msgs, content...)
		c.msgs = append(c.msgs, '}')
		return nil
	case rawjson.Array:
		if user {
			return c.userBlocks(i, content)
		}
		return c.assistantBlocks(i, content)
	}
	return reqErr("must be a string or an array", "messages[#].content", i)
}

var blockKeys = []string{"type", "text", "source", "id", "name", "input", "tool_use_id", "content", "is_error", "title"}

const (
	bkType = iota
	bkText
	bkSource
	bkID
	bkName
	bkInput
	bkToolUseID
	bkContent
	bkIsError
	bkTitle
)

// userBlocks writes the tool messages of a user turn, then a user message
// with its other blocks.
func (c *m2cReq) userBlocks(i int, content []byte) error {
	c.parts, c.np = c.parts[:0], 0
	var err error
	_ = rawjson.ForEachElem(content, func(j int, b []byte, _ rawjson.Kind) bool {
		var v [10][]byte
		if rawjson.ScanTop(b, blockKeys, v[:]) != nil {
			err = reqErr("must be an object", "messages[#].content[#]", i, j)
			return false
		}
		if rawjson.StringEquals(v[bkType], "tool_result") {
			err = c.toolMessage(i, j, &v)
		} else {
			err = c.part(i, j, &v, "messages[#].content[#]")
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	if c.np > 0 {
		c.sep()
		c.msgs = append(c.msgs, `{"role":"user","content":[`...)
		c.msgs = append(c.msgs, c.parts...)
		c.msgs = append(c.msgs, "]}"...)
	}
	return nil
}

// toolMessage writes a tool_result block as a tool message; its non-text
// blocks join the pending user parts.
func (c *m2cReq) toolMessage(i, j int, v *[10][]byte) error {
	if rawjson.KindOf(v[bkToolUseID]) != rawjson.String {
		return reqErr("must be a string", "messages[#].content[#].tool_use_id", i, j)
	}
	c.text = c.text[:0]
	if rawjson.KindOf(v[bkIsError]) == rawjson.True {
		c.text = append(c.text, "Error: "...)
	}
	switch content := v[bkContent]; rawjson.KindOf(content) {
	case rawjson.String:
		c.text, _ = rawjson.AppendUnquote(c.text, content)
	case rawjson.Array:
		first := true
		var err error
		_ = rawjson.ForEachElem(content, func(k int, b []byte, _ rawjson.Kind) bool {
			var w [10][]byte
			if rawjson.ScanTop(b, blockKeys, w[:]) != nil {
				err = reqErr("must be an object", "messages[#].content[#].content[#]", i, j, k)
				return false
			}
			if rawjson.StringEquals(w[bkType], "text") && rawjson.KindOf(w[bkText]) == rawjson.String {
				if !first {
					c.text = append(c.text, '\n')
				}
				first = false
				c.text, _ = rawjson.AppendUnquote(c.text, w[bkText])
				return true
			}
			err = c.part(i, j, &w, "messages[#].content[#].content")
			return err == nil
		})
		if err != nil {
			return err
		}
	case rawjson.Null, rawjson.Invalid:
	default:
		return reqErr("must be a string or an array", "messages[#].content[#].content", i, j)
	}
	c.sep()
	c.msgs = append(c.msgs, `{"role":"tool","tool_call_id":`...)
	c.msgs = append(c.msgs, v[bkToolUseID]...)
	c.msgs = append(c.msgs, `,"content":`...)
	c.msgs = rawjson.AppendQuoteBytes(c.msgs, c.text)
	c.msgs = append(c.msgs, '}')
	return nil
}

var sourceKeys = []string{"type", "media_type", "data", "url"}

// part appends a user block as a chat content part to c.parts.
func (c *m2cReq) part(i, j int, v *[10][]byte, field string) error {
	typ := word(v[bkType], &c.tmp)
	switch string(typ) {
	case "thinking", "redacted_thinking":
		return nil
	}
	if c.np > 0 {
		c.parts = append(c.parts, ',')
	}
	switch string(typ) {
	case "text":
		if rawjson.KindOf(v[bkText]) != rawjson.String {
			return reqErr("must be a string", field+".text", i, j)
		}
		c.parts = append(c.parts, `{"type":"text","text":`...)
		c.parts = append(c.parts, v[bkText]...)
		c.parts = append(c.parts, '}')
	case "image", "document":
		var s [4][]byte
		if rawjson.ScanTop(v[bkSource], sourceKeys, s[:]) != nil {
			return reqErr("must be an object", field+".source", i, j)
		}
		st := word(s[0], &c.tmp)
		switch {
		case string(st) == "url" && string(typ) == "image" && rawjson.KindOf(s[3]) == rawjson.String:
			c.parts = append(c.parts, `{"type":"image_url","image_url":{"url":`...)
			c.parts = append(c.parts, s[3]...)
			c.parts = append(c.parts, "}}"...)
		case string(st) == "base64" && isNonEmptyStr(s[1]) && rawjson.KindOf(s[2]) == rawjson.String:
			if string(typ) == "image" {
				c.parts = append(c.parts, `{"type":"image_url","image_url":{"url":`...)
			} else {
				c.parts = append(c.parts, `{"type":"file","file":{"filename":`...)
				if rawjson.KindOf(v[bkTitle]) == rawjson.String {
					c.parts = append(c.parts, v[bkTitle]...)
				} else {
					c.parts = append(c.parts, `"document.pdf"`...)
				}
				c.parts = append(c.parts, `,"file_data":`...)
			}
			t := append(c.tmp[:0], strDataURL...)
			t, _ = rawjson.AppendUnquote(t, s[1])
			t = append(t, strBase64Marker...)
			t, _ = rawjson.AppendUnquote(t, s[2])
			c.tmp = t
			c.parts = rawjson.AppendQuoteBytes(c.parts, t)
			c.parts = append(c.parts, "}}"...)
		case string(st) == "text" && string(typ) == "document" && rawjson.KindOf(s[2]) == rawjson.String:
			c.parts = append(c.parts, `{"type":"text","text":`...)
			c.parts = append(c.parts, s[2]...)
			c.parts = append(c.parts, '}')
		default:
			return reqErr("this source has no chat equivalent", field+".source", i, j)
		}
	default:
		return reqErr("this block type has no chat equivalent", field+".type", i, j)
	}
	c.np++
	return nil
}

// assistantBlocks writes an assistant message: joined text and tool_calls.
func (c *m2cReq) assistantBlocks(i int, content []byte) error {
	c.text, c.calls, c.think = c.text[:0], c.calls[:0], c.think[:0]
	hasText := false
	var err error
	_ = rawjson.ForEachElem(content, func(j int, b []byte, _ rawjson.Kind) bool {
		var v [10][]byte
		if rawjson.ScanTop(b, blockKeys, v[:]) != nil {
			err = reqErr("must be an object", "messages[#].content[#]", i, j)
			return false
		}
		switch string(word(v[bkType], &c.tmp)) {
		case "text":
			if rawjson.KindOf(v[bkText]) != rawjson.String {
				err = reqErr("must be a string", "messages[#].content[#].text", i, j)
				return false
			}
			hasText = true
			c.text, _ = rawjson.AppendUnquote(c.text, v[bkText])
		case "tool_use":
			if rawjson.KindOf(v[bkID]) != rawjson.String || rawjson.KindOf(v[bkName]) != rawjson.String {
				err = reqErr("must have a string id and name", "messages[#].content[#]", i, j)
				return false
			}
			input := v[bkInput]
			switch rawjson.KindOf(input) {
			case rawjson.Object:
			case rawjson.Null, rawjson.Invalid:
				input = strEmptyObject
			default:
				err = reqErr("must be an object", "messages[#].content[#].input", i, j)
				return false
			}
			if len(c.calls) > 0 {
				c.calls = append(c.calls, ',')
			}
			c.calls = append(c.calls, `{"id":`...)
			c.calls = append(c.calls, v[bkID]...)
			c.calls = append(c.calls, `,"type":"function","function":{"name":`...)
			c.calls = append(c.calls, v[bkName]...)
			c.calls = append(c.calls, `,"arguments":`...)
			c.calls = rawjson.AppendQuoteBytes(c.calls, input)
			c.calls = append(c.calls, "}}"...)
		case "thinking", "redacted_thinking":
			c.thinkingBlock(b)
		case "server_tool_use", "web_search_tool_result":
			// No chat form; dropped.
		default:
			err = reqErr("this block type has no chat equivalent", "messages[#].content[#].type", i, j)
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	c.sep()
	c.msgs = append(c.msgs, `{"role":"assistant","content":`...)
	switch {
	case hasText:
		c.msgs = rawjson.AppendQuoteBytes(c.msgs, c.text)
	case len(c.calls) > 0:
		c.msgs = append(c.msgs, "null"...)
	default:
		c.msgs = append(c.msgs, `""`...)
	}
	if len(c.calls) > 0 {
		c.msgs = append(c.msgs, `,"tool_calls":[`...)
		c.msgs = append(c.msgs, c.calls...)
		c.msgs = append(c.msgs, ']')
	}
	if len(c.think) > 0 {
		c.msgs = append(c.msgs, `,"thinking_blocks":[`...)
		c.msgs = append(c.msgs, c.think...)
		c.msgs = append(c.msgs, ']')
	}
	c.msgs = append(c.msgs, '}')
	return nil
}

// thinkingBlock adds a signed thinking or a redacted_thinking block of an
// assistant turn to c.think as a thinking_blocks element, the form
// ChatRequestToMessages and sse/converse restore the block from: a
// Messages caller on a converted Claude upstream (Bedrock Converse) can
// continue a tool loop with thinking. Blocks without a signature or data
// cannot be verified upstream and are dropped.
func (c *m2cReq) thinkingBlock(b []byte) {
	var v [4][]byte // type, thinking, signature, data
	if rawjson.ScanTop(b, thinkingBlockKeys, v[:]) != nil {
		return
	}
	sep := func() {
		if len(c.think) > 0 {
			c.think = append(c.think, ',')
		}
	}
	switch {
	case rawjson.StringEquals(v[0], "thinking") && isNonEmptyStr(v[2]):
		th := v[1]
		if rawjson.KindOf(th) != rawjson.String {
			th = strEmptyString
		}
		sep()
		c.think = append(c.think, `{"type":"thinking","thinking":`...)
		c.think = append(c.think, th...)
		c.think = append(c.think, `,"signature":`...)
		c.think = append(append(c.think, v[2]...), '}')
	case rawjson.StringEquals(v[0], "redacted_thinking") && isNonEmptyStr(v[3]):
		sep()
		c.think = append(c.think, `{"type":"redacted_thinking","data":`...)
		c.think = append(append(c.think, v[3]...), '}')
	}
}

var msgToolKeys = []string{"name", "description", "input_schema", "type", "strict"}

// appendTools appends `,"tools":[…]` and returns the number of tools.
func (c *m2cReq) appendTools(dst, tools []byte) ([]byte, int, error) {
	n := 0
	var err error
	start := len(dst)
	dst = append(dst, `,"tools":[`...)
	_ = rawjson.ForEachElem(tools, func(i int, t []byte, _ rawjson.Kind) bool {
		var v [5][]byte
		if rawjson.ScanTop(t, msgToolKeys, v[:]) != nil || rawjson.KindOf(v[0]) != rawjson.String {
			err = reqErr("must have a string name", "tools[#]", i)
			return false
		}
		if v[3] != nil && !rawjson.StringEquals(v[3], "custom") {
			err = reqErr("server tools have no chat equivalent", "tools[#].type", i)
			return false
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, `{"type":"function","function":{"name":`...)
		dst = append(dst, v[0]...)
		if rawjson.KindOf(v[1]) == rawjson.String {
			dst = append(dst, `,"description":`...)
			dst = append(dst, v[1]...)
		}
		dst = append(dst, `,"parameters":`...)
		if rawjson.KindOf(v[2]) == rawjson.Object {
			dst = append(dst, v[2]...)
		} else {
			dst = append(dst, `{"type":"object","properties":{}}`...)
		}
		if k := rawjson.KindOf(v[4]); k == rawjson.True || k == rawjson.False {
			dst = append(dst, `,"strict":`...)
			dst = append(dst, v[4]...)
		}
		dst = append(dst, "}}"...)
		return true
	})
	if err != nil {
		return dst, 0, err
	}
	if n == 0 {
		return dst[:start], 0, nil
	}
	return append(dst, ']'), n, nil
}

// appendToolChoice appends the chat tool_choice (and parallel_tool_calls)
// for an Anthropic tool_choice.
func (c *m2cReq) appendToolChoice(dst, choice []byte, hasTools bool) ([]byte, error) {
	switch rawjson.KindOf(choice) {
	case rawjson.Null, rawjson.Invalid:
		return dst, nil
	case rawjson.Object:
	default:
		return dst, reqErr("must be an object", "tool_choice")
	}
	typ, _, _ := rawjson.Get(choice, "type")
	dst = append(dst, `,"tool_choice":`...)
	switch string(word(typ, &c.tmp)) {
	case "auto":
		dst = append(dst, `"auto"`...)
	case "any":
		dst = append(dst, `"required"`...)
	case "none":
		return append(dst, `"none"`...), nil
	case "tool":
		name, kind, _ := rawjson.Get(choice, "name")
		if kind != rawjson.String {
			return dst, reqErr("must be a string", "tool_choice.name")
		}
		dst = append(dst, `{"type":"function","function":{"name":`...)
		dst = append(dst, name...)
		dst = append(dst, "}}"...)
	default:
		return dst, reqErr("unknown type", "tool_choice.type")
	}
	if d, _, _ := rawjson.Get(choice, "disable_parallel_tool_use"); hasTools && rawjson.KindOf(d) == rawjson.True {
		dst = append(dst, `,"parallel_tool_calls":false`...)
	}
	return dst, nil
}
