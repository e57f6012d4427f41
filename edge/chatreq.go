package edge

import (
	"errors"

	"gw/adapters"
	"gw/sse/rawjson"
)

// chatRequest is what policy needs from a chat-completions body. Everything
// else is forwarded byte-for-byte. Slices alias the request body.
type chatRequest struct {
	Model        []byte // unquoted alias (aliases the body when it has no escapes)
	Stream       bool
	IncludeUsage bool // stream_options.include_usage
	// thinking: some message has a thinking_blocks member. It describes
	// scanned, the body scanChatRequest read.
	thinking bool
	scanned  []byte
	modelRaw []byte // the model member's raw value in scanned, when it occurs once
	modelBuf [128]byte
}

// isScanned reports whether body is the one scanChatRequest read.
func (cr *chatRequest) isScanned(body []byte) bool {
	return len(body) > 0 && len(body) == len(cr.scanned) && &body[0] == &cr.scanned[0]
}

// shape is what BuildChat may take from the scan of body.
func (cr *chatRequest) shape(body []byte) adapters.BodyShape {
	if !cr.isScanned(body) {
		return adapters.BodyShape{}
	}
	return adapters.BodyShape{NoThinkingBlocks: !cr.thinking, Model: cr.modelRaw}
}

var chatKeys = []string{"model", "stream", "stream_options", "messages"}

// chatRequestError is a caller error found while scanning the body.
type chatRequestError struct {
	code, param, msg string
}

var (
	errBodyNotJSON      = &chatRequestError{"invalid_json", "", "We could not parse the JSON body of your request. The body must be a JSON object."}
	errModelMissing     = &chatRequestError{"missing_required_parameter", "model", "you must provide a model parameter"}
	errModelNotString   = &chatRequestError{"invalid_type", "model", "model must be a string"}
	errMessagesMissing  = &chatRequestError{"missing_required_parameter", "messages", "you must provide a messages parameter"}
	errMessagesNotArray = &chatRequestError{"invalid_type", "messages", "messages must be an array"}
	errMessageNotObject = &chatRequestError{"invalid_type", "messages", "each message must be an object"}
	errStreamNotBool    = &chatRequestError{"invalid_type", "stream", "stream must be a boolean"}
)

// validRole: the lowercase roles the spec accepts; anything else, any other
// case included, is rejected before an upstream call. A role spelled with
// escapes is compared decoded, as the provider's parser would read it.
func validRole(quoted []byte, esc bool) bool {
	for _, r := range [...]string{`"user"`, `"assistant"`, `"system"`, `"developer"`, `"tool"`} {
		if rawjson.ValueIs(quoted, esc, r) {
			return true
		}
	}
	return false
}

// scanChatRequest validates body and extracts the policy fields in one
// strict cursor walk: the body is read once, the messages' roles and
// thinking_blocks members as their bytes are validated. badRole is the
// index of the first message with an invalid role, or -1. The errors keep
// their order of precedence whatever the order of the members: invalid
// JSON first, then model, stream, messages, each message.
func scanChatRequest(body []byte, out *chatRequest) (badRole int, err *chatRequestError) {
	out.thinking, out.scanned, out.modelRaw = false, nil, nil // set again below for an accepted body
	if rawjson.KindOf(body) != rawjson.Object {
		return -1, errBodyNotJSON
	}
	var c rawjson.Cursor
	c.ResetStrict(body)
	c.NoteNames()
	c.Begin()
	// Members are taken as a JSON parser takes them, the last duplicate
	// winning; msgs holds what the last "messages" member said.
	var model, stream, streamOpts []byte
	var modelSeen, modelDup, msgsSeen bool
	msgs := messagesScan{badRole: -1}
	for c.More() {
		key, esc := c.Key()
		switch {
		case rawjson.KeyIs(key, esc, `"messages"`):
			msgsSeen = true
			msgs = scanMessages(&c)
			continue
		case rawjson.KeyIs(key, esc, `"model"`):
			model, _, _ = c.Value()
			// Spelled otherwise ("Model", escapes) counts as twice:
			// BuildChat then sets it by name, which writes gw's spelling.
			modelDup, modelSeen = modelSeen || string(key) != `"model"`, true
		case rawjson.KeyIs(key, esc, `"stream"`):
			stream, _, _ = c.Value()
		case rawjson.KeyIs(key, esc, `"stream_options"`):
			streamOpts, _, _ = c.Value()
		default:
			c.Value()
		}
	}
	if c.End() != nil {
		return -1, errBodyNotJSON
	}
	if f := c.NameConflict(); f != nil {
		return -1, &chatRequestError{"invalid_request", "", rawjson.Folded(f).Error()}
	}
	switch {
	case model == nil:
		return -1, errModelMissing
	case rawjson.KindOf(model) != rawjson.String:
		return -1, errModelNotString
	}
	if hasBackslash(model) {
		m, e := rawjson.AppendUnquote(out.modelBuf[:0], model)
		if e != nil {
			return -1, errModelNotString
		}
		out.Model = m
	} else {
		out.Model = model[1 : len(model)-1]
	}
	switch rawjson.KindOf(stream) {
	case rawjson.True:
		out.Stream = true
	case rawjson.False, rawjson.Null, rawjson.Invalid:
	default:
		return -1, errStreamNotBool
	}
	if streamOpts != nil && rawjson.KindOf(streamOpts) == rawjson.Object {
		if v, _, ok := rawjson.Get(streamOpts, "include_usage"); ok && rawjson.KindOf(v) == rawjson.True {
			out.IncludeUsage = true
		}
	}
	switch {
	case !msgsSeen:
		return -1, errMessagesMissing
	case msgs.notArray:
		return -1, errMessagesNotArray
	case msgs.notObject:
		return -1, errMessageNotObject
	case msgs.badRole >= 0:
		return msgs.badRole, nil
	}
	out.thinking, out.scanned = msgs.thinking, body
	if !modelDup { // "model" once: BuildChat may replace it in place
		out.modelRaw = model
	}
	return -1, nil
}

// messagesScan is what one "messages" member says: not an array, the
// first element that is not an object or has an invalid role (whichever
// comes first), whether some message has thinking_blocks (which
// OpenAI-family adapters strip).
type messagesScan struct {
	notArray, notObject, thinking bool
	badRole                       int
}

// scanMessages reads the messages value at c (strict), every byte of it,
// noting the first problem and reading on so that the whole body is
// validated.
func scanMessages(c *rawjson.Cursor) messagesScan {
	m := messagesScan{badRole: -1}
	if c.Kind() != rawjson.Array {
		c.Value()
		m.notArray = true
		return m
	}
	c.Begin()
	for i := 0; c.More(); i++ {
		ok := !m.notObject && m.badRole < 0
		if c.Kind() != rawjson.Object {
			c.Value()
			m.notObject = m.notObject || ok
			continue
		}
		c.Begin()
		var role []byte
		var roleEsc bool
		for c.More() {
			key, esc := c.Key()
			val, _, valEsc := c.Value()
			switch {
			case rawjson.KeyIs(key, esc, `"role"`):
				role, roleEsc = val, valEsc // the last of duplicates, as a JSON parser reads it
			case rawjson.KeyIs(key, esc, `"thinking_blocks"`):
				m.thinking = true
			}
		}
		if ok && (rawjson.KindOf(role) != rawjson.String || !validRole(role, roleEsc)) {
			m.badRole = i
		}
	}
	return m
}

func hasBackslash(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

// ChatInfo is the exported view of what policy reads from a chat body (used
// by the fuzz targets and tools; the hot path uses scanChatRequest directly).
type ChatInfo struct {
	Model        string
	Stream       bool
	IncludeUsage bool
	BadRole      int // index of the first message with an invalid role, or -1
}

// ParseChatRequest validates a chat-completions body as the proxy does.
// The error text is the caller-facing message.
func ParseChatRequest(body []byte) (ChatInfo, error) {
	var cr chatRequest
	bad, err := scanChatRequest(body, &cr)
	if err != nil {
		return ChatInfo{BadRole: -1}, errors.New(err.msg)
	}
	return ChatInfo{Model: string(cr.Model), Stream: cr.Stream, IncludeUsage: cr.IncludeUsage, BadRole: bad}, nil
}
